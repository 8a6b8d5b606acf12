"""Parity at scale: the batched fp32 reference equals the one-text-at-a-time one for every task, the
streamed check gives the in-memory numbers on real runtimes' outputs, windows stay bounded, progress
says rate and time left, and a Ray cluster gives the single-process report."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from parity_oracle import oracle

from mobile_export import Backend, ExportOptions, Quant, export
from mobile_export import parity_check
from mobile_export.cli.main import main
from mobile_export.exporter.options import ParityOptions
from mobile_export.core.thresholds import Thresholds
from mobile_export.core.progress import Progress
from mobile_export.model.loading import load_checkpoint
from mobile_export.model.reference import reference_batch, reference_outputs, tokenize
from mobile_export.parity import checker as checking
from mobile_export.parity.accumulate import compare
from mobile_export.parity.checker import ArtifactCheck, Checker
from mobile_export.parity.source import ParitySource
from mobile_export.parity.texts import builtin_texts, long_text

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

DEMO = Path(__file__).resolve().parents[1] / "mobile_export" / "demo" / "model"
TASKS = ["text-classification", "token-classification", "question-answering", "fill-mask", "feature-extraction"]
OFF = Thresholds(min_agreement=0.0, min_sqnr_db=-1e9)


def _reviews(n: int) -> list[tuple[str, int]]:
    from mobile_export.demo.data import load_reviews

    return load_reviews()["test"][:n]


@pytest.mark.parametrize("task", TASKS)
def test_batched_reference_equals_one_text_at_a_time(tiny_checkpoint, task):
    loaded = load_checkpoint(str(tiny_checkpoint(task)), task)
    texts = builtin_texts()[:12] + ["", long_text(loaded.tokenizer, 100), long_text(loaded.tokenizer, 150, start=3)]
    examples = tokenize(loaded.tokenizer, texts, 160)
    assert len({ex.length for ex in examples}) > 8  # padding really happens
    single = reference_outputs(loaded.model, loaded.task, examples)
    batched = reference_batch(loaded.model, loaded.task, examples, loaded.config.pad_token_id)
    for ex, a, b in zip(examples, single, batched):
        for x, y in zip(a, b):
            assert x.shape == y.shape, ex.length
            np.testing.assert_allclose(y, x, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(x).max())))
    # and the windows the checker batches in give the same
    checker = Checker(loaded, [], 160)
    got = {}
    for window in checker.windows(examples):
        got.update(checker.reference(examples, window))
    for k, a in enumerate(single):
        for x, y in zip(a, got[k]):
            np.testing.assert_allclose(y, x, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(x).max())))


def test_windows_and_batches_stay_within_their_limits(tiny_checkpoint, monkeypatch):
    loaded = load_checkpoint(str(tiny_checkpoint("fill-mask")), "fill-mask")
    checker = Checker(loaded, [], 160)
    texts = [long_text(loaded.tokenizer, n, start=n) for n in (10, 150, 40, 90, 20, 150, 60, 5) * 4]
    examples = tokenize(loaded.tokenizer, texts, 160)
    monkeypatch.setattr(checking, "WINDOW_VALUES", 300 * checker.width)
    monkeypatch.setattr(checking, "BATCH_VALUES", 200 * checker.width)
    monkeypatch.setattr(checking, "BATCH_TOKENS", 10_000)
    seen = []
    real = checking.reference_batch

    def spy(model, task, batch, pad):
        seen.append([ex.length for ex in batch])
        return real(model, task, batch, pad)

    monkeypatch.setattr(checking, "reference_batch", spy)
    windows = list(checker.windows(examples))
    assert [k for w in windows for k in w] == list(range(len(examples)))  # every example once, in order
    for w in windows:
        values = sum(examples[k].length for k in w)
        assert values <= 300 or len(w) == 1, values
        checker.reference(examples, w)
    for lengths in seen:
        assert lengths == sorted(lengths) and (len(lengths) * max(lengths) <= 200 or len(lengths) == 1), lengths
    assert max(len(b) for b in seen) > 1  # batching happened


@pytest.fixture(scope="module")
def demo_onnx(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo-onnx") / "o"
    export(str(DEMO), out, ExportOptions(backends=(Backend.ONNX,), quant=Quant.INT8, measure_memory=False))
    data = out.parent / "reviews.tsv"
    data.write_text("".join(f"{y}\t{t}\n" for t, y in _reviews(300)), encoding="utf-8")
    return out / "model.onnx", data


@pytest.fixture(scope="module")
def demo_single_report(demo_onnx):
    """parity_check of the demo's int8 .onnx on the 300 reviews, in this process (two tests compare with it)."""
    onnx, data = demo_onnx
    return parity_check(str(DEMO), [str(onnx)], options=ParityOptions(data=str(data)))


def test_streamed_check_gives_the_in_memory_numbers_on_the_demo(demo_onnx, demo_single_report):
    """The whole streamed path (batched reference, ONNX Runtime, accumulators) against every output kept
    in memory and computed the direct way, on real reviews."""
    onnx, data = demo_onnx
    report = demo_single_report
    got = report["artifacts"][0]["parity"]
    loaded = load_checkpoint(str(DEMO), None)
    source = ParitySource.build(loaded.tokenizer, read(data, loaded), int(loaded.config.max_position_embeddings))
    items = list(source.items())
    examples = tokenize(loaded.tokenizer, [t for t, _ in items], int(loaded.config.max_position_embeddings))
    ref = reference_outputs(loaded.model, loaded.task, examples)
    from mobile_export.backends.onnx import Runner

    runner = Runner(onnx)
    act = [runner.run(ex.feeds) for ex in examples]
    lengths, labels = [ex.length for ex in examples], [y for _, y in items]
    want = oracle(loaded.task, ref, act, Thresholds.default_for(Quant.INT8), [t for t, _ in items], lengths, labels)
    p = want["pooled"]
    assert got["n_examples"] == p["examples"] == 1 + 300 + 6
    assert (got["n_decisions"], got["n_decisive"]) == (p["decisions"], p["decisive"])
    assert got["agreement"] == p["agreement"] and got["decisive_agreement"] == p["decisive_agreement"]
    assert (got["reference_accuracy"], got["accuracy"]) == want["accuracy"]
    assert got["sqnr_db"] == pytest.approx(p["sqnr_db"], abs=0.01)
    assert got["max_abs_diff"] == pytest.approx(p["max_abs_diff"], rel=1e-3)
    assert [b["examples"] for b in got["by_length"]] == [b["examples"] for b in want["buckets"]]
    assert report["parity_data"]["labelled"] == 300 and report["parity_data"]["reference_texts_per_second"] > 0
    # the same outputs through the streaming accumulator are the direct computation to the last digit
    exact = compare(loaded.task, ref, act, Thresholds.default_for(Quant.INT8), [t for t, _ in items], lengths, labels)
    assert (exact.sqnr_db, exact.mean_abs_diff, exact.min_example_sqnr_db) == \
        (p["sqnr_db"], p["mean_abs_diff"], p["min_example_sqnr_db"])


def read(path, loaded):
    from mobile_export.assets.labels import labels
    from mobile_export.parity.data import read_parity_file

    return read_parity_file(path, labels(loaded.config))


def test_small_fill_mask_streamed_equals_in_memory(tiny_checkpoint, tmp_path):
    ckpt = tiny_checkpoint("fill-mask")
    out = tmp_path / "fm"
    export(str(ckpt), out, ExportOptions(backends=(Backend.ONNX,), quant=Quant.INT8, measure_memory=False,
                                         thresholds=OFF))
    loaded = load_checkpoint(str(ckpt), None)
    source = ParitySource.build(loaded.tokenizer, None, 160)
    tally = checking.run_local(Checker(loaded, [ArtifactCheck("m", Backend.ONNX, out / "model.onnx", Quant.INT8, OFF)],
                                       160), source, Progress(enabled=False), batch_texts=7)
    got = tally.parity[0].result(OFF, source.texts_at)
    items = list(source.items())
    examples = tokenize(loaded.tokenizer, [t for t, _ in items], 160)
    ref = reference_outputs(loaded.model, loaded.task, examples)
    from mobile_export.backends.onnx import Runner

    act = [Runner(out / "model.onnx").run(ex.feeds) for ex in examples]
    want = oracle(loaded.task, ref, act, OFF, [t for t, _ in items], [ex.length for ex in examples])["pooled"]
    assert (got.n_examples, got.n_decisions, got.agreement) == (want["examples"], want["decisions"], want["agreement"])
    assert got.n_decisive == want["decisive"]
    assert got.sqnr_db == pytest.approx(want["sqnr_db"], abs=0.01)


def test_progress_says_rate_and_time_left(demo_onnx, monkeypatch):
    onnx, data = demo_onnx
    monkeypatch.setattr(checking, "PROGRESS_SECONDS", 0.0)
    stream = io.StringIO()
    parity_check(str(DEMO), [str(onnx)], options=ParityOptions(data=str(data)), progress=Progress(stream))
    lines = [x for x in stream.getvalue().splitlines() if "texts/s" in x]
    assert len(lines) >= 3, stream.getvalue()
    assert "/307 texts" in lines[0] and "left" in lines[0] and "fp32 reference" in lines[0] and "model.onnx" in lines[0]
    assert "307/307 texts" in lines[-1]


def test_ray_without_the_extra_is_a_clear_error(demo_onnx, monkeypatch, capsys):
    onnx, data = demo_onnx
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails, as without the extra
    code = main(["parity", str(DEMO), str(onnx), "--data", str(data), "--ray", "auto", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "pip install 'mobile-export[ray]'" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.slow  # a local Ray cluster and its workers' imports: about a minute and a half (make test-slow runs it)
def test_ray_cluster_gives_the_single_process_report(demo_onnx, demo_single_report, tmp_path):
    """Two Ray workers on this machine, batches merged: every count equal, every sum within rounding (the
    workers run single-threaded, so torch's and ONNX Runtime's fp32 outputs may differ in their last bits
    from this process's two-threaded ones: 5e-9 relative in SQNR here)."""
    pytest.importorskip("ray", reason="the ray extra: pip install 'mobile-export[ray]'")
    onnx, data = demo_onnx
    single = demo_single_report
    spread = parity_check(str(DEMO), [str(onnx)], options=ParityOptions(data=str(data), ray="local", ray_workers=2))
    a, b = single["artifacts"][0]["parity"], spread["artifacts"][0]["parity"]
    for key in ("n_examples", "n_decisions", "n_decisive", "near_ties", "n_labelled", "agreement",
                "decisive_agreement", "accuracy", "reference_accuracy", "lengths", "passed", "failures"):
        assert a[key] == b[key], key
    for key in ("sqnr_db", "mean_abs_diff", "max_abs_diff", "min_example_sqnr_db", "min_cosine"):
        # |diff| values are differences of outputs near 1: their last-bit changes (fp32 eps 1.2e-7) are a
        # larger share of a 0.004 mean |diff| (1.1e-6 relative on an AVX-512 VNNI host) than of the SQNR
        assert b[key] == pytest.approx(a[key], rel=1e-6, abs=1.2e-7 if key.endswith("abs_diff") else 0), key
    assert [w["text"] for w in a["worst"]] == [w["text"] for w in b["worst"]]
    for x, y in zip(a["by_length"], b["by_length"]):
        assert (x["bucket"], x["examples"], x["near_ties"]) == (y["bucket"], y["examples"], y["near_ties"])
        assert y["sqnr_db"] == pytest.approx(x["sqnr_db"], rel=1e-6)
    assert single["parity_data"]["lengths"] == spread["parity_data"]["lengths"]
    assert json.dumps(spread).count("per_example") == 1
