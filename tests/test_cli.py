"""The CLI: exit codes, one-line errors without tracebacks, end-to-end through a subprocess."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from mobile_export import ExportOptions
from mobile_export.cli.main import main
from mobile_export.reports import REPORT_SCHEMA


def _run(argv, capsys):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("mobile-export")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_no_command_is_usage_error(capsys):
    code, _, err = _run([], capsys)
    assert code == 2 and "exit codes" in err


def test_help_documents_exit_codes(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["export", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for line in ("0  ok", "2  bad input", "3  parity failed", "4  over size budget", "1  unexpected"):
        assert line in out


@pytest.mark.parametrize("command", ["export", "tokenizer", "parity", "report", "bench", "compare", "size", "run",
                                     "list"])
def test_every_command_says_its_exit_codes_and_debug(capsys, command):
    """Every command's help lists the exit codes it can end with, --debug, and what each argument is."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "exit codes:\n  0  ok" in out and "--debug" in out, out
    codes = out.split("exit codes:", 1)[1]
    assert ("3  parity failed" in codes) == (command in ("export", "parity")), codes
    assert ("4  over size budget" in codes) == (command in ("export", "size")), codes
    positional = out.split("positional arguments:", 1)[1].split("options:", 1)[0] if "positional" in out else ""
    assert all(len(line.split(None, 1)) == 2 for line in positional.strip().splitlines() if line.strip()), out


def test_argparse_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["export", "somewhere"])  # --out missing
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["export", "x", "--out", "y", "--quant", "int2"])
    assert exc.value.code == 2


@pytest.mark.parametrize("extra,match", [
    (["--task", "image-classification"], "task 'image-classification' is not supported"),
    (["--max-seq-len", "1"], "--max-seq-len 1 is too small"),
    (["--max-seq-len", "100000"], "exceeds the model's longest input"),
])
def test_bad_options_exit_2(tiny_checkpoint, tmp_path, capsys, extra, match):
    code, _, err = _run(["export", str(tiny_checkpoint()), "--out", str(tmp_path / "o"), "--quiet", *extra], capsys)
    assert code == 2
    assert match in _error_line(err)
    assert not (tmp_path / "o" / "model.pte").exists()


def test_missing_checkpoint_exit_2(tmp_path, capsys):
    code, _, err = _run(["export", str(tmp_path / "missing"), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and "no such checkpoint folder" in _error_line(err)


def test_nonempty_out_refused_without_overwrite(tiny_checkpoint, tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, err = _run(["export", str(tiny_checkpoint()), "--out", str(out), "--quiet"], capsys)
    assert code == 2 and "pass --overwrite" in _error_line(err)
    assert (out / "keep.txt").read_text() == "mine"


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_parity_failure_exit_3_and_nothing_written(tiny_checkpoint, tmp_path, capsys):
    out = tmp_path / "o"
    code, _, err = _run(["export", str(tiny_checkpoint()), "--out", str(out), "--backend", "onnx",
                         "--min-sqnr", "200", "--quiet"], capsys)
    assert code == 3
    assert "SQNR" in _error_line(err) and "< 200.0 dB" in err
    assert not (out / "model.onnx").exists() and not (out / "manifest.json").exists()
    report = json.loads((out / "report.failed.json").read_text())
    assert report["passed"] is False
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_overwrite_replaces_previous_export(tiny_checkpoint, tmp_path, capsys):
    out = tmp_path / "o"
    assert _run(["export", str(tiny_checkpoint()), "--out", str(out), "--backend", "onnx", "--quant", "fp32",
                 "--quiet"], capsys)[0] == 0
    first = (out / "model.onnx.data").read_bytes()  # the weights (the graph beside them has the same shape)
    code, stdout, _ = _run(["export", str(tiny_checkpoint(seed=1)), "--out", str(out), "--backend", "onnx",
                            "--quant", "fp32", "--overwrite", "--quiet"], capsys)
    assert code == 0 and "model.onnx" in stdout
    assert (out / "model.onnx.data").read_bytes() != first


def test_list_and_tokenizer_commands(tiny_checkpoint, tmp_path, capsys):
    code, out, _ = _run(["list"], capsys)
    assert code == 0 and "fill-mask" in out and "model.pte" in out
    code, out, _ = _run(["tokenizer", str(tiny_checkpoint(tokenizer="sentencepiece")), "--out",
                         str(tmp_path / "tok"), "--max-seq-len", "64"], capsys)
    assert code == 0
    settings = json.loads((tmp_path / "tok" / "tokenizer_settings.json").read_text())
    assert settings["kind"] == "sentencepiece" and settings["max_length"] == 64
    assert (tmp_path / "tok" / "spiece.model").stat().st_size > 0


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_end_to_end_subprocess(tiny_checkpoint, tmp_path):
    """The console entry point on a checkpoint folder it has never seen: both backends, int8."""
    ckpt = tiny_checkpoint("text-classification", "sentencepiece", seed=7, num_hidden_layers=3,
                           num_hidden_groups=1, inner_group_num=1)
    out = tmp_path / "export"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-m", "mobile_export", "export", str(ckpt), "--out", str(out),
                           "--max-seq-len", "128"], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "lowering to XNNPACK" in proc.stderr  # progress is shown
    assert "model.pte" in proc.stdout and "model.onnx" in proc.stdout
    names = {p.name for p in out.iterdir()}
    assert names == {"model.pte", "model.onnx", "model.onnx.data", "tokenizer", "labels.json", "report.json",
                     "report.md", "report.html", "manifest.json"}
    manifest = json.loads((out / "manifest.json").read_text())
    for entry in manifest["files"]:
        data = (out / entry["path"]).read_bytes()
        assert len(data) == entry["bytes"]
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    assert json.loads((out / "labels.json").read_text())["labels"] == ["negative", "neutral", "positive"]
    report = json.loads((out / "report.json").read_text())
    assert report["passed"] is True and report["schema_version"] == REPORT_SCHEMA
    assert {a["backend"] for a in report["artifacts"]} == {"executorch", "onnx"}
    lengths = report["parity_data"]["lengths"]
    assert 2 in lengths and 128 in lengths and len(lengths) >= 5
    for art in report["artifacts"]:
        assert art["parity"]["sqnr_db"] >= 20 and art["parity"]["agreement"] >= 0.99
        assert art["export_seconds"] > 0
    golden = manifest["golden"]
    assert golden and len(golden[0]["outputs"]["logits"]["values"]) == 3


def test_data_file_gives_accuracy(tiny_checkpoint, tmp_path, capsys):
    data = tmp_path / "data.tsv"
    data.write_text("positive\tthe quick brown fox\nnegative\t质量太差了\n1\tcall me Ishmael\n", encoding="utf-8")
    out = tmp_path / "o"
    code, stdout, _ = _run(["export", str(tiny_checkpoint()), "--out", str(out), "--backend", "onnx",
                            "--quant", "fp32", "--data", str(data), "--quiet"], capsys)
    assert code == 0 and "labelled texts" in stdout
    report = json.loads((out / "report.json").read_text())
    assert report["parity_data"]["labelled"] == 3 and report["parity_data"]["source"] == str(data)
    parity = report["artifacts"][0]["parity"]
    assert parity["n_labelled"] == 3
    assert parity["accuracy"] == parity["reference_accuracy"]  # fp32: same decisions
    assert parity["accuracy"] in (0.0, 1 / 3, 2 / 3, 1.0)


@pytest.mark.parametrize("content,match", [
    (b"fine line\n\xff\xfe broken\n", "not valid UTF-8 (line 2)"),
    (b"positive\tlabelled\nunlabelled\n", "1 of 2 lines have a label"),
    (b"\n\n", "has no examples"),
])
def test_bad_data_file_exit_2(tiny_checkpoint, tmp_path, capsys, content, match):
    data = tmp_path / "data.txt"
    data.write_bytes(content)
    code, _, err = _run(["export", str(tiny_checkpoint()), "--out", str(tmp_path / "o"), "--data", str(data),
                         "--quiet"], capsys)
    assert code == 2 and match in _error_line(err)


def test_over_budget_exit_4_and_nothing_written(tiny_checkpoint, tmp_path, capsys):
    out = tmp_path / "o"
    code, _, err = _run(["export", str(tiny_checkpoint()), "--out", str(out), "--backend", "onnx",
                         "--budget", "10kB", "--quiet"], capsys)
    assert code == 4
    line = _error_line(err)
    assert "over the size budget of 10,000 B" in line and "B over" in line
    assert not (out / "model.onnx").exists()
    code, _, err = _run(["export", str(tiny_checkpoint()), "--out", str(out), "--budget", "lots"], capsys)
    assert code == 2 and "cannot read budget 'lots'" in _error_line(err)


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_exports_are_byte_identical(tiny_checkpoint, shared_export, tmp_path):
    """Same checkpoint and options, two processes (fresh hash seeds): same sha256 for every file. One is this
    command in a new process; the other is the run's shared export of the same options, lowered in a test
    worker (the artifact cache's first lowering of it), so the pair costs one export, not two."""
    ckpt = tiny_checkpoint("text-classification", "wordpiece")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "mobile_export", "export", str(ckpt), "--out", str(out),
                           "--quiet", "--no-memory"], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == ""  # --quiet: not a line from the libraries either (the ONNX exporter's registry warned)
    shared = shared_export(ckpt, ExportOptions(measure_memory=False)).out
    manifests = [{f["path"]: f["sha256"] for f in json.loads((o / "manifest.json").read_text())["files"]
                  if not f["path"].startswith("report.")} for o in (out, shared)]  # reports hold timings and RSS
    assert manifests[0] == manifests[1]
    assert {"model.pte", "model.onnx", "model.onnx.data"} <= set(manifests[0])


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_flag_works_on_either_side_of_the_command(tmp_path, capsys, where):
    args = ["report", str(tmp_path / "missing")]
    argv = ["--debug", *args] if where == "before" else [*args, "--debug"]
    assert main(argv) == 2
    assert "Traceback" in capsys.readouterr().err
    assert main(args) == 2
    assert "Traceback" not in capsys.readouterr().err
