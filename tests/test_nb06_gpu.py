"""GPU tier: notebook 06 in a `tools.suite run --device gpu` output folder (make test-gpu)."""

from __future__ import annotations

from collections.abc import Callable

NAME = "06-checkpoint-resume"
Results = Callable[[str], dict]


def _identical(result: dict) -> bool:
    """What the suite states for the GPU (torch.use_deterministic_algorithms in the script): the
    resumed run bit-identical to the uninterrupted one; the record keeps the gaps if not."""
    return result["bit_identical"] is True and result["largest_loss_gap"] == 0.0 \
        and result["largest_weight_gap"] == 0.0


def test_resumes_on_the_gpu_are_bit_identical(gpu_results: Results) -> None:
    document = gpu_results(NAME)
    results = document["results"]
    assert document["parameters"]["device"] == "gpu"
    for name in ("resume", "capture_resume"):
        assert results[name]["signal"] == "SIGKILL" and _identical(results[name]), (name, results[name])
    assert _identical(results["resume"]["fallback"])
    assert results["resume"]["corrupt_checkpoint_rejected"] is True
    assert all(case["refused"] for name, case in results["bad_inputs"].items()
               if name != "truncated_newest")


def test_the_ranks_use_one_gpu_each_when_there_are_enough(gpu_results: Results) -> None:
    document = gpu_results(NAME)
    dist = document["results"]["distributed"]
    enough = document["machine"]["gpu_count"] >= document["parameters"]["processes"]
    assert dist["device"] == ("gpu" if enough else "cpu")
    assert _identical(dist)
    assert dist["distinct_reader_states"] == document["parameters"]["processes"]
