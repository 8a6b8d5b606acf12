"""The phone's NPU (Qualcomm Hexagon HTP) through ONNX Runtime's QNN execution provider: the fixed-length QDQ file,
checked on Qualcomm's HTP simulator with CPU fallback disabled (a session that loads runs every node on the HTP)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from mobile_export import Backend, ExportOptions, Thresholds, backends
from mobile_export.backends.qnn import htp
from mobile_export.backends.qnn.metadata import META_KEY, facts
from mobile_export.backends.qnn.options import QnnOptions
from mobile_export.cli.main import main
from mobile_export.core.errors import ArtifactLoadError, BadInputError
from mobile_export.backends.qnn.socs import SIMULATED
from mobile_export.demo.tiny import NATIVE_TOKENIZER
from mobile_export.exporter.calibration import MAX_UNKNOWN, calibration_for, calibration_texts, unknown_share
from mobile_export.parity.corpus import load_reviews
from mobile_export.parity.texts import ENGLISH
from mobile_export.parity.metrics import bucket_of
from mobile_export.run.predictor import load
from blocks import restamp
from hostile_commands import assert_refused_by_every_command

QNN = ExportOptions(backends=(Backend.QNN,), measure_memory=False, format_options={"soc": "SM8650,sm8750"})


def _export(tiny_checkpoint, shared_export, **options):
    ckpt = tiny_checkpoint("text-classification", "sentencepiece")
    opts = ExportOptions(**{**QNN.__dict__, **options})
    return ckpt, shared_export(ckpt, opts)


def test_qnn_file_runs_every_node_on_the_htp_and_keeps_the_shared_layer_once(tiny_checkpoint, shared_export):
    ckpt, result = _export(tiny_checkpoint, shared_export)
    [art] = result.artifacts
    assert art.parity.passed, art.parity.failures
    path = result.out / "model.qnn.onnx"
    model = onnx.load(str(path))
    recorded = facts(model)
    assert recorded["sequence_length"] == 128 and recorded["activations"] == "uint16"  # the default fixed length
    assert recorded["word_table"] == "uint8, a uint16 scale per row" and recorded["mask"] == -100.0
    assert recorded["calibration_texts"] == 64
    for value in model.graph.input:  # one fixed shape: [1, 128]
        assert [d.dim_value for d in value.type.tensor_type.shape.dim] == [1, 128]
    htp.session(path)  # CPU fallback disabled: any node left off the HTP fails the session here
    cov = art.parity.coverage
    assert cov.fp32_weight_matmuls == 0 and cov.quantized_weight_matmuls >= 6
    inits = [numpy_helper.to_array(t) for t in model.graph.initializer]
    assert not [a for a in inits if a.dtype == np.float32 and a.ndim == 2]  # no float weight matrix left
    size = result.report["artifacts"][0]["size"]
    assert size["sharing_preserved"] and size["duplicate_blob_bytes"] == 0, size["sharing_verdict"]
    # the simulator runs a sample: every length bucket, at most 8 texts each, none longer than the file's length
    assert art.parity.n_examples < result.report["parity_data"]["examples"]
    # the diagnosis is the file's own (per tensor, by layer), not the CPU files' dynamic-int8 emulation
    diagnosis = result.report["diagnosis"]
    assert "emulated" not in diagnosis and len(diagnosis["npu"][0]["layer_sqnr_db"]) == 2
    assert not list(result.out.glob("*.tmp"))  # the float model the diagnosis read stayed in the staging folder
    manifest = json.loads((result.out / "manifest.json").read_text())
    [entry] = [a for a in manifest["artifacts"] if a["backend"] == "qnn"]
    assert entry["calling_convention"]["shape"] == [1, 128]


def test_parity_command_passes_the_qnn_file_and_refuses_it_with_a_scaled_weight(
    tiny_checkpoint, shared_export, tmp_path, capsys
):
    """The gate both ways on the HTP: the export's file passes `parity`; with one weight's scale multiplied by 4 it
    fails (exit 3)."""
    ckpt, result = _export(tiny_checkpoint, shared_export)
    good = result.out / "model.qnn.onnx"
    assert main(["parity", str(ckpt), str(good), "--quiet"]) == 0
    model = onnx.load(str(good))
    inits = {t.name: t for t in model.graph.initializer}
    dq = next(
        n
        for n in model.graph.node
        if n.op_type == "DequantizeLinear"
        and n.input[0] in inits
        and inits[n.input[0]].data_type == onnx.TensorProto.UINT8
        and len(inits[n.input[0]].dims) == 2
        and len(inits[n.input[1]].dims) == 1
    )  # a weight matrix with per-channel scales
    scale = numpy_helper.to_array(inits[dq.input[1]]) * 4
    inits[dq.input[1]].CopyFrom(numpy_helper.from_array(scale.astype(np.float32), dq.input[1]))
    (tmp_path / "bad").mkdir()
    bad = tmp_path / "bad" / "model.qnn.onnx"
    onnx.save(model, str(bad))
    capsys.readouterr()
    assert main(["parity", str(ckpt), str(bad), "--quiet"]) == 2  # its carried identity names the change first
    assert "changed or corrupted after export" in capsys.readouterr().err
    assert main(["parity", str(ckpt), str(bad), "--quiet", "--ignore-manifest"]) == 3  # ... and the HTP's gate


@pytest.mark.full
def test_w8a8_runs_on_the_htp(tiny_checkpoint, shared_export):
    """--qnn-activations 8: 8-bit activations everywhere, still every node on the HTP (its accuracy: BENCHMARKS.md)."""
    _, result = _export(
        tiny_checkpoint,
        shared_export,
        format_options={**QNN.format_options, "qnn_activations": 8},
        thresholds=Thresholds(min_agreement=0.0, min_sqnr_db=-100.0, min_example_sqnr_db=-100.0),
    )
    path = result.out / "model.qnn.onnx"
    model = onnx.load(str(path))
    assert facts(model)["activations"] == "uint8"
    zero_points = [numpy_helper.to_array(t) for t in model.graph.initializer if t.name.endswith("_zero_point")]
    assert zero_points and not [z for z in zero_points if z.dtype == np.uint16]  # no 16-bit tensor anywhere
    htp.session(path)


def test_the_runner_pads_to_the_fixed_length_and_refuses_a_longer_text(tiny_checkpoint, shared_export):
    _, result = _export(tiny_checkpoint, shared_export)
    runner = backends.load(Backend.QNN).Runner(result.out / "model.qnn.onnx")
    short = {k: np.ones((1, 5), np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
    [logits] = runner.run(short)
    assert logits.shape == (1, 3)  # the tiny classifier's labels
    long = {k: np.ones((1, 129), np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
    with pytest.raises(BadInputError, match="at most 128 tokens"):
        runner.run(long)


def test_simulators_side_by_side_give_each_text_its_own_outputs_in_order(tiny_checkpoint, shared_export):
    """The pool the parity check spreads texts over: outputs in submission order, equal to one session's."""
    _, result = _export(tiny_checkpoint, shared_export)
    path = result.out / "model.qnn.onnx"
    module = backends.load(Backend.QNN)
    rng = np.random.default_rng(0)
    texts = [rng.integers(5, 90, size=(1, n)).astype(np.int64) for n in (3, 40, 7, 128)]
    feeds = [{"input_ids": t, "attention_mask": np.ones_like(t), "token_type_ids": np.zeros_like(t)} for t in texts]
    one = module.Runner(path)
    pool = module.Pool(path, 2)
    try:
        assert pool.length == 128
        for f in feeds:
            pool.submit(f)
        for f in feeds:
            [got] = pool.result()
            [want] = one.run(f)
            np.testing.assert_array_equal(got, want)  # the same simulator, the same text: bit for bit
            assert pool.took > 0
    finally:
        pool.close()


def test_simulators_start_from_a_script_without_a_main_guard(tiny_checkpoint, shared_export, tmp_path):
    """A user's script that calls the library at top level (no ``if __name__ == "__main__"``): the simulator
    processes must not import it again (multiprocessing's spawn did, and the pool broke)."""
    import subprocess
    import sys

    _, result = _export(tiny_checkpoint, shared_export)
    script = tmp_path / "user_script.py"
    script.write_text(
        "from mobile_export import backends, Backend\n"
        f"pool = backends.load(Backend.QNN).Pool({str(result.out / 'model.qnn.onnx')!r}, 2)\n"
        "print('length', pool.length)\n"
        "pool.close()\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0 and "length 128" in proc.stdout, proc.stderr[-2000:]


def test_npu_sample_sets_the_texts_the_simulator_runs(tiny_checkpoint, shared_export, tmp_path, capsys):
    """--npu-sample N runs the first N of each length bucket, all runs every text the file takes; the report says
    how many of which; a count below 1, or one with --ray, is refused."""
    ckpt, result = _export(tiny_checkpoint, shared_export)
    path = result.out / "model.qnn.onnx"
    runs = {}
    for sample in ("1", "all"):
        out = tmp_path / sample
        assert main(["parity", str(ckpt), str(path), "--quiet", "--npu-sample", sample, "--out", str(out)]) == 0
        report = json.loads((out / "report.json").read_text())
        sim = report["artifacts"][0]["stats"]["simulated"]
        lengths = report["parity_data"]["lengths"]
        assert (
            sim["of"] == report["parity_data"]["examples"]
            and sim["texts"] == report["artifacts"][0]["parity"]["n_examples"]
        )
        assert "none longer than the file's 128 tokens" in sim["chosen"]
        assert "HTP v75 of SM8650" in report["artifacts"][0]["stats"]["runtime_version"]
        assert "ran on QNN's x86-64 HTP simulator" in (out / "report.md").read_text()
        runs[sample] = (sim["texts"], lengths)
    assert runs["1"][0] == len({bucket_of(n) for n in runs["1"][1] if n <= 128})  # one text of each bucket
    assert runs["all"][0] > runs["1"][0]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["parity", str(ckpt), str(path), "--quiet", "--npu-sample", "0"])
    assert exit_.value.code == 2
    assert "pass a count of 1 or more, or all" in capsys.readouterr().err
    assert main(["parity", str(ckpt), str(path), "--quiet", "--npu-sample", "2", "--ray", "local"]) == 2
    assert "a Ray check runs every text on the NPU simulator" in capsys.readouterr().err


def test_bench_gives_the_simulator_time_apart_from_device_latency(tiny_checkpoint, shared_export):
    """bench on the NPU file: the simulator's time under its own key and in parentheses, no throughput or
    speed-up, and a line saying it is not the device's time."""
    from mobile_export.measure.bench import bench, table

    _, result = _export(tiny_checkpoint, shared_export)
    got = bench([str(result.out / "model.qnn.onnx")], None, [16], [1], runs=1, vocab=90, say=lambda _: None)
    [row] = got["results"]
    assert "latency_ms" not in row and row["simulator_latency_ms"]["16"]["median"] > 0
    assert row["throughput_texts_per_s"] is None and "speedup_vs_eager" not in row
    shown = table(got)
    assert "not the device's time" in shown and "(" in shown.splitlines()[2]


def test_soc_writes_a_precompiled_file_per_soc_equal_to_the_qdq_model_there(tiny_checkpoint, shared_export):
    """--soc: one EPContext file per SoC beside the QDQ model, carrying its assets and its own identity, listed in
    the manifest with that SoC's provider options, giving the QDQ model's outputs on that SoC's simulator."""
    from mobile_export import load
    from mobile_export.assets.bundle import carried
    from mobile_export.backends.qnn.socs import SOCS

    _, result = _export(tiny_checkpoint, shared_export)
    qdq = result.out / "model.qnn.onnx"
    # the diagnosis is the file's own (per tensor, by layer), not the CPU files' dynamic-int8 emulation
    diagnosis = result.report["diagnosis"]
    assert "emulated" not in diagnosis and len(diagnosis["npu"][0]["layer_sqnr_db"]) == 2
    assert not list(result.out.glob("*.tmp"))  # the float model the diagnosis read stayed in the staging folder
    manifest = json.loads((result.out / "manifest.json").read_text())
    [entry] = [a for a in manifest["artifacts"] if a["backend"] == "qnn"]
    assert [p["soc"] for p in entry["precompiled"]] == ["SM8650", "SM8750"]
    assert entry["precompiled"][1]["provider_options"]["htp_arch"] == "79"
    listed = {f["path"] for f in manifest["files"]}
    rng = np.random.default_rng(1)
    ids = rng.integers(5, 90, size=(1, 17)).astype(np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    module = backends.load(Backend.QNN)
    for name in ("SM8650", "SM8750"):
        path = result.out / f"model.{name}.qnn.onnx"
        assert path.name in listed
        model = onnx.load(str(path))
        assert [n.op_type for n in model.graph.node] == ["EPContext"]  # compiled: no QDQ graph left to compile
        assert facts(model)["compiled_for"] == name
        carried(path, str(path))  # its own identity verifies (the QDQ model's would not)
        soc = SOCS[name]
        [got] = module.Runner(path, soc=soc).run(feeds)
        [want] = module.Runner(qdq, soc=soc).run(feeds)
        np.testing.assert_array_equal(got, want)
    app = load(result.out / "model.SM8750.qnn.onnx")  # the one file alone: tokenizer and labels inside it
    assert app.backend is Backend.QNN
    size = result.report["artifacts"][0]["size"]  # the compiled files' bytes in the size section
    assert [(c["soc"], c["bytes"]) for c in size["precompiled"]] == [
        (n, (result.out / f"model.{n}.qnn.onnx").stat().st_size) for n in ("SM8650", "SM8750")
    ]


def test_precompile_refuses_a_compiled_file_that_differs_from_its_qdq_model(
    tiny_checkpoint, shared_export, tmp_path, monkeypatch
):
    """The gate's other side: a context compiled from another model (one weight's scale x4) is refused."""
    from mobile_export.backends.qnn import htp as htp_module
    from mobile_export.backends.qnn.precompile import precompile
    from mobile_export.core.errors import ExportFailedError

    _, result = _export(tiny_checkpoint, shared_export)
    good = tmp_path / "model.qnn.onnx"
    good.write_bytes((result.out / "model.qnn.onnx").read_bytes())
    model = onnx.load(str(good))
    inits = {t.name: t for t in model.graph.initializer}
    dq = next(
        n
        for n in model.graph.node
        if n.op_type == "DequantizeLinear" and n.input[0] in inits and len(inits[n.input[0]].dims) == 2
    )
    inits[dq.input[1]].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(inits[dq.input[1]]) * 4, dq.input[1]))
    other = tmp_path / "other.qnn.onnx"
    onnx.save(model, str(other))
    real = htp_module.compile_context
    monkeypatch.setattr(htp_module, "compile_context", lambda path, dest, soc: real(other, dest, soc))
    ids = np.arange(5, 45, dtype=np.int64)[None, :]
    feeds = [{"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}]
    with pytest.raises(ExportFailedError, match="gives other outputs than model.qnn.onnx"):
        precompile(good, QnnOptions(soc="SM8650"), feeds)
    monkeypatch.setattr(htp_module, "compile_context", real)
    [entry] = precompile(good, QnnOptions(soc="SM8650"), feeds)  # and the real one passes
    assert entry["file"] == "model.SM8650.qnn.onnx" and entry["checked_texts"] == 1


def test_an_unknown_soc_is_refused_with_the_known_ones(tiny_checkpoint, tmp_path, capsys):
    ckpt = tiny_checkpoint("text-classification", "sentencepiece")
    code = main(["export", str(ckpt), "--out", str(tmp_path / "o"), "--backend", "qnn", "--soc", "SM8650,SM1234"])
    err = capsys.readouterr().err
    assert code == 2 and "--soc 'SM1234' is not a SoC this tool knows" in err and "SM8750 (Snapdragon 8 Elite)" in err
    code = main(["export", str(ckpt), "--out", str(tmp_path / "o"), "--backend", "onnx", "--soc", "SM8650"])
    assert code == 2 and "--soc SM8650 shapes the .qnn.onnx; add --backend qnn" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_calibration_leaves_out_the_parity_texts(tmp_path):
    f = tmp_path / "calib.txt"
    f.write_text("positive\tone\ntwo\n\nthree\nfour\nfive\nsix\nseven\n", encoding="utf-8")
    # the texts the parity check judges are left out; short prefixes of the first join them (1, 2, 4, 8 chars)
    assert calibration_texts(str(f), ["two"], None, count=6) == ["one", "three", "o", "th"]
    with pytest.raises(BadInputError, match="no text left"):
        calibration_texts(str(f), ["one", "two", "three", "four", "five", "six", "seven"], None)
    with pytest.raises(BadInputError, match="cannot read --calibration"):
        calibration_texts(str(tmp_path / "missing.txt"), [], None)
    demo = calibration_texts(None, [], None, count=3)  # the demo corpus' training split
    assert len(demo) == 3 and all(demo)


def _tokenizer(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))


def test_default_calibration_follows_the_vocabulary(tiny_checkpoint, tmp_path):
    """The demo's Chinese reviews stay the default for a vocabulary that reads them; an English-only vocabulary gets
    the built-in English text and a note; one that reads neither is refused; a user's file that fits badly is kept
    with a note."""
    from mobile_export.demo import MODEL_DIR

    demo = calibration_for(None, [], None, _tokenizer(MODEL_DIR))
    assert demo.source.startswith("the demo's training reviews") and demo.note is None
    assert demo.unknown_share <= MAX_UNKNOWN and len(demo.texts) == 64
    english = _tokenizer(tiny_checkpoint("text-classification", "wordpiece", texts=ENGLISH))
    chosen = calibration_for(None, ENGLISH, None, english)
    assert chosen.source == "built-in English text" and chosen.unknown_share <= MAX_UNKNOWN
    assert chosen.note is not None and "(Chinese) are 9" in chosen.note, chosen.note  # 96% unknown
    assert not set(chosen.texts) & set(ENGLISH)
    digits = _tokenizer(tiny_checkpoint("text-classification", "wordpiece", texts=["0 1 2 3 4 5 6 7 8 9"]))
    with pytest.raises(BadInputError, match="mostly unknown tokens to this tokenizer .*pass --calibration FILE"):
        calibration_for(None, [], None, digits)
    reviews = tmp_path / "reviews.txt"
    reviews.write_text("\n".join(t for t, _ in load_reviews()["train"][:80]), encoding="utf-8")
    mine = calibration_for(str(reviews), [], None, english)  # the user's choice stands, with a warning
    assert mine.source == str(reviews) and mine.unknown_share > 0.5 and "unknown to the tokenizer" in (mine.note or "")
    assert unknown_share(english, ["the the the"]) == 0.0


@pytest.mark.parametrize("family,kind", [("roberta", "bpe"), ("xlm-roberta", "xlmr")])
def test_default_calibration_fits_byte_level_and_xlmr_vocabularies(tiny_checkpoint, family, kind):
    """A byte-level BPE has no unknown token: an English one reads a Chinese character as pieces of its bytes, which
    count as unknown, so it gets English text (as XLM-R's SentencePiece, whose unknowns are plain); trained on the
    reviews, either keeps them."""
    reviews = [t for t, _ in load_reviews()["train"][:2000]]
    english = _tokenizer(tiny_checkpoint("text-classification", kind, family=family, texts=ENGLISH))
    chosen = calibration_for(None, ENGLISH, None, english)
    assert chosen.source == "built-in English text" and chosen.unknown_share <= MAX_UNKNOWN, chosen
    assert unknown_share(english, reviews[:20]) > 0.3
    size = {"bpe_vocab_size": 8000} if kind == "bpe" else {"sp_vocab_size": 4000}  # room for the characters
    chinese = _tokenizer(tiny_checkpoint("text-classification", kind, family=family, texts=reviews + ENGLISH, **size))
    kept = calibration_for(None, ENGLISH, None, chinese)
    assert kept.source.startswith("the demo's training reviews") and kept.note is None, kept


def test_an_english_vocabulary_exports_to_the_npu_with_default_options(tiny_checkpoint, tmp_path, capsys):
    """An English-only WordPiece classifier (the Chinese reviews are 96% unknown tokens to it) calibrates on the
    built-in English text, says so, records it, and passes its gates on the HTP."""
    ckpt = tiny_checkpoint("text-classification", "wordpiece", texts=ENGLISH)
    assert main(["export", str(ckpt), "--out", str(tmp_path / "en"), "--backend", "qnn", "--no-memory"]) == 0
    assert "note: calibrating the NPU file on built-in English text" in capsys.readouterr().err
    recorded = facts(onnx.load(str(tmp_path / "en" / "model.qnn.onnx")))
    assert recorded["calibration_source"] == "built-in English text" and recorded["range_headroom"] == 2.0


def test_range_headroom_keeps_a_text_beyond_the_calibrated_range_from_clipping(tiny_checkpoint, tmp_path, monkeypatch):
    """Measured: this classifier gives one parity text a logit 1.7x the largest its calibration texts showed; with
    the ranges as calibrated that logit is clipped (13.6 dB, exit 3), with the default headroom it passes."""
    from mobile_export.backends.qnn import ranges

    ckpt = tiny_checkpoint("text-classification", "wordpiece")
    args = ["--backend", "qnn", "--no-memory", "--quiet"]
    assert main(["export", str(ckpt), "--out", str(tmp_path / "wide"), *args]) == 0
    monkeypatch.setitem(ranges.HEADROOM, 16, 1.0)
    assert main(["export", str(ckpt), "--out", str(tmp_path / "tight"), *args, "--repair", "off"]) == 3
    assert not (tmp_path / "tight" / "model.qnn.onnx").exists()
    # the diagnosis per tensor names the clipped logits first in the refused file, and nothing clipped in the kept one
    [tight] = json.loads((tmp_path / "tight" / "report.failed.json").read_text())["diagnosis"]["npu"]
    first = tight["named"][0]
    assert first["tensor"] == "logits" and first["clipped"] > 0.01 and first["own_db"] < 25, first
    [wide] = json.loads((tmp_path / "wide" / "report.json").read_text())["diagnosis"]["npu"]
    assert wide["clipped_tensors"] == 0 and all(t["clipped"] == 0 for t in wide["named"])
    assert "model.qnn.onnx diagnosis per tensor" in (tmp_path / "wide" / "report.md").read_text()


@pytest.mark.full
def test_the_ranges_repair_widens_what_the_diagnosis_found_clipped(tiny_checkpoint, tmp_path, monkeypatch):
    """Both ways: the file calibrated without headroom (its logits clipped) is repaired by widening the activations
    its diagnosis names, and passes; a file with nothing clipped that fails a stricter gate gets no change."""
    from mobile_export.backends.qnn import ranges

    ckpt = tiny_checkpoint("text-classification", "wordpiece")
    args = ["--backend", "qnn", "--no-memory", "--quiet"]
    strict = ["--min-sqnr", "60", "--repair", "ranges"]
    assert main(["export", str(ckpt), "--out", str(tmp_path / "strict"), *args, *strict]) == 3
    [attempt] = json.loads((tmp_path / "strict" / "report.failed.json").read_text())["repair"]["attempts"]
    assert attempt["method"] == "ranges" and attempt["note"].startswith("nothing to widen") and not attempt["artifacts"]
    monkeypatch.setitem(ranges.HEADROOM, 16, 1.0)
    assert main(["export", str(ckpt), "--out", str(tmp_path / "repaired"), *args]) == 0
    report = json.loads((tmp_path / "repaired" / "report.json").read_text())
    first = report["repair"]["attempts"][0]
    assert first["method"] == "ranges" and "logits" in first["changes"][0]["tensors"]
    [outcome] = first["artifacts"]
    assert outcome["passed"] and outcome["after_sqnr_db"] > outcome["before_sqnr_db"] + 3, outcome
    widened = facts(onnx.load(str(tmp_path / "repaired" / "model.qnn.onnx")))["widened"]
    assert "logits" in widened["tensors"] and widened["headroom"] == 4.0
    assert "wider ranges for" in (tmp_path / "repaired" / "report.md").read_text()


def test_size_of_a_precompiled_file_says_where_its_weights_are(tiny_checkpoint, shared_export, capsys):
    """`size` of model.<SoC>.qnn.onnx (in its export folder, whose report has no entry for it): its bytes, its
    context binary's, and where the breakdown is; no sharing verdict computed from a file without initializers."""
    _, result = _export(tiny_checkpoint, shared_export)
    path = result.out / "model.SM8650.qnn.onnx"
    capsys.readouterr()
    assert main(["size", str(path), "--no-memory", "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["compiled_for"] == "SM8650" and entry["bytes"] == path.stat().st_size
    assert 0 < entry["context_bytes"] < entry["bytes"] and "sharing_verdict" not in entry
    assert main(["size", str(path), "--no-memory"]) == 0
    assert "its compiled part" in capsys.readouterr().out


def test_widened_ranges_keep_zero_inside():
    from mobile_export.backends.qnn.ranges import widened

    low, high = widened(np.array([-1.5, 0.5, -100, -3.0], np.float32), np.array([2.0, 4.0, 3.0, -1.0], np.float32), 2)
    assert low.tolist() == [-3.0, 0.5, -200.0, -6.0] and high.tolist() == [4.0, 8.0, 6.0, -1.0]
    assert low.dtype == np.float32


def test_the_npu_suffix_names_its_format():
    assert backends.for_path("x/model.qnn.onnx") is Backend.QNN
    assert backends.for_path("x/model.onnx") is Backend.ONNX
    assert ".qnn.onnx" in backends.suffix_list()


def test_qnn_options_are_refused_without_the_qnn_backend(tiny_checkpoint, tmp_path, capsys):
    ckpt = tiny_checkpoint("text-classification", "sentencepiece")
    code = main(["export", str(ckpt), "--out", str(tmp_path / "o"), "--backend", "onnx", "--calibration", "x.txt"])
    err = capsys.readouterr().err
    assert code == 2 and "--calibration x.txt shapes the .qnn.onnx; add --backend qnn" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exc:
        main(["export", str(ckpt), "--out", str(tmp_path / "o"), "--backend", "qnn", "--qnn-activations", "4"])
    assert exc.value.code == 2
    code = main(
        [
            "export",
            str(ckpt),
            "--out",
            str(tmp_path / "p"),
            "--backend",
            "qnn",
            "--calibration",
            str(tmp_path / "missing.txt"),
            "--no-memory",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "cannot read --calibration" in err and not (tmp_path / "p").exists()


def test_every_family_on_the_htp_camembert_too(tiny_checkpoint, shared_export):
    """CamemBERT, the last family refused by name, exports to the NPU and passes (the family matrix runs the
    others); the registry names every family."""
    from mobile_export.model.families import FAMILIES

    assert backends.get_info(Backend.QNN).families == frozenset(FAMILIES)
    ckpt = tiny_checkpoint("token-classification", NATIVE_TOKENIZER["camembert"], family="camembert")
    result = shared_export(ckpt, ExportOptions(backends=(Backend.QNN,), measure_memory=False, max_seq_len=32))
    assert result.passed and result.report["model"]["model_type"] == "camembert"
    htp.session(result.out / "model.qnn.onnx")  # every node on the HTP


def test_a_family_a_format_does_not_take_is_refused_by_name(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    """The refusal a format's family list makes (none is left out today: a registry without camembert stands in)."""
    import dataclasses

    info = backends.BACKENDS[Backend.QNN]
    monkeypatch.setitem(backends.BACKENDS, Backend.QNN,
                        dataclasses.replace(info, families=info.families - {"camembert"}))
    ckpt = tiny_checkpoint("token-classification", NATIVE_TOKENIZER["camembert"], family="camembert")
    code = main(["export", str(ckpt), "--out", str(tmp_path / "o"), "--backend", "qnn", "--no-memory"])
    err = capsys.readouterr().err
    assert code == 2 and "backend qnn does not take camembert models yet" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_npu_size_says_what_it_measured_and_gives_sharing_verdicts_only_where_the_model_shares(
    tiny_checkpoint, shared_export, capsys
):
    """The RAM of an NPU file is the x86 simulator's process, said so and never set against the file as the device's;
    ALBERT's file (a shared layer) gets both verdicts, a BERT's (nothing shared) no memory sharing verdict."""
    _, albert = _export(tiny_checkpoint, shared_export)
    capsys.readouterr()
    assert main(["size", str(albert.out / "model.qnn.onnx")]) == 0
    out = capsys.readouterr().out
    assert "RAM of QNN's x86-64 HTP simulator's process" in out and "not the device's" in out, out
    assert "x the file" not in out and "sharing: preserved" in out
    assert "memory sharing: each of the" in out and "stored once in the file" in out
    bert = tiny_checkpoint("text-classification", "wordpiece", family="bert")
    result = shared_export(bert, ExportOptions(backends=(Backend.QNN,), measure_memory=False, max_seq_len=32))
    size = result.report["artifacts"][0]["size"]
    assert size["memory_sharing_preserved"] is None and size["shares_weights"] is False, size
    assert main(["size", str(result.out / "model.qnn.onnx"), "--no-memory"]) == 0
    out = capsys.readouterr().out
    assert "memory sharing: no verdict" in out and "sharing: none to keep" in out and "NOT" not in out, out


def _context_damaged(path: Path, dest: Path, stamp: bool = True) -> None:
    """The precompiled file with 64 bytes of its context binary zeroed, its identity stamped again (a faulty
    compile, consistent with itself: only the HTP can object), or not (changed after export)."""
    model = onnx.load(str(path))
    node = next(n for n in model.graph.node if n.op_type == "EPContext")
    attr = next(a for a in node.attribute if a.name == "ep_cache_context")
    blob = bytearray(attr.s)
    blob[len(blob) // 2 : len(blob) // 2 + 64] = bytes(64)
    attr.s = bytes(blob)
    onnx.save(model, str(dest))
    if stamp:
        restamp(dest)


def _off_the_htp(path: Path, dest: Path) -> None:
    """The QDQ model with a float Mod after its output (a node QNN's provider leaves to the CPU), restamped."""
    model = onnx.load(str(path))
    out = model.graph.output[0].name
    last = next(n for n in model.graph.node if out in n.output)
    last.output[list(last.output).index(out)] = "pre"
    model.graph.node.append(onnx.helper.make_node("Mod", ["pre", "pre"], [out], fmod=1))
    onnx.save(model, str(dest))
    restamp(dest)


def _weight_shared(path: Path, dest: Path) -> None:
    """The QDQ model compiled twice into one context with HTP weight sharing (as ONNX Runtime's weight-sharing tool
    and AI Hub write several graphs over one set of weights), the context binary embedded, named and recorded for
    SM8650, restamped: a file QNN's x86 simulator kills the process on."""
    import onnxruntime as ort

    work = dest.parent / "shared"
    work.mkdir()
    second = onnx.load(str(path))
    second.graph.name = "second"
    onnx.save(second, str(work / "second.onnx"))
    for i, source in enumerate((path, work / "second.onnx")):
        config = {"ep.context_enable": "1", "ep.context_embed_mode": "0", "ep.share_ep_contexts": "1",
                  "ep.context_file_path": str(work / f"c{i}.onnx")}
        if i:
            config["ep.stop_share_ep_contexts"] = "1"
        ort.InferenceSession(str(source), sess_options=htp._options(SIMULATED, config))
    model = onnx.load(str(work / "c1.onnx"))
    [binary] = work.glob("*.bin")
    for attr in model.graph.node[0].attribute:
        if attr.name == "ep_cache_context":
            attr.s = binary.read_bytes()
        if attr.name == "embed_mode":
            attr.i = 1
    for p in model.metadata_props:
        if p.key == META_KEY:
            p.value = json.dumps({**json.loads(p.value), "compiled_for": "SM8650"})
    onnx.save(model, str(dest))
    shutil.rmtree(work)
    restamp(dest)


# name -> (source file, the file name it is given, builder or None (a plain copy), words of the one-line refusal)
NPU_HOSTILE = {
    "context-zeroed": ("model.SM8650.qnn.onnx", "model.SM8650.qnn.onnx", _context_damaged,
                       "QNN context binary does not load on the HTP (QNN_CONTEXT_ERROR_CREATE_FROM_BINARY)"),
    "context-changed-unstamped": ("model.SM8650.qnn.onnx", "model.SM8650.qnn.onnx",
                                  lambda s, d: _context_damaged(s, d, stamp=False), "changed or corrupted after export"),
    "other-soc": ("model.SM8750.qnn.onnx", "model.SM8650.qnn.onnx", None, "compiled for SM8750, not the SM8650"),
    "qdq-named-for-a-soc": ("model.qnn.onnx", "model.SM8650.qnn.onnx", None, "records no SoC it was compiled for"),
    "node-off-the-htp": ("model.qnn.onnx", "model.qnn.onnx", _off_the_htp, "nodes the HTP does not take (Mod)"),
    "weight-shared-context": ("model.qnn.onnx", "model.SM8650.qnn.onnx", _weight_shared,
                              "crashes the HTP simulator (SIGSEGV; QNN: Shared weights buffer"),
}


EVERY_COMMAND = ("context-zeroed", "other-soc", "node-off-the-htp")


@pytest.mark.parametrize("case", sorted(NPU_HOSTILE))
def test_hostile_npu_file_is_refused_by_run_load_parity_size_and_bench(tiny_checkpoint, shared_export, case, tmp_path,
                                                                      capsys):
    ckpt, result = _export(tiny_checkpoint, shared_export)
    source, name, build, words = NPU_HOSTILE[case]
    path = tmp_path / "case" / name
    path.parent.mkdir()
    if build is None:
        shutil.copy(result.out / source, path)
    else:
        build(result.out / source, path)
    if case in EVERY_COMMAND:  # the other cases fail in the same place, before any command differs
        assert_refused_by_every_command(ckpt, path, tmp_path, capsys, words)
    code = main(["run", str(path), "a short text"])
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    with pytest.raises(ArtifactLoadError, match=re.escape(words)):
        load(path)
    assert sorted(p.name for p in path.parent.iterdir()) == [name]


def test_the_good_npu_files_pass_the_checks_the_hostile_ones_fail(tiny_checkpoint, shared_export, capsys):
    """The other direction: every file the export wrote (QDQ and precompiled) still runs and sizes."""
    _, result = _export(tiny_checkpoint, shared_export)
    for name in ("model.qnn.onnx", "model.SM8650.qnn.onnx", "model.SM8750.qnn.onnx"):
        assert main(["size", str(result.out / name), "--no-memory"]) == 0, capsys.readouterr().err
        assert main(["run", str(result.out / name), "a short text"]) == 0, capsys.readouterr().err
        capsys.readouterr()


def test_npu_lengths_one_file_one_set_of_weights_a_graph_per_length(tiny_checkpoint, shared_export, tmp_path,
                                                                    capsys):
    """--npu-lengths 16: the file keeps its 128-token graph and gains a 16-token one over the same stored weights;
    a short text runs in the short graph and gives what a one-length 16-token file gives, bit for bit; a long one
    runs in the 128-token graph; every graph passes on its own texts."""
    from mobile_export.backends.qnn.graphs import GRAPHS_KEY

    ckpt = tiny_checkpoint("text-classification", "sentencepiece")
    plain = ExportOptions(backends=(Backend.QNN,), measure_memory=False)
    multi = shared_export(ckpt, ExportOptions(**{**plain.__dict__, "format_options": {"npu_lengths": "16"}}))
    one16 = shared_export(ckpt, ExportOptions(**{**plain.__dict__, "max_seq_len": 16}))
    assert multi.passed and multi.report["artifacts"][0]["stats"]["qnn"]["lengths"] == [16, 128]
    path = multi.out / "model.qnn.onnx"
    model = onnx.load(str(path))
    assert facts(model)["lengths"] == [16, 128]
    stored = json.loads(next(p.value for p in model.metadata_props if p.key == GRAPHS_KEY))
    assert set(stored) == {"16"}
    # the short graph stores no weight of its own: every large initializer is the main graph's
    from mobile_export.backends.qnn.graphs import model_for

    short = onnx.ModelProto.FromString(model_for(model, 16, path.name))
    main_weights = {t.name: numpy_helper.to_array(t).tobytes() for t in model.graph.initializer}
    for t in short.graph.initializer:
        if numpy_helper.to_array(t).nbytes > 1024:
            assert main_weights.get(t.name) == numpy_helper.to_array(t).tobytes(), t.name
    import base64
    import zlib

    stored16 = onnx.GraphProto.FromString(zlib.decompress(base64.b64decode(stored["16"])))
    # size gives the short graph a line of its own, and a one-length file none
    embedded = backends.load(Backend.QNN).bundled
    assert backends.length_graphs(path, embedded(path)) == {16: len(stored["16"])}
    assert backends.length_graphs(one16.out / "model.qnn.onnx", embedded(one16.out / "model.qnn.onnx")) == {}
    capsys.readouterr()
    assert main(["size", str(path), "--no-memory"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "graphs of other lengths" in x)
    assert f"{len(stored['16']):,} B" in line and "(16 tokens" in line
    assert stored16.initializer and max(numpy_helper.to_array(t).nbytes for t in stored16.initializer) <= 1024
    runners = {name: load(r.out) for name, r in (("multi", multi), ("16", one16))}
    for text, length in (("good", 16), ("a short text", 16), (" ".join(["word"] * 40), 128)):
        got = runners["multi"]._outputs(text)[1]
        assert runners["multi"]._runner.last_length == length
        if length == 16:
            expected = runners["16"]._outputs(text)[1]
            assert all(np.array_equal(a, b) for a, b in zip(got, expected)), (text, got, expected)


def test_npu_lengths_refused_where_they_cannot_be(tiny_checkpoint, tmp_path, capsys):
    ckpt = tiny_checkpoint("text-classification", "sentencepiece")
    cases = {
        ("--npu-lengths", "4"): "is not a length of at least 8",
        ("--npu-lengths", "16,x"): "is not a length of at least 8",
        ("--npu-lengths", "16", "--soc", "SM8650"): "--npu-lengths with --soc is not offered: ",
        ("--npu-lengths", "256"): "longer than the file's 128 tokens",
    }
    for extra, words in cases.items():
        out = tmp_path / f"o{len(extra)}{extra[1]}"
        code = main(["export", str(ckpt), "--out", str(out), "--backend", "qnn", "--no-memory", "--quiet", *extra])
        err = capsys.readouterr().err
        assert code == 2 and words in err and "Traceback" not in err, (extra, err)
        assert not out.exists()
    code = main(["export", str(ckpt), "--out", str(tmp_path / "cpu"), "--backend", "onnx", "--npu-lengths", "16"])
    assert code == 2 and "--npu-lengths 16 shapes the .qnn.onnx" in capsys.readouterr().err


@pytest.mark.parametrize("damage,words", [("garbage", "its graph for 16 tokens is unreadable"),
                                          ("off-htp", "(16 tokens) has nodes the HTP does not take (Mod)")])
def test_a_broken_shorter_graph_refuses_the_file(tiny_checkpoint, shared_export, tmp_path, capsys, damage, words):
    """Every graph of a several-length file is loaded with it: one the HTP refuses, or unreadable, refuses the file."""
    import base64
    import zlib

    from mobile_export.backends.qnn.graphs import GRAPHS_KEY

    ckpt = tiny_checkpoint("text-classification", "sentencepiece")
    multi = shared_export(ckpt, ExportOptions(backends=(Backend.QNN,), measure_memory=False, format_options={"npu_lengths": "16"}))
    model = onnx.load(str(multi.out / "model.qnn.onnx"))
    entry = next(p for p in model.metadata_props if p.key == GRAPHS_KEY)
    if damage == "garbage":
        entry.value = json.dumps({"16": base64.b64encode(b"not a graph").decode()})
    else:
        graph = onnx.GraphProto.FromString(zlib.decompress(base64.b64decode(json.loads(entry.value)["16"])))
        out = graph.output[0].name
        last = next(n for n in graph.node if out in n.output)
        last.output[list(last.output).index(out)] = "pre"
        graph.node.append(onnx.helper.make_node("Mod", ["pre", "pre"], [out], fmod=1))
        entry.value = json.dumps({"16": base64.b64encode(zlib.compress(graph.SerializeToString())).decode()})
    path = tmp_path / "model.qnn.onnx"
    onnx.save(model, str(path))
    restamp(path)
    code = main(["run", str(path), "a short text"])
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_albert_fill_mask_npu_file_stores_its_tied_table_once(tiny_checkpoint, shared_export, capsys):
    """ALBERT's masked-LM decoder (a MatMul) reads the lookup's uint8 codes through a per-row DequantizeLinear and a
    Transpose: one table in the file, every node on the HTP, the gate passed; `size` says it is stored once."""
    ckpt = tiny_checkpoint("fill-mask", "sentencepiece")
    result = shared_export(ckpt, ExportOptions(backends=(Backend.QNN,), measure_memory=False))
    [art] = result.report["artifacts"]
    assert result.passed and "stored once" in art["stats"]["qnn"]["tied_table"], art["stats"]["qnn"]
    path = result.out / "model.qnn.onnx"
    model = onnx.load(str(path))
    tables = [t for t in model.graph.initializer if numpy_helper.to_array(t).shape[:1] == (200,)
              and numpy_helper.to_array(t).ndim == 2 and numpy_helper.to_array(t).shape[1] > 1]
    assert len(tables) == 1, [t.name for t in tables]  # the [vocab, embedding] codes, once
    htp.session(path)
    assert main(["size", str(path), "--no-memory"]) == 0
    out = capsys.readouterr().out
    assert "the tied word-embedding table is stored once for the lookup and the decoder" in out, out


def test_a_tied_table_kept_twice_at_8_bit_activations_says_why(tiny_checkpoint, shared_export, capsys):
    """The other direction: at --qnn-activations 8 the lookup's table has one scale for every row, which the
    decoder cannot read, so the file keeps two tables and `size` says the sharing is not preserved, and why."""
    ckpt = tiny_checkpoint("fill-mask", "sentencepiece")
    result = shared_export(ckpt, ExportOptions(backends=(Backend.QNN,), measure_memory=False, format_options={"qnn_activations": 8}))
    [art] = result.report["artifacts"]
    assert "tied_table" not in art["stats"]["qnn"] and art["size"]["sharing_preserved"] is False
    assert main(["size", str(result.out / "model.qnn.onnx"), "--no-memory"]) == 0
    out = capsys.readouterr().out
    assert "why: the decoder reads the lookup's codes at 16-bit activations" in out and "--qnn-activations 8" in out
