"""ORT format (model.ort) for ONNX Runtime Mobile: the .onnx export, converted by ONNX Runtime itself.

The conversion is what ``python -m onnxruntime.tools.convert_onnx_models_to_ort`` does (fixed
optimization style): load the .onnx in an InferenceSession with all graph optimizations except the
x86-only NCHWc layout transformer, and save the optimized graph in ORT's flatbuffer format. The
result is then checked by parity in ONNX Runtime like any other artifact.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.choices import Quant
from ...core.errors import ArtifactLoadError, first_line
from .. import onnx as onnx_backend
from ..base import ExportStats, MatmulCoverage, Plan
from ..onnx.inspection import declared_fp32
from ..onnx.precision import exact_source

if TYPE_CHECKING:  # exported from a torch module, run without torch
    import torch

runtime_version = onnx_backend.runtime_version
Runner = onnx_backend.Runner  # ONNX Runtime reads .ort files by their extension
Options = onnx_backend.Options  # converted from an .onnx export: the .onnx's options


def files(path: Path) -> list[Path]:
    """The artifact's files: the .ort holds everything."""
    return [path]


usage = onnx_backend.usage
# ONNX Runtime's int8 modes by host (``base.HostPrecision``): the .onnx's
precision_modes = onnx_backend.precision_modes
describe_precision = onnx_backend.describe_precision
phone_precision = onnx_backend.phone_precision


def bundle(path: Path, values: dict[str, str]) -> None:
    """Not offered: the .ort is converted from the .onnx before the export bundles its assets."""
    raise ValueError("an .ort carries no bundled assets; the .onnx of the same export does")


def bundled(path: Path) -> dict[str, str]:
    """Nothing: an .ort carries no bundled assets."""
    return {}


def depth_runner(path: Path) -> None:
    """None: an ORT-format file cannot be edited to hand out its Loop's states (its .onnx can)."""
    return None


def _graphs(path: Path):
    """(graph, initializer names it can read) for the main graph and every subgraph."""
    from onnxruntime.tools.ort_format_model.ort_flatbuffers_py.fbs import InferenceSession

    session = InferenceSession.InferenceSession.GetRootAs(Path(path).read_bytes(), 0)
    stack: list[tuple[Any, frozenset[str]]] = [(session.Model().Graph(), frozenset())]
    while stack:
        graph, outer = stack.pop()
        names = outer | {graph.Initializers(i).Name().decode() for i in range(graph.InitializersLength())}
        yield graph, names
        for n in range(graph.NodesLength()):
            node = graph.Nodes(n)
            for a in range(node.AttributesLength()):
                attr = node.Attributes(a)
                if attr.G() is not None:
                    stack.append((attr.G(), names))
                stack.extend((attr.Graphs(g), names) for g in range(attr.GraphsLength()))


ORT_IDENTIFIER = b"ORTM"  # the flatbuffer file identifier of ORT-format models, at byte 4


def check(path: Path, shown: str) -> None:
    """The ORT identifier, then ONNX Runtime's own load (its flatbuffer verifier runs first) and the
    interface of an export."""
    with open(path, "rb") as f:
        head = f.read(8)
    if head[4:8] != ORT_IDENTIFIER:
        raise ArtifactLoadError(
            f"{shown} is not an ORT-format model (no '{ORT_IDENTIFIER.decode()}' identifier at "
            "byte 4); pass a .ort written by mobile-export export"
        )
    try:
        session = Runner(path).session
    except Exception as exc:
        raise ArtifactLoadError(
            f"{shown} does not load in ONNX Runtime: {first_line(exc, 200)}; export it again"
        ) from None

    def info(args):
        return [(a.name, a.type.removeprefix("tensor(").rstrip(")"), len(a.shape or [])) for a in args]

    onnx_backend.check_interface(info(session.get_inputs()), info(session.get_outputs()), shown)


def initializers(path: Path):
    """Initializer tensors (flatbuffer tables) of an ORT-format model, subgraphs included, read with
    ONNX Runtime's own schema reader."""
    for graph, _ in _graphs(path):
        for i in range(graph.InitializersLength()):
            yield graph.Initializers(i)


def coverage(path: Path, quant: Quant) -> MatmulCoverage:
    """Weight MatMuls quantized and left fp32, read from the ORT-format graph (after its optimizations)."""

    def nodes():
        for graph, constants in _graphs(path):
            for n in range(graph.NodesLength()):
                node = graph.Nodes(n)
                b = node.Inputs(1).decode() if node.InputsLength() > 1 else ""
                yield node.OpType().decode(), (node.Name() or b"").decode(), b, b in constants

    return onnx_backend.matmul_coverage(nodes(), quant, declared_fp32(_metadata(path)))


def _metadata(path: Path) -> dict[str, str]:
    """The model's metadata_props, as the .ort stores them."""
    from onnxruntime.tools.ort_format_model.ort_flatbuffers_py.fbs import InferenceSession

    model = InferenceSession.InferenceSession.GetRootAs(Path(path).read_bytes(), 0).Model()
    props = (model.MetadataProps(i) for i in range(model.MetadataPropsLength()))
    return {p.Key().decode(): p.Value().decode() for p in props}


def memory_sharing(path: Path) -> tuple[bool, str]:
    """Whether a session keeps one packed copy of each stored weight, from what the .ort stores
    (``onnx.inspection.packing_verdict``)."""
    from ..onnx.inspection import packing_verdict

    weights = {t.Name().decode(): t.RawDataAsNumpy().tobytes() for t in initializers(path) if t.RawDataLength()}
    nodes, loop = [], False
    for graph, constants in _graphs(path):
        for n in range(graph.NodesLength()):
            node = graph.Nodes(n)
            b = node.Inputs(1).decode() if node.InputsLength() > 1 else ""
            nodes.append((node.OpType().decode(), b, b in constants))
            loop = loop or node.OpType() == b"Loop"
    return packing_verdict(weights, nodes, loop)


def blobs(path: Path) -> tuple[list[bytes], int]:
    found = [t.RawDataAsNumpy().tobytes() for t in initializers(path) if t.RawDataLength()]
    return [b for b in found if len(b) > 16], 0


def int4_group_size(path: Path) -> int | None:
    """The ``block_size`` of the .ort's first 4-bit weight op, None without one."""
    for graph, _ in _graphs(path):
        for n in range(graph.NodesLength()):
            node = graph.Nodes(n)
            if node.OpType().decode() in onnx_backend.INT4_OPS:
                for a in range(node.AttributesLength()):
                    if node.Attributes(a).Name() == b"block_size":
                        return int(node.Attributes(a).I())
    return None


def stored_quant(path: Path) -> Quant:
    ops = {graph.Nodes(n).OpType().decode() for graph, _ in _graphs(path) for n in range(graph.NodesLength())}
    return onnx_backend.quant_of(ops, {t.DataType() for t in initializers(path)})


def export(wrapper: torch.nn.Module, plan: Plan, dest: Path, progress) -> ExportStats:
    """The .onnx export of ``plan`` (``Options`` is the .onnx's), converted to ORT format in ``dest``."""
    onnx_path = dest.with_name(dest.stem + ".tmp.onnx")
    try:
        stats = onnx_backend.export(wrapper, plan, onnx_path, progress)
        return convert(onnx_path, stats, dest, progress)
    finally:
        for f in onnx_backend.files(onnx_path) if onnx_path.exists() else []:
            os.unlink(f)


def convert(onnx_path: Path, stats: ExportStats, dest: Path, progress) -> ExportStats:
    """The .onnx at ``onnx_path`` (lowered with ``stats``) converted to ORT format in ``dest``: an export that
    writes both formats lowers the model once."""
    import onnxruntime as ort

    stats = ExportStats(**stats)
    stats["onnx_bytes"] = sum(f.stat().st_size for f in onnx_backend.files(onnx_path))
    with progress.step("ort: convert to ORT format (ONNX Runtime)"):
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.optimized_model_filepath = str(dest)
        so.add_session_config_entry("session.save_model_format", "ORT")
        # A .ort is not optimized again when loaded, so no session option can keep an x86 CPU without
        # VNNI from saturating its s8 weights: they are stored as u8 (the same integers; ARM64's
        # ONNX Runtime runs one kernel for u8 and s8 weights). No session option is set, so the result
        # does not depend on the converting CPU.
        ort.InferenceSession(
            exact_source(onnx_path, so, everywhere=True),
            sess_options=so,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=["NchwcTransformer"],
        )
    stats["format"] = "ORT flatbuffer (optimization level all, without NchwcTransformer; int8 weights as u8)"
    return stats
