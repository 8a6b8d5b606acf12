"""A corpus of broken and hostile checkpoints, generated here from a tiny good one.

Each goes through the real command: exit 2, one clear line naming the problem (no traceback), and
nothing left in --out. Plus interrupt, unwritable and full destinations."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from mobile_export.cli.main import main

SIDE_EFFECT = Path("/tmp/mobile-export-pwned")


class _Evil:
    def __reduce__(self):
        return (os.system, (f"touch {SIDE_EFFECT}",))


def _cfg(d: Path, **change):
    cfg = json.loads((d / "config.json").read_text())
    for k, v in change.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    (d / "config.json").write_text(json.dumps(cfg))


def _tensors(d: Path, fn):
    t = load_file(str(d / "model.safetensors"))
    fn(t)
    save_file(t, str(d / "model.safetensors"))


def _first(t: dict, part: str) -> str:
    return next(k for k in sorted(t) if part in k)


def _bin_only(d: Path, obj):
    (d / "model.safetensors").unlink()
    torch.save(obj, d / "pytorch_model.bin")


CASES = {
    "no-config": (lambda d: (d / "config.json").unlink(), "no config.json"),
    "config-not-json": (lambda d: (d / "config.json").write_text("{nope"), "not valid JSON"),
    "config-a-list": (lambda d: (d / "config.json").write_text("[1, 2]"), "config.json"),
    "model-type-gpt2": (lambda d: _cfg(d, model_type="gpt2"), "model_type 'gpt2' is not supported; supported: albert"),
    "model-type-missing": (lambda d: _cfg(d, model_type=None), "model_type"),
    "unknown-architecture": (lambda d: _cfg(d, architectures=["AlbertForTimeTravel"]), "AlbertForTimeTravel"),
    "no-weights": (lambda d: (d / "model.safetensors").unlink(), "has no weights"),
    "truncated-safetensors": (lambda d: (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:5000]),
                              "cannot load the weights"),
    "garbage-safetensors": (lambda d: (d / "model.safetensors").write_bytes(os.urandom(4096)), "cannot load the weights"),
    "malicious-pickle": (lambda d: _bin_only(d, {"x": _Evil()}), "cannot load the weights"),
    "truncated-pickle": (lambda d: (_bin_only(d, load_file(str(d / "model.safetensors"))),
                                    (d / "pytorch_model.bin").write_bytes((d / "pytorch_model.bin").read_bytes()[:3000])),
                         "cannot load the weights"),
    "auto-map": (lambda d: _cfg(d, auto_map={"AutoModel": "evil.EvilModel"}), "custom code"),
    "python-file": (lambda d: (d / "modeling_evil.py").write_text("import os\nos.system('touch /tmp/x')\n"), "custom code"),
    "no-tokenizer": (lambda d: (d / "vocab.txt").unlink(), "has no tokenizer"),
    "corrupt-spiece": (lambda d: ((d / "vocab.txt").unlink(), (d / "spiece.model").write_bytes(os.urandom(2000))),
                       "cannot read the tokenizer"),
    "heads-do-not-divide": (lambda d: _cfg(d, hidden_size=30), "not divisible by num_attention_heads"),
    "zero-heads": (lambda d: _cfg(d, num_attention_heads=0), "num_attention_heads is 0"),
    "negative-vocab": (lambda d: _cfg(d, vocab_size=-5), "vocab_size is -5"),
    "string-size": (lambda d: _cfg(d, intermediate_size="big"), "intermediate_size is 'big'"),
    "groups-exceed-layers": (lambda d: _cfg(d, num_hidden_layers=2, num_hidden_groups=3), "num_hidden_groups 3 exceeds"),
    "one-position": (lambda d: _cfg(d, max_position_embeddings=1), "max_position_embeddings must be >= 2"),
    "tokenizer-bigger-than-vocab": (lambda d: _cfg(d, vocab_size=10), "vocab_size is 10"),
    "wrong-shape": (lambda d: _tensors(d, lambda t: t.__setitem__(_first(t, "word_embeddings"), torch.zeros(7, 3))),
                    "cannot load the weights"),
    "wrong-dtype": (lambda d: _tensors(d, lambda t: t.__setitem__(_first(t, "query.weight"),
                                                                   t[_first(t, "query.weight")].to(torch.int32))),
                    "query.weight"),
    "nan-weights": (lambda d: _tensors(d, lambda t: t[_first(t, "query.weight")].view(-1).__setitem__(0, float("nan"))),
                    "NaN or Inf"),
    "inf-weights": (lambda d: _tensors(d, lambda t: t[_first(t, "LayerNorm.weight")].view(-1).__setitem__(3, float("inf"))),
                    "NaN or Inf"),
    "missing-encoder-weights": (lambda d: _tensors(d, lambda t: [t.pop(k) for k in list(t) if "attention" in k]),
                                "lacks"),
    "empty-folder": (lambda d: [p.unlink() for p in list(d.iterdir())], "no config.json"),
}


def _good(tiny_checkpoint, dst: Path, kind: str = "wordpiece") -> Path:
    shutil.copytree(tiny_checkpoint(tokenizer=kind), dst)
    return dst


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_checkpoint(tiny_checkpoint, tmp_path, capsys, name):
    assert len(CASES) >= 25
    breakage, needle = CASES[name]
    ckpt = _good(tiny_checkpoint, tmp_path / "ckpt")
    SIDE_EFFECT.unlink(missing_ok=True)
    breakage(ckpt)
    out = tmp_path / "out"
    code = main(["export", str(ckpt), "--out", str(out), "--backend", "onnx", "--quant", "fp32", "--quiet",
                 "--no-memory"])
    err = capsys.readouterr().err
    lines = [l for l in err.strip().splitlines() if l.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("mobile-export: error:"), err
    assert needle in lines[0], lines[0]
    assert "Traceback" not in err
    assert not out.exists(), sorted(p.name for p in out.iterdir())  # not even the folder: the export made it
    assert not SIDE_EFFECT.exists(), "unpickling ran code"


def _final_names(out: Path) -> set[str]:
    return {p.name for p in out.iterdir()} if out.exists() else set()


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_interrupt_leaves_previous_export_intact(tiny_checkpoint, tmp_path):
    """Ctrl-C during an --overwrite export: exit 130, no staging left, the earlier export untouched."""
    ckpt = tiny_checkpoint()
    out = tmp_path / "out"
    assert main(["export", str(ckpt), "--out", str(out), "--backend", "onnx", "--quant", "fp32", "--quiet",
                 "--no-memory"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    proc = subprocess.Popen([sys.executable, "-m", "mobile_export", "export", str(ckpt), "--out", str(out),
                             "--overwrite", "--backend", "executorch", "--quant", "int8"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONHASHSEED="0"))
    deadline = time.time() + 240
    while time.time() < deadline:  # wait until it is inside the export (a staging folder exists)
        if any(p.name.startswith(".mobile-export-staging-") for p in out.iterdir()):
            break
        time.sleep(0.2)
    time.sleep(2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, err[-1000:]
    assert "interrupted" in err
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert after == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_unwritable_destination(tiny_checkpoint, tmp_path, capsys):
    target = tmp_path / "a-file"
    target.write_text("x")
    code = main(["export", str(tiny_checkpoint()), "--out", str(target / "sub"), "--quiet", "--no-memory"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write to --out" in err and len(err.strip().splitlines()) == 1
    code = main(["export", str(tiny_checkpoint()), "--out", "/proc/mobile-export-test", "--quiet", "--no-memory"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write to --out" in err


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_full_disk_is_a_clear_error(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    """ENOSPC while writing the outputs: exit 2, the reason in one line, nothing published."""
    import errno

    from mobile_export.core import fsutil

    real = fsutil.write_bytes
    calls = {"n": 0}

    def full(path, data):
        calls["n"] += 1
        if path.name == "report.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(fsutil, "write_bytes", full)
    out = tmp_path / "out"
    code = main(["export", str(tiny_checkpoint()), "--out", str(out), "--backend", "onnx", "--quant", "fp32",
                 "--quiet", "--no-memory"])
    err = capsys.readouterr().err
    assert code == 2 and "the disk is full" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()  # the folder this export made, empty once its staging is gone, is removed too


def test_wrapped_interrupt_is_recognised():
    """Ctrl-C inside a C++ call can reach Python as another exception naming KeyboardInterrupt; that is an
    interrupt (exit 130). Any other failure is not."""
    from mobile_export.core.interrupts import wrapped as _interrupted

    assert _interrupted(TypeError('empty_strided(): argument \'stride\' failed ... "KeyboardInterrupt: "'))
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as inner:
            raise RuntimeError("lowering failed") from inner
    except RuntimeError as outer:
        assert _interrupted(outer)
    assert not _interrupted(TypeError("empty_strided(): argument 'stride' must be tuple of ints"))
    assert not _interrupted(RuntimeError("out of memory"))


def test_swallowed_interrupt_still_stops_at_the_next_step():
    """A library that catches Ctrl-C and carries on (seen once mid-export) cannot make the run ignore it."""
    from mobile_export.core.interrupts import latched_interrupts
    from mobile_export.core.progress import Progress

    ran = []
    with latched_interrupts():
        with Progress(enabled=False).step("before"):
            ran.append("before")
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            pass  # what the library did
        with pytest.raises(KeyboardInterrupt):
            with Progress(enabled=False).step("after"):
                ran.append("after")
    assert ran == ["before"]
    with Progress(enabled=False).step("later run"):  # the latch is reset when the command ends
        ran.append("later run")
    assert ran == ["before", "later run"]
