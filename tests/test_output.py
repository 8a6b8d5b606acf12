"""What the command prints is its own: an export of every format writes progress lines to stderr and its summary to
stdout, nothing else (no quantizer warning, absl / oneDNN / LiteRT line, native library output); ``run --json``
writes JSON lines only, for every format, the NPU file's included. With ``--debug`` the libraries speak again."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from mobile_export.reports import summary

pytestmark = pytest.mark.full

PROGRESS = re.compile(r"^\[\s*\d+\.\ds\] ")  # core.progress: every line the command itself writes to stderr
FORMATS = ("executorch", "onnx", "ort", "qnn", "litert")


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1", MOBILE_EXPORT_THREADS="1")
    return subprocess.run([sys.executable, "-m", "mobile_export", *args], capture_output=True, text=True, env=env,
                          timeout=900)


def _not_json(stdout: str) -> list[str]:
    """The lines of ``stdout`` a JSON-lines reader would choke on."""
    bad = []
    for line in stdout.splitlines():
        try:
            json.loads(line)
        except ValueError:
            bad.append(line)
    return bad


@pytest.fixture(scope="module")
def every_format(tiny_checkpoint, tmp_path_factory):
    """A tiny BERT classifier exported to every format by the command (its stdout and stderr kept)."""
    ckpt = tiny_checkpoint("text-classification", "wordpiece", family="bert")
    out = tmp_path_factory.mktemp("output") / "out"
    args = ["export", str(ckpt), "--out", str(out), "--no-memory"]
    proc = _cli(*args, *[a for f in FORMATS for a in ("--backend", f)])
    return out, proc


def test_an_export_prints_only_its_own_lines(every_format):
    out, proc = every_format
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert proc.stdout == summary(report) + "\n"
    foreign = [line for line in proc.stderr.splitlines() if not PROGRESS.match(line)]
    assert foreign == [], foreign


def test_run_json_is_json_lines_for_every_format(every_format):
    out, _ = every_format
    proc = _cli("run", str(out), "a good text", "a bad one", "--json")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-3000:]
    assert _not_json(proc.stdout) == []
    files = [json.loads(line)["file"] for line in proc.stdout.splitlines()]
    assert sorted(set(files)) == sorted(p.name for p in out.glob("model.*") if not p.name.endswith(".data"))
    assert len(files) == 2 * len(set(files))


def test_debug_lets_the_libraries_speak(every_format):
    """The other direction: the same runs with --debug show the runtimes' own lines (the check above would see
    them): the QNN simulator's on stdout, LiteRT's delegate line on stderr."""
    out, _ = every_format
    npu = _cli("run", str(out), "a good text", "--json", "--backend", "qnn", "--debug")
    litert = _cli("run", str(out), "a good text", "--json", "--backend", "litert", "--debug")
    assert npu.returncode == 0 and litert.returncode == 0
    assert _not_json(npu.stdout) or npu.stderr, npu.stdout
    assert "XNNPACK delegate" in litert.stderr, litert.stderr
