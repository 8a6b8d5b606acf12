"""int8 dynamic per-channel quantization of an ONNX graph with ONNX Runtime, reaching shared weights.

The torch exporter can store one shared ALBERT weight several times (constant-folded transposes),
or reach it through per-layer Transpose or Identity nodes; ONNX Runtime's quantizer then leaves most
MatMuls in fp32 or quantizes copies. ``dedupe_initializers`` fixes the graph first: Transpose and
Identity of an initializer are folded, identical initializers become one, and every MatMul sees
its weight as one constant input.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .onnx_graph import count_matmuls, gemm_to_matmul, graphs, unique_namer
from .schemes import INT8_DYNAMIC_PER_CHANNEL, Scheme


@dataclass(frozen=True)
class OnnxQuantStats:
    """What quantization reached: MatMul/Gemm nodes with a constant weight, and how many became int8."""

    weight_matmuls: int
    quantized_matmuls: int
    activation_matmuls: int  # attention's Q.K^T and P.V, which stay fp32 by design
    deduplicated_initializers: int


def dedupe_initializers(model) -> int:
    """Make every shared weight one constant that MatMuls read directly, in place.

    Repeats until nothing changes: Transpose of an initializer is folded into one transposed
    initializer per (weight, perm); Identity of an initializer is bypassed; identical initializers
    are merged. Node debug metadata (stack traces, which the exporter writes per node and which
    grows the file with every unrolled layer) is dropped.

    Returns:
        How many nodes and initializer copies were removed.
    """
    import numpy as np
    from onnx import numpy_helper

    graph = model.graph
    graph_outputs = {o.name for o in graph.output}
    removed = 0
    digests: dict[str, str] = {}  # by initializer name: each tensor is hashed once, not on every pass
    for proto in [*graph.node, *graph.value_info, *graph.input, *graph.output, *graph.initializer]:
        del proto.metadata_props[:]
        proto.doc_string = ""
    while True:
        inits = {i.name: i for i in graph.initializer}
        rename: dict[str, str] = {}
        folded: dict[tuple, str] = {}
        new_inits = []
        keep_nodes = []
        for node in graph.node:
            src = node.input[0] if node.input else ""
            if src in inits and node.output[0] not in graph_outputs and node.op_type in ("Identity", "Transpose"):
                if node.op_type == "Identity":
                    rename[node.output[0]] = src
                    continue
                perm = tuple(next((list(a.ints) for a in node.attribute if a.name == "perm"), []))
                key = (src, perm)
                if key not in folded:
                    arr = numpy_helper.to_array(inits[src])
                    arr = np.ascontiguousarray(np.transpose(arr, perm or None))
                    name = f"{src}.T" if perm in ((1, 0), ()) else f"{src}.T{'_'.join(map(str, perm))}"
                    folded[key] = name
                    new_inits.append(numpy_helper.from_array(arr, name))
                rename[node.output[0]] = folded[key]
                continue
            keep_nodes.append(node)
        graph.initializer.extend(new_inits)
        seen: dict[tuple, str] = {}
        keep_inits = []
        for init in graph.initializer:
            if init.name not in digests:
                digests[init.name] = hashlib.sha256(numpy_helper.to_array(init).tobytes()).hexdigest()
            same = (init.data_type, tuple(init.dims), digests[init.name])
            if same in seen:
                rename[init.name] = seen[same]
            else:
                seen[same] = init.name
                keep_inits.append(init)
        if not rename:
            break
        for node in keep_nodes:
            for i, name in enumerate(node.input):
                while name in rename:
                    name = rename[name]
                node.input[i] = name
        removed += len(graph.node) - len(keep_nodes) + len(graph.initializer) - len(keep_inits)
        used = {name for node in keep_nodes for name in node.input} | graph_outputs
        del graph.initializer[:]
        graph.initializer.extend(i for i in keep_inits if i.name in used)
        del graph.node[:]
        graph.node.extend(keep_nodes)
    return removed


def prepare_file(src: Path, dst: Path) -> OnnxQuantStats:
    """Write ``src`` to ``dst`` with its shared weights de-duplicated (``dedupe_initializers``), still fp32."""
    import onnx

    model = onnx.load(str(src))
    removed = dedupe_initializers(model)
    weight_mm, act_mm = count_matmuls(model)
    onnx.save(model, str(dst))
    return OnnxQuantStats(
        weight_matmuls=weight_mm, quantized_matmuls=0, activation_matmuls=act_mm, deduplicated_initializers=removed
    )


# metadata_props key: the weight initializers a repair keeps in fp32 on purpose (the coverage check accepts
# exactly those; any other fp32 weight MatMul in an int8 file is still a defect)
FP32_WEIGHTS_KEY = "mobile_export.fp32_weights"


def kept_matmuls(model, keep: Sequence[np.ndarray]) -> tuple[list[str], list[str]]:
    """(names of the MatMul/Gemm nodes whose constant weight is one of ``keep``, those weights' initializer
    names); ``keep`` holds torch Linear weights as ``[out, in]`` arrays, found by value, not by name (the
    exporter renames and de-duplicates initializers). Unnamed matching nodes are given a name."""
    from onnx import numpy_helper

    if not keep:
        return [], []
    arrays = {}
    for graph, _ in graphs(model.graph):
        for init in graph.initializer:
            arrays[init.name] = init
    wanted = [np.ascontiguousarray(k, dtype=np.float32) for k in keep]
    matches: dict[tuple[str, bool], bool] = {}

    def is_kept(name: str, transposed: bool) -> bool:
        if (name, transposed) not in matches:
            init = arrays.get(name)
            value = numpy_helper.to_array(init) if init is not None and init.data_type == 1 else None
            stored = value.T if value is not None and transposed and value.ndim == 2 else value
            matches[(name, transposed)] = stored is not None and any(
                w.shape == stored.shape and np.array_equal(w, stored) for w in wanted
            )
        return matches[(name, transposed)]

    nodes, weights = [], set()
    fresh = unique_namer({n.name for graph, _ in graphs(model.graph) for n in graph.node})
    for graph, constants in graphs(model.graph):
        for node in graph.node:
            if node.op_type not in ("MatMul", "Gemm") or len(node.input) < 2 or node.input[1] not in constants:
                continue
            trans_b = node.op_type == "Gemm" and any(a.name == "transB" and a.i for a in node.attribute)
            if is_kept(node.input[1], transposed=not trans_b):  # MatMul stores [in, out]: the Linear's transpose
                if not node.name:
                    node.name = fresh(f"{node.op_type}_fp32")
                nodes.append(node.name)
                weights.add(node.input[1])
    return nodes, sorted(weights)


def quantize_file(
    src: Path, dst: Path, scheme: Scheme = INT8_DYNAMIC_PER_CHANNEL, keep: Sequence[np.ndarray] = ()
) -> OnnxQuantStats:
    """Quantize ``src`` (fp32 ONNX) into ``dst``: int8 weights per output channel, activations quantized per token
    at run time (``quantize.onnx_per_token``).

    Args:
        src: fp32 model; it is de-duplicated first (written to ``dst`` as an intermediate).
        dst: where the int8 model is written (no external data).
        scheme: only ``INT8_DYNAMIC_PER_CHANNEL`` is implemented.
        keep: Linear weights (``[out, in]``) whose MatMuls stay fp32 (a repair's mixed precision); they are
            recorded in the file's metadata under ``FP32_WEIGHTS_KEY``.
    """
    if scheme != INT8_DYNAMIC_PER_CHANNEL:
        raise ValueError(f"ONNX side implements {INT8_DYNAMIC_PER_CHANNEL.name} only, not {scheme.name}")
    import onnx

    from .onnx_per_token import quantize_per_token

    prepared = prepare_file(src, dst)
    model = onnx.load(str(dst))
    gemm_to_matmul(model)  # the pooler's and the classifier's Gemm: one form for every weight
    # a tied decoder is its int8 table dequantized: it takes the table's own codes (then stored once)
    tied = {name: (np.ascontiguousarray(codes.T), scale) for name, (codes, scale) in tied_decoders(model).items()}
    excluded: list[str] = []
    kept_weights: list[str] = []
    if keep:
        excluded, kept_weights = kept_matmuls(model, keep)
        if len(kept_weights) < len(keep):
            raise ValueError(f"{len(keep) - len(kept_weights)} weight(s) to keep in fp32 are not in the graph")
    quantized = quantize_per_token(model, exclude=set(excluded), codes=tied)
    if kept_weights:
        entry = model.metadata_props.add()
        entry.key, entry.value = FP32_WEIGHTS_KEY, ",".join(kept_weights)
    onnx.save(model, str(dst))
    return replace(prepared, quantized_matmuls=quantized)


def tied_decoders(model) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The MatMul weights of the fp32 graph that are an int8 lookup table's dequantized transpose, bit for bit
    (a masked-LM decoder tied to the word table, ``quantize.embedding``): weight name -> (the table's int8 codes
    ``[rows, width]``, its per-row scales ``[rows]``). The lookup is two Gathers with the same ids, one of int8
    codes and one of float scales (one per row)."""
    from onnx import TensorProto, numpy_helper

    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    gathers: dict[str, list[str]] = {}
    for n in graph.node:
        if n.op_type == "Gather" and n.input[0] in inits and len(inits[n.input[0]].dims) == 2:
            gathers.setdefault(n.input[1], []).append(n.input[0])
    tables = []
    for names in gathers.values():
        int8 = [n for n in names if inits[n].data_type == TensorProto.INT8]
        rows = [n for n in names if inits[n].data_type == TensorProto.FLOAT and inits[n].dims[1] == 1]
        tables += [(numpy_helper.to_array(inits[c]), numpy_helper.to_array(inits[r])) for c in int8 for r in rows]
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for node in graph.node:
        if node.op_type != "MatMul" or len(node.input) < 2 or node.input[1] not in inits:
            continue
        weight = inits[node.input[1]]
        if weight.data_type != TensorProto.FLOAT or len(weight.dims) != 2:
            continue
        for codes, scale in tables:
            if codes.shape != (weight.dims[1], weight.dims[0]) or scale.shape[0] != codes.shape[0]:
                continue
            if np.array_equal((codes.astype(np.float32) * scale).T, numpy_helper.to_array(weight)):
                found[weight.name] = (codes, scale.reshape(-1))
                break
    return found


_INT8_MATMULS = ("MatMulInteger", "MatMulIntegerToFloat")  # int8 codes at input 1, scales named "<codes>_scale"


def share_transposed_tables(model) -> int:
    """Let a MatMul that multiplies by a lookup table's transpose read the table itself, in place.

    A tied masked-LM decoder is the word-embedding table transposed: the exporter folds the transpose
    into a second initializer, and ONNX Runtime's quantizer quantizes that copy per output column, which
    gives the table's own per-row int8 codes and scales (``quantize.embedding`` makes sure of it). Where a
    MatMul / MatMulInteger weight (or the codes the per-token form stacks) equals a Gather table transposed (bit for
    bit), the weight becomes
    ``Transpose(table)``; for MatMulInteger its per-column scale becomes the table's row scale
    (``Reshape`` to one dimension) where they agree on every row with a non-zero code (an all-zero row
    multiplies nothing, and each quantizer picks its own scale for it). ONNX Runtime folds both nodes
    when it loads the model, so the kernels still see constant weights; the file keeps one table.

    Returns:
        Bytes of initializers no longer stored.
    """
    import numpy as np
    from onnx import helper, numpy_helper

    from .onnx_per_token import stacks

    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    arrays: dict[str, np.ndarray] = {}

    def array(name: str) -> np.ndarray:
        if name not in arrays:
            arrays[name] = numpy_helper.to_array(inits[name])
        return arrays[name]

    lookups = [n for n in graph.node if n.op_type == "Gather" and n.input[0] in inits]
    tables = {n.input[0]: n.input[1] for n in lookups if len(inits[n.input[0]].dims) == 2}
    fresh = unique_namer(set(inits) | {o for n in graph.node for o in n.output})
    added, rename, saved = [], {}, 0

    stacked = set(stacks(graph))  # the per-token form's stacked weights: their Concat reads the codes at input 1
    for node in list(graph.node):
        int8 = node.op_type in _INT8_MATMULS or (node.op_type == "Concat" and node.output[0] in stacked)
        if not (int8 or node.op_type == "MatMul") or len(node.input) < 2 or node.input[1] not in inits:
            continue
        weight = inits[node.input[1]]
        if weight.name in rename or len(weight.dims) != 2:
            continue
        for table, indices in tables.items():
            t = inits[table]
            if t.data_type != weight.data_type or list(t.dims) != [weight.dims[1], weight.dims[0]]:
                continue
            if not np.array_equal(array(table).T, array(weight.name)):
                continue
            out = fresh(f"{table}.transposed")
            added.append(helper.make_node("Transpose", [table], [out], name=out, perm=[1, 0]))
            rename[weight.name] = out
            saved += array(weight.name).nbytes
            scale = weight.name[: -len("_quantized")] + "_scale" if weight.name.endswith("_quantized") else None
            if int8 and scale in inits:
                saved += _share_row_scale(graph, inits, array, tables, table, indices, scale, rename, added, fresh)
            break
    if not rename:
        return 0
    for node in graph.node:
        for i, name in enumerate(node.input):
            node.input[i] = rename.get(name, name)
    nodes = added + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    kept = [i for i in graph.initializer if i.name in used or i.name not in rename]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return saved


def _share_row_scale(graph, inits, array, tables, table, indices, scale, rename, added, fresh) -> int:
    """Point the decoder's per-column ``scale`` at the row scales looked up beside ``table`` (a float
    table gathered with the same ids, one value per row), when they agree on every non-zero row."""
    import numpy as np
    from onnx import helper, numpy_helper

    rows = np.any(array(table) != 0, axis=1)
    wanted = array(scale).reshape(-1)
    for other, other_indices in tables.items():
        o = inits[other]
        if other == table or other_indices != indices or o.data_type != inits[scale].data_type:
            continue
        values = array(other).reshape(-1)
        if values.shape == wanted.shape and np.array_equal(values[rows], wanted[rows]):
            shape = fresh(f"{other}.flat_shape")
            graph.initializer.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), shape))
            out = fresh(f"{other}.flat")
            added.append(helper.make_node("Reshape", [other, shape], [out], name=out))
            rename[scale] = out
            return wanted.nbytes - 8
    return 0
