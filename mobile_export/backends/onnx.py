"""ONNX (opset 18) for ONNX Runtime: export with the torch exporter, int8 via ORT dynamic quantization."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from ..config import DEFAULT_INT4_GROUP_SIZE, Quant
from ..errors import ArtifactLoadError
from ..reference import INPUT_NAMES, not_an_export

OPSET = 18


def RUNTIME_VERSION() -> str:
    import onnxruntime

    return onnxruntime.__version__


DATA_SUFFIX = ".data"  # model.onnx -> model.onnx.data
_ALIGN = 4096  # external tensors start on page boundaries, so ONNX Runtime can map them


def _to_onnx(module, args, dynamic_shapes, input_names, output_names):
    from quantize.onnx_dynamic import dedupe_initializers

    prog = torch.onnx.export(module, args, dynamo=True, dynamic_shapes=dynamic_shapes, opset_version=OPSET,
                             input_names=input_names, output_names=output_names, external_data=False,
                             optimize=True, verbose=False)
    model = prog.model_proto
    dedupe_initializers(model)
    if model.functions:
        raise RuntimeError(f"the exporter left local functions {[f.name for f in model.functions]}")
    return model


def _prefixed(graph, prefix: str, keep: dict[str, str]):
    """Rename every node, value and initializer of ``graph`` with ``prefix``, except the names in ``keep``."""
    def name(n: str) -> str:
        return n if not n else keep.get(n, prefix + n)

    for node in graph.node:
        node.name = prefix + node.name
        node.input[:] = [name(n) for n in node.input]
        node.output[:] = [name(n) for n in node.output]
    for t in graph.initializer:
        t.name = name(t.name)
    for v in [*graph.input, *graph.output, *graph.value_info]:
        v.name = name(v.name)
    return graph


LOOP_NODE = "encoder/shared_layer_loop"


def _layer_loop_model(wrapper, example, dynamic_shapes, layers: int):
    """One ONNX graph: embed -> Loop(layers) over ALBERT's shared layer group -> head. The layer's
    weights are stored once (in the main graph, see ``_hoist_loop_weights``) and read by the Loop
    body, so ONNX Runtime builds and prepacks that layer once."""
    from onnx import TensorProto, helper

    from ..stages import cut

    embed, groups, head = cut(wrapper.model, tuple(wrapper.output_names), batch_one=False)
    layer = groups[0]
    dims = dynamic_shapes["input_ids"]
    batch, seq = dims[0], dims[1]
    with torch.no_grad():
        hidden, mask = embed(*example)
    outputs = list(wrapper.output_names)
    e = _to_onnx(embed, example, dynamic_shapes, list(INPUT_NAMES), ["hidden", "mask"])
    m = _to_onnx(layer, (hidden, mask), {"hidden": {0: batch, 1: seq}, "mask": {0: batch, 3: seq}},
                 ["hidden", "mask"], ["hidden_out"])
    h = _to_onnx(head, (hidden,), {"hidden": {0: batch, 1: seq}}, ["hidden"], outputs)
    ge = _prefixed(e.graph, "embed/", {n: n for n in INPUT_NAMES})
    gl = _prefixed(m.graph, "layer/", {"hidden": "layer/hidden_in", "mask": "embed/mask",
                                       "hidden_out": "layer/hidden_out"})
    gh = _prefixed(h.graph, "head/", {"hidden": "encoder/hidden", **{n: n for n in outputs}})
    body = helper.make_graph(
        [*gl.node, helper.make_node("Identity", ["layer/cond_in"], ["layer/cond_out"], name="layer/cond")],
        "albert_shared_layer",
        [helper.make_tensor_value_info("layer/iteration", TensorProto.INT64, []),
         helper.make_tensor_value_info("layer/cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("layer/hidden_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("layer/cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("layer/hidden_out", TensorProto.FLOAT, None)],
        initializer=list(gl.initializer))
    loop = helper.make_node("Loop", ["encoder/layers", "encoder/true", "embed/hidden"], ["encoder/hidden"],
                            name=LOOP_NODE, body=body)
    graph = helper.make_graph(
        [*ge.node, loop, *gh.node], "albert", list(ge.input), list(gh.output),
        initializer=[*ge.initializer, *gh.initializer,
                     helper.make_tensor("encoder/layers", TensorProto.INT64, [], [layers]),
                     helper.make_tensor("encoder/true", TensorProto.BOOL, [], [True])])
    model = helper.make_model(graph, opset_imports=list(e.opset_import), producer_name="mobile-export")
    model.ir_version = e.ir_version
    return model


def _hoist_loop_weights(model) -> None:
    """Move the Loop body's weights into the main graph (the body reads them from the outer scope).

    ONNX Runtime prepacks a weight for its kernel and then releases the stored copy, but only for
    initializers of the main graph: left in the body, the shared layer's int8 weights stayed
    resident beside their packed copy (albert-base: +7.0 MiB mapped, +1.9 MiB private)."""
    taken = {i.name for i in model.graph.initializer} | {n for node in model.graph.node for n in node.output}
    for node in model.graph.node:
        if node.op_type != "Loop":
            continue
        body = next(a.g for a in node.attribute if a.name == "body")
        moving = [t for t in body.initializer if t.name not in taken]
        if len(moving) != len(body.initializer):
            continue  # a name clash: leave this body as it is (correct, only less lean)
        model.graph.initializer.extend(moving)
        del body.initializer[:]


def _externalize(path: Path) -> tuple[int, int]:
    """Lay the model out for loading (``_hoist_loop_weights``, ``share_transposed_tables``: returns the
    bytes the latter saved, and the model's opset), then move every tensor of ``path`` (subgraphs included) of 1 KiB or more
    into ``path`` + ``.data``, page-aligned: ONNX Runtime then maps the weights instead of holding the parsed protobuf and a
    copy of each (albert-base int8: ~10 MiB less RAM)."""
    import onnx
    from onnx.external_data_helper import set_external_data

    from quantize.onnx_dynamic import graphs, share_transposed_tables

    model = onnx.load(str(path))
    _hoist_loop_weights(model)
    shared = share_transposed_tables(model)
    data_name = path.name + DATA_SUFFIX
    tmp = path.with_name(data_name + ".tmp")
    offset = 0
    with open(tmp, "wb") as f:
        for graph, _ in graphs(model.graph):
            for t in graph.initializer:
                if t.HasField("raw_data") and len(t.raw_data) >= 1024:
                    pad = (-offset) % _ALIGN
                    f.write(b"\0" * pad)
                    offset += pad
                    f.write(t.raw_data)
                    set_external_data(t, data_name, offset=offset, length=len(t.raw_data))
                    offset += len(t.raw_data)
                    t.ClearField("raw_data")
                    t.data_location = onnx.TensorProto.EXTERNAL
    os.replace(tmp, path.with_name(data_name))
    onnx.save(model, str(path))
    return shared, next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), OPSET)


def files(path: Path) -> list[Path]:
    """The artifact's files: the .onnx and, when it has one, its external data beside it."""
    data = path.with_name(path.name + DATA_SUFFIX)
    return [path, data] if data.is_file() else [path]


def export(wrapper: torch.nn.Module, example: tuple[torch.Tensor, ...], dynamic_shapes: dict,
           quant: Quant, dest: Path, progress, group_size: int | None = None, int4_kernel: str = "nbits") -> dict:
    """Export ``wrapper`` to ``dest`` (.onnx with its weights in ``dest`` + ``.data``); returns stats.

    ALBERT with one layer group (every released checkpoint) is written as a Loop over the shared
    layer; several layer groups are written unrolled.
    """
    import onnx

    from quantize.onnx_dynamic import prepare_file, quantize_file

    fp32_path = dest.with_name(dest.name + ".fp32.tmp")
    config = wrapper.model.config
    loop = config.num_hidden_groups == 1
    try:
        with progress.step("onnx: torch.onnx.export (dynamo)" + (", layer loop" if loop else "")):
            if loop:
                onnx.save(_layer_loop_model(wrapper, example, dynamic_shapes, config.num_hidden_layers),
                          str(fp32_path))
            else:
                prog = torch.onnx.export(
                    wrapper, example, dynamo=True, dynamic_shapes=dynamic_shapes, opset_version=OPSET,
                    input_names=list(INPUT_NAMES), output_names=list(wrapper.output_names),
                    external_data=False, optimize=True, verbose=False,
                )
                prog.save(str(fp32_path), external_data=False)
        int4: dict = {}
        if quant is Quant.INT8:
            with progress.step("onnx: int8 dynamic quantization (ONNX Runtime)"):
                q = quantize_file(fp32_path, dest)
        elif quant is Quant.INT4:
            from quantize.onnx_nbits import quantize_file_int4

            group = group_size or DEFAULT_INT4_GROUP_SIZE
            with progress.step(f"onnx: int4 block-wise weights, groups of {group}, {int4_kernel} kernel"):
                q, int4 = quantize_file_int4(fp32_path, dest, group, int4_kernel)
        else:
            q = prepare_file(fp32_path, dest)
        stats = {"weight_matmuls": q.weight_matmuls, "quantized_matmuls": q.quantized_matmuls,
                 "activation_matmuls": q.activation_matmuls, "deduplicated": q.deduplicated_initializers,
                 "layer_loop": loop, **({"int4": int4} if int4 else {})}
    finally:
        if fp32_path.exists():
            os.unlink(fp32_path)
    stats["shared_table_bytes"], stats["opset"] = _externalize(dest)
    onnx.checker.check_model(str(dest), full_check=True)
    return stats


def blobs(path: Path) -> tuple[list[bytes], int]:
    """Initializers and tensor attributes (subgraphs included) of an .onnx, as the bytes they store
    (4-bit tensors packed two values per byte, as in the file)."""
    import onnx

    from quantize.onnx_dynamic import graphs

    model = onnx.load(str(path))
    found = []
    for graph, _ in graphs(model.graph):
        # shape operands (a few int64s) are graph plumbing, not weights
        found += [_stored_bytes(t) for t in graph.initializer
                  if not (t.data_type == onnx.TensorProto.INT64 and len(t.dims) == 1 and t.dims[0] <= 8)]
        found += [_stored_bytes(a.t) for node in graph.node for a in node.attribute
                  if a.type == onnx.AttributeProto.TENSOR]
    return [b for b in found if len(b) > 16], 0


def _stored_bytes(t) -> bytes:
    import math

    from onnx import numpy_helper

    if t.HasField("raw_data"):
        data = t.raw_data
        return data[:_tensor_bytes(t.data_type, math.prod(t.dims))]
    return numpy_helper.to_array(t).tobytes()


INT8_TYPES = (3, 2)  # TensorProto.INT8, UINT8 (the ORT format uses the same codes)
INT4_OPS = ("MatMulNBits", "GatherBlockQuantized")


def quant_of(op_types: set[str], initializer_types: set[int]) -> Quant:
    """What an ONNX / ORT graph stores: 4-bit weight ops, else int8 initializers, else fp32."""
    if op_types & set(INT4_OPS):
        return Quant.INT4
    return Quant.INT8 if initializer_types & set(INT8_TYPES) else Quant.FP32


def int4_group_size(path: Path) -> int | None:
    """The ``block_size`` of the artifact's first 4-bit weight op, None without one."""
    import onnx

    from quantize.onnx_dynamic import graphs

    model = onnx.load(str(path), load_external_data=False)
    for graph, _ in graphs(model.graph):
        for node in graph.node:
            if node.op_type in INT4_OPS:
                return next((int(a.i) for a in node.attribute if a.name == "block_size"), None)
    return None


def stored_quant(path: Path) -> Quant:
    import onnx

    from quantize.onnx_dynamic import graphs

    model = onnx.load(str(path), load_external_data=False)
    ops = {node.op_type for graph, _ in graphs(model.graph) for node in graph.node}
    return quant_of(ops, {t.data_type for t in model.graph.initializer})


def usage(stats: dict) -> dict:
    """How an app loads and calls this export's .onnx / .ort (recorded in manifest.json)."""
    return {"load": "from the .onnx file's path with model.onnx.data beside it (Android: "
                    "OrtEnvironment.createSession(path, options)), not a Java byte[]",
            "calling_convention": {"name": "single-graph/1",
                                   "inputs": list(INPUT_NAMES), "loop": "outputs = run(inputs)"},
            **({"kernels": f"{', '.join(INT4_OPS)} (com.microsoft contrib ops: the full onnxruntime-android "
                           "package, not a reduced ORT-format build)"} if stats.get("int4") else {})}


QUANTIZED_MATMULS = ("MatMulInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QGemm", "MatMulNBits")


def matmul_coverage(nodes, quant: Quant) -> dict:
    """Quantization coverage from ``(op_type, name, reads_a_constant_weight)`` of every node: an int8 or
    int4 artifact must leave no MatMul/Gemm on a stored weight in fp32."""
    fp32, quantized = [], 0
    for op, name, constant_b in nodes:
        if op in QUANTIZED_MATMULS:
            quantized += 1
        elif op in ("MatMul", "Gemm", "FusedMatMul") and constant_b:
            fp32.append(name or op)
    problems = []
    if quant is not Quant.FP32 and fp32:
        problems.append(f"{len(fp32)} weight MatMul/Gemm left in fp32 in an {quant.value} artifact "
                        f"({', '.join(fp32[:4])}{', ...' if len(fp32) > 4 else ''})")
    return {"quantized_weight_matmuls": quantized, "fp32_weight_matmuls": len(fp32),
            "fp32_weight_matmul_nodes": fp32[:20], "problems": problems}


def coverage(path: Path, quant: Quant) -> dict:
    """Weight MatMuls quantized and left fp32, read from the .onnx (subgraphs included)."""
    import onnx

    from quantize.onnx_dynamic import graphs

    model = onnx.load(str(path), load_external_data=False)
    return matmul_coverage(((n.op_type, n.name, len(n.input) > 1 and n.input[1] in constants)
                            for graph, constants in graphs(model.graph) for n in graph.node), quant)


KNOWN_DOMAINS = ("", "ai.onnx", "com.microsoft")  # ONNX and ONNX Runtime's own contrib ops


def check(path: Path, shown: str) -> None:
    """What the .onnx must be before ONNX Runtime sees it: a parseable ModelProto with a graph, only
    standard or ONNX Runtime operator domains, every tensor's bytes matching its declared shape,
    external data only in files inside the artifact's folder and within their size, and the inputs and
    outputs of an export."""
    import onnx

    from quantize.onnx_dynamic import graphs

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError, onnx's own errors on nonsense
        raise ArtifactLoadError(f"{shown} is not an ONNX model (its bytes do not parse: {type(exc).__name__}); "
                                "pass a .onnx written by mobile-export export") from None
    if model.ir_version <= 0 or not model.graph.node:
        raise ArtifactLoadError(f"{shown} is not an ONNX model (no IR version or no graph); pass a .onnx written "
                                "by mobile-export export")
    folder = path.parent.resolve()
    for graph, _ in graphs(model.graph):
        for node in graph.node:
            if node.domain not in KNOWN_DOMAINS:
                raise ArtifactLoadError(f"{shown} uses operator {node.op_type} of the custom domain '{node.domain}', "
                                        "which needs a library outside ONNX Runtime; pass a .onnx written by "
                                        "mobile-export export")
        for t in graph.initializer:
            _check_tensor(t, shown, folder)
    inits = {i.name for i in model.graph.initializer}
    check_interface([_value_info(v) for v in model.graph.input if v.name not in inits],
                    [_value_info(v) for v in model.graph.output], shown)


def _tensor_bytes(data_type: int, elements: int) -> int:
    """Bytes that ``elements`` values of an ONNX tensor type occupy: 4-bit types pack two per byte;
    otherwise onnx's own table (8 bytes for a type it does not know)."""
    import onnx

    if data_type in {getattr(onnx.TensorProto, n, -1) for n in ("INT4", "UINT4", "FLOAT4E2M1")}:
        return (elements + 1) // 2
    try:
        return elements * onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize
    except (KeyError, ValueError, TypeError):
        return elements * 8


def _check_tensor(t, shown: str, folder: Path) -> None:
    import math

    from ..backends import MAX_ARTIFACT_BYTES

    declared = _tensor_bytes(t.data_type, math.prod(t.dims)) if all(d >= 0 for d in t.dims) else -1
    if declared < 0 or declared > MAX_ARTIFACT_BYTES:
        raise ArtifactLoadError(f"{shown}: tensor '{t.name}' declares shape {list(t.dims)} "
                                f"({declared:,} bytes), beyond any ALBERT export; the file is not a sound export")
    if t.data_location != 1:  # TensorProto.EXTERNAL
        if t.HasField("raw_data") and len(t.raw_data) != declared:
            raise ArtifactLoadError(f"{shown}: tensor '{t.name}' holds {len(t.raw_data):,} bytes for shape "
                                    f"{list(t.dims)} ({declared:,}); the file is damaged")
        return
    info = {e.key: e.value for e in t.external_data}
    location = info.get("location", "")
    target = (folder / location).resolve()
    if not location or Path(location).is_absolute() or not target.is_relative_to(folder):
        raise ArtifactLoadError(f"{shown}: tensor '{t.name}' points at external data '{location}' outside the "
                                "artifact's folder; refused (keep model.onnx.data beside model.onnx)")
    if not target.is_file():
        raise ArtifactLoadError(f"{shown}: its weights file {location} is missing; copy it beside {shown}")
    offset, length = int(info.get("offset", 0)), int(info.get("length", declared))
    if length != declared or offset < 0 or offset + length > target.stat().st_size:
        raise ArtifactLoadError(f"{shown}: tensor '{t.name}' reads bytes {offset:,}..{offset + length:,} of "
                                f"{location} ({target.stat().st_size:,} bytes, {declared:,} declared): "
                                "the weights file is truncated or from another export")


def check_interface(names_types: list[tuple[str, str, int]], outputs: list[tuple[str, str, int]], shown: str) -> None:
    """Inputs (name, element type, rank) must be the export's three int64 [batch, seq] tensors and
    the outputs float tensors of rank 2 or more."""
    want = [(n, "int64", 2) for n in INPUT_NAMES]
    if sorted(names_types) != sorted(want):
        found = ", ".join(f"{n} ({t}, rank {r})" for n, t, r in names_types) or "no inputs"
        raise not_an_export(shown, f"its inputs are {found}")
    if not outputs or any(t != "float" or r < 2 for _, t, r in outputs):
        found = ", ".join(f"{n} ({t}, rank {r})" for n, t, r in outputs) or "no outputs"
        raise not_an_export(shown, f"its outputs are {found}")


def _value_info(v) -> tuple[str, str, int]:
    import onnx

    tt = v.type.tensor_type
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type).name if tt.elem_type else "unknown"
    return v.name, {"float32": "float"}.get(dtype, dtype), len(tt.shape.dim) if tt.HasField("shape") else -1


def memory_sharing(path: Path) -> tuple[bool, str]:
    return True, ("shared in RAM: ONNX Runtime prepacks each stored weight once per session, so one stored copy "
                  "of the shared layer is one packed copy")


class Runner:
    """An .onnx loaded in an ONNX Runtime InferenceSession on the CPU."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        if threads:
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.session.run(None, {n: np.ascontiguousarray(feeds[n], dtype=np.int64) for n in self.input_names})
