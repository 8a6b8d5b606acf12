"""A process that only runs artifacts imports the runtimes, not the compilers: ExecuTorch's runtime without
``executorch.exir`` (its package loads the whole compiler), ONNX Runtime without torch. The outputs are the
ones of a process that has both, and an export after it still finds the whole compiler."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from mobile_export import Backend, ExportOptions, Quant

# In a fresh process: the runtime as the measurements import it, one run, then (``then-compiler``) the compiler.
_CHILD = """
import json, sys
import numpy as np
from pathlib import Path
if sys.argv[4] == "compiler-first":
    import executorch.exir
from mobile_export.measure.child import import_runtime
module = import_runtime(sys.argv[1])
loaded = {name: name in sys.modules for name in ("torch", "executorch.exir")}
ids = np.array([[2, 40, 41, 42, 43, 3]], np.int64)
out = module.Runner(Path(sys.argv[2])).run({"input_ids": ids, "attention_mask": np.ones_like(ids),
                                            "token_type_ids": np.zeros_like(ids)})[0]
np.save(sys.argv[3], out)
if sys.argv[4] == "then-compiler":
    from executorch.exir import to_edge_transform_and_lower
    from executorch.exir._warnings import experimental
    loaded["compiler"] = callable(to_edge_transform_and_lower) and callable(experimental)
print(json.dumps(loaded))
"""


@pytest.fixture(scope="module")
def artifacts(tiny_checkpoint, shared_export):
    return shared_export(tiny_checkpoint(), ExportOptions(backends=(Backend.EXECUTORCH, Backend.ONNX),
                                                          quant=Quant.INT8, measure_memory=False)).out


def _child(backend: str, path, tmp_path, order: str) -> tuple[dict, np.ndarray]:
    saved = tmp_path / f"{backend}-{order}.npy"
    proc = subprocess.run([sys.executable, "-c", _CHILD, backend, str(path), str(saved), order],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), np.load(saved)


def test_executorch_runs_without_its_compiler_and_the_compiler_still_loads_after(artifacts, tmp_path):
    loaded, alone = _child("executorch", artifacts / "model.pte", tmp_path, "then-compiler")
    assert loaded == {"torch": True, "executorch.exir": False, "compiler": True}
    # the other order: a process that exports first keeps its compiler, and runs the same numbers
    loaded, after = _child("executorch", artifacts / "model.pte", tmp_path, "compiler-first")
    assert loaded == {"torch": True, "executorch.exir": True}
    np.testing.assert_array_equal(alone, after)


def test_onnx_runtime_runs_without_torch(artifacts, tmp_path):
    from mobile_export.backends.onnx import Runner

    loaded, alone = _child("onnx", artifacts / "model.onnx", tmp_path, "plain")
    assert loaded == {"torch": False, "executorch.exir": False}
    ids = np.array([[2, 40, 41, 42, 43, 3]], np.int64)
    here = Runner(artifacts / "model.onnx").run({"input_ids": ids, "attention_mask": np.ones_like(ids),
                                                  "token_type_ids": np.zeros_like(ids)})[0]
    np.testing.assert_array_equal(alone, here)  # the same session rules in a process with torch


_LOAD = """
import json, sys
import mobile_export
predictor = mobile_export.load(sys.argv[1], backend=sys.argv[2])
result = predictor("a good phone").to_json()
print(json.dumps({"result": result, "loaded": {name: name in sys.modules for name in sys.argv[3:]}}))
"""
_NOT_LOADED = {"onnx": ("torch", "transformers", "executorch.exir", "torchao", "optimum"),
               "executorch": ("transformers", "executorch.exir", "torchao")}


@pytest.mark.parametrize("given", ["folder", "file"])
@pytest.mark.parametrize("backend", ["onnx", "executorch"])
def test_load_imports_no_compiler_in_a_fresh_process(artifacts, backend, given):
    """``mobile_export.load`` of an export folder, or of one artifact alone (reading the assets it carries): the .onnx
    path imports neither torch, transformers nor any compiler, the .pte path neither transformers nor ExecuTorch's
    compiler (nor torchao, whose import warns): the tokenizer is read with ``tokenizers`` alone; nothing on stderr; the scores are those of this process, which has everything loaded."""
    from mobile_export import load

    name = {"onnx": "model.onnx", "executorch": "model.pte"}[backend]
    source = artifacts if given == "folder" else artifacts / name
    proc = subprocess.run([sys.executable, "-c", _LOAD, str(source), backend, *_NOT_LOADED[backend]],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == "", proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not any(got["loaded"].values()), got["loaded"]
    here = load(artifacts, backend=backend)("a good phone").to_json()
    assert got["result"]["label"] == here["label"]
    assert got["result"]["scores"] == pytest.approx(here["scores"], abs=1e-6)


def test_the_npu_format_loads_without_torch():
    """The NPU file's runner, checks and the simulators' worker processes import its package: torch (2 s of every
    simulator's start, measured) stays out of it; only the lowering imports torch, when it runs."""
    code = "import sys; import mobile_export.backends.qnn, mobile_export.backends.qnn.runner; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", (proc.stdout, proc.stderr[-2000:])
