"""ONNX Runtime's saturating x86 kernel, on every host: the same artifacts run on qemu's Haswell CPU (AVX2,
no VNNI), where ONNX Runtime's u8 x s8 GEMM adds pairs of products into 16 bits and saturates.

The project's session must choose the non-saturating mode there by itself, score measurably higher than
ONNX Runtime's default session, and compute what a VNNI or ARM64 CPU computes. The model is a tiny
random ALBERT: its per-channel int8 weights span the whole s8 range, so u8 x s8 pairs exceed 16 bits.
Needs qemu-x86_64 from the prepared emulation environment (``make arm64-env``); ``make test-arm64`` runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mobile_export import Backend, ExportOptions, Quant, Thresholds, export

pytestmark = pytest.mark.x86_emulated

# Runs under qemu-x86_64 -cpu Haswell with this machine's own Python and packages.
_CHILD = """
import json, sys
import numpy as np
from mobile_export.backends.onnx import Runner
from mobile_export.backends.onnx.precision import Precision, precision_for
from mobile_export.core.host import this_host
feeds = np.load(sys.argv[1])
out, results = {}, {"host": this_host().describe(), "mode": precision_for().value}
for path in sys.argv[3:]:
    for mode in (None, Precision.NATIVE):
        runner = Runner(path, threads=1, precision=mode)
        for i in range(int(feeds["n"])):
            x = {k: feeds[f"{i}/{k}"] for k in ("input_ids", "attention_mask", "token_type_ids")}
            out[f"{path}|{mode.value if mode else 'project'}|{i}"] = runner.run(x)[0]
np.savez(sys.argv[2], **out)
print(json.dumps(results))
"""


def _qemu() -> Path:
    from mobile_export.parity.arm64.env import default_dir, locate

    env = locate(default_dir())  # a missing environment is an error naming `make arm64-env`, not a skip
    assert env.qemu_x86_64.is_file(), f"{env.qemu_x86_64} is missing; prepare the environment again (make arm64-env)"
    return env.qemu_x86_64


def _sqnr(ref: list[np.ndarray], got: list[np.ndarray]) -> float:
    num = sum(float(np.sum(r.astype(np.float64) ** 2)) for r in ref)
    den = sum(float(np.sum((r.astype(np.float64) - g) ** 2)) for r, g in zip(ref, got))
    return 10 * np.log10(num / den)


def test_saturating_host_gets_the_exact_session(tiny_checkpoint, tmp_path):
    from mobile_export.backends.onnx import Runner
    from mobile_export.backends.onnx.precision import precision_for
    from mobile_export.model.loading import load_checkpoint
    from mobile_export.model.reference import reference_outputs, tokenize
    from mobile_export.parity.texts import builtin_texts

    ckpt = tiny_checkpoint("text-classification")
    out = tmp_path / "o"
    # the host's own check passes here on any CPU; exported with loose limits so the test also runs where it
    # would not, and judges the emulated runs itself below
    export(ckpt, out, ExportOptions(backends=(Backend.ONNX, Backend.ORT), quant=Quant.INT8, measure_memory=False,
                                    thresholds=Thresholds(min_sqnr_db=0.0, min_agreement=0.0)))
    loaded = load_checkpoint(ckpt)
    examples = tokenize(loaded.tokenizer, builtin_texts()[:24], 64)
    fp32 = [r[0] for r in reference_outputs(loaded.model, loaded.task, examples)]
    feeds = {f"{i}/{k}": v for i, ex in enumerate(examples) for k, v in ex.feeds.items()}
    np.savez(tmp_path / "feeds.npz", n=np.array(len(examples)), **feeds)
    paths = [str(out / "model.onnx"), str(out / "model.ort")]
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE",)}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run(
        [str(_qemu()), "-cpu", "Haswell", sys.executable, "-c", _CHILD, str(tmp_path / "feeds.npz"),
         str(tmp_path / "emulated.npz"), *paths],
        capture_output=True, text=True, timeout=1200, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "avx2" in info["host"]["int8_features"] and "avx512_vnni" not in info["host"]["int8_features"], info
    assert info["mode"] == "u8u8", info  # the project chose the non-saturating mode by itself
    got = np.load(tmp_path / "emulated.npz")
    limit = Thresholds.default_for(Quant.INT8).min_sqnr_db
    for path in paths:
        here = [Runner(Path(path)).run(ex.feeds)[0] for ex in examples]  # this host, the project's session
        project = [got[f"{path}|project|{i}"] for i in range(len(examples))]
        default = [got[f"{path}|u8s8|{i}"] for i in range(len(examples))]
        s_here, s_project, s_default = _sqnr(fp32, here), _sqnr(fp32, project), _sqnr(fp32, default)
        print(f"\n{Path(path).name}: SQNR vs fp32 on emulated Haswell: project {s_project:.1f} dB, "
              f"ONNX Runtime default {s_default:.1f} dB; this host ({precision_for().value}) {s_here:.1f} dB")
        assert abs(s_project - s_here) <= 0.5, (s_project, s_here)  # what a VNNI or ARM64 CPU computes
        assert s_project >= limit, s_project  # the default int8 gate passes the good artifact
        scale = float(np.sqrt(np.mean(np.concatenate(fp32) ** 2)))
        assert max(float(np.max(np.abs(a - b))) for a, b in zip(here, project)) <= 0.02 * scale
        if path.endswith(".onnx"):  # ONNX Runtime's own session saturates on this file, and it shows
            assert s_default <= s_project - 6.0, (s_default, s_project)
