"""helpers.gpu_profile on a hand-made chrome trace: kernels split by stream, copies apart, time
that runs at once counted once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.gpu_profile import busiest_stream
from helpers.gpu_profile import gpu_time
from helpers.gpu_profile import gpu_work
from helpers.gpu_profile import kernel_time_by_stream


def _event(name: str, cat: str, stream: int, ts: float, dur: float) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur,
            "args": {"stream": stream, "device": 0}}


TRACE = {"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "ts": 0, "dur": 5000},  # not GPU work
    _event("sm90_conv_fprop", "kernel", 7, 1000, 2000),  # model: 1.0-3.0 ms
    _event("at::native::elementwise", "kernel", 7, 2500, 1000),  # model again, 2.5-3.5 ms
    _event("dali::kernels::ResampleHorz", "kernel", 21, 3000, 1000),  # loader: 3.0-4.0 ms
    _event("dali::kernels::SliceFlipNormalize", "kernel", 22, 3200, 300),  # loader, at once
    _event("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", 21, 5000, 500),  # 5.0-5.5 ms
    {"ph": "i", "cat": "kernel", "name": "marker", "ts": 6000},  # not a span
]}


def test_gpu_work_reads_kernels_and_copies_only(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(TRACE))
    work = gpu_work(path)
    assert [(w.kind, w.stream) for w in work] == [("kernel", 7), ("kernel", 7), ("kernel", 21),
                                                 ("kernel", 22), ("copy", 21)]
    assert set(kernel_time_by_stream(work)) == {7, 21, 22}  # the streams that ran kernels


def test_gpu_time_splits_the_model_from_the_loader_by_stream() -> None:
    t = gpu_time(gpu_work(TRACE), model_streams={7})
    assert t.span_ms == pytest.approx(4.5)  # 1.0 to 5.5 ms
    assert t.model_ms == pytest.approx(2.5)  # 1.0-3.5, the overlap of its two kernels once
    assert t.loader_ms == pytest.approx(1.0)  # 3.0-4.0, the second kernel inside it
    assert t.copies_ms == pytest.approx(0.5)
    assert t.overlap_ms == pytest.approx(0.5)  # 3.0-3.5
    assert t.busy_ms == pytest.approx(3.5) and t.idle_ms == pytest.approx(1.0)
    assert t.loader_kernels == {"dali::kernels::ResampleHorz": 1, "dali::kernels::SliceFlipNormalize": 1}
    assert t.row(steps=2)["model kernels ms/step"] == 1.25
    alone = gpu_time(gpu_work(TRACE), model_streams={7, 21, 22})  # every stream the model's
    assert alone.loader_ms == 0 and alone.overlap_ms == 0


def test_a_trace_without_gpu_work_says_what_to_check() -> None:
    with pytest.raises(ValueError, match="ProfilerActivity.CUDA"):
        gpu_time(gpu_work({"traceEvents": [TRACE["traceEvents"][0]]}), {7})


def test_the_busiest_stream_of_training_alone_is_the_models() -> None:
    work = gpu_work(TRACE)
    assert kernel_time_by_stream(work) == pytest.approx({7: 3.0, 21: 1.0, 22: 0.3})
    assert busiest_stream(work) == 7
    dali_busiest = [w for w in work if w.stream != 7]
    with pytest.raises(ValueError, match="let the loaders settle"):
        busiest_stream(dali_busiest)
    with pytest.raises(ValueError, match="no kernel"):
        busiest_stream([w for w in work if w.kind == "copy"])


def test_profile_epochs_takes_the_models_stream_from_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    import helpers.gpu_profile as gp

    alone = {"traceEvents": [e for e in TRACE["traceEvents"] if e.get("args", {}).get("stream") == 7]}
    traces = iter([alone, TRACE])
    settled = []

    def fake_profiled(run, trace: Path):
        run()
        trace.write_text(json.dumps(next(traces)))

    monkeypatch.setattr(gp, "profiled", fake_profiled)
    ran = []
    epochs = {"alone": lambda: ran.append("alone"), "fed": lambda: ran.append("fed")}
    split, by_stream = gp.profile_epochs(epochs, "alone", settle=lambda: settled.append(1), settle_s=0)
    assert ran == ["alone", "fed"] and len(settled) == 2
    assert by_stream == pytest.approx({7: 3.0})
    assert split["alone"].loader_ms == 0 and split["fed"].loader_ms == pytest.approx(1.0)
    sentence = gp.split_sentence(split["alone"], split["fed"], steps=2)
    assert "the loader's 0.50 ms" in sentence and "`dali::kernels::ResampleHorz` (1x)" in sentence
    with pytest.raises(ValueError, match="reference 'ceiling' is none of the epochs"):
        gp.profile_epochs({"alone": lambda: None}, "ceiling", settle_s=0)


def test_kernel_names_keep_what_tells_two_instances_apart() -> None:
    from helpers.gpu_profile import kernel_name

    a = ("void dali::kernels::resampling::BatchedSeparableResampleKernel<unsigned char, float>"
         "(int, dali::kernels::resampling::SampleDesc<2> const*, dali::kernels::BlockDesc<2> const*)")
    b = a.replace("<unsigned char, float>", "<float, float>")
    assert kernel_name(a) == "dali::kernels::resampling::BatchedSeparableResampleKernel<unsigned char, float>"
    assert kernel_name(a) != kernel_name(b)
    assert kernel_name("k" * 200).endswith("…") and len(kernel_name("k" * 200)) == 120
