"""GPU tier: notebook 06 in a `tools.suite run --device gpu` output folder (make test-gpu)."""

from __future__ import annotations

from collections.abc import Callable

NAME = "06-checkpoint-resume"
Results = Callable[[str], dict]


def _close(result: dict, tolerance: float) -> bool:
    return result["bit_identical"] or max(result["largest_loss_gap"],
                                          result["largest_weight_gap"]) <= tolerance


def test_resumes_on_the_gpu_match_the_uninterrupted_runs(gpu_results: Results) -> None:
    document = gpu_results(NAME)
    results, tolerance = document["results"], document["results"]["tolerance"]
    assert document["parameters"]["device"] == "gpu" and 0 < tolerance <= 1e-4
    for name in ("resume", "capture_resume"):
        assert results[name]["signal"] == "SIGKILL" and _close(results[name], tolerance), name
    assert _close(results["resume"]["fallback"], tolerance)
    assert results["resume"]["corrupt_checkpoint_rejected"] is True
    assert all(case["refused"] for name, case in results["bad_inputs"].items()
               if name != "truncated_newest")


def test_the_ranks_use_one_gpu_each_when_there_are_enough(gpu_results: Results) -> None:
    document = gpu_results(NAME)
    dist = document["results"]["distributed"]
    enough = document["machine"]["gpu_count"] >= document["parameters"]["processes"]
    assert dist["device"] == ("gpu" if enough else "cpu")
    tolerance = document["results"]["tolerance"] if dist["device"] == "gpu" else 0.0
    assert _close(dist, tolerance)
    assert dist["distinct_reader_states"] == document["parameters"]["processes"]
