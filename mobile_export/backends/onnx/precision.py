"""Which int8 GEMM ONNX Runtime runs on this host, and the session that computes what a phone computes.

ONNX Runtime multiplies the u8 activations of ``DynamicQuantizeLinear`` by s8 weights. On x86-64
without VNNI (AVX2, AVX-512 without VNNI) its u8 x s8 kernel (``vpmaddubsw``) adds pairs of products
into 16-bit lanes that saturate, so the result is an accident of the checking machine: phones (ARM64
dot-product / i8mm kernels) and VNNI CPUs sum into 32 bits. ONNX Runtime's remedy is the session
option ``session.x64quantprecision`` = "1": its ``Avx2WeightS8ToU8Transformer`` rewrites s8 weights
to u8 (``w ^ 0x80`` with the zero point moved by 128, the same integers) so the u8 x u8 kernel runs.
It only reaches a weight stored in the graph of the node that reads it, and the export's ONNX ``Loop``
body reads the shared layer from the main graph (so that ONNX Runtime prepacks it once): the body's
MatMulIntegers would keep their s8 weights and saturate; ONNX Runtime's own rewrite also fails on a weight
several main-graph nodes read (an unrolled shared layer), and cannot reach a tied decoder's
``Transpose(table)``. ``exact_model`` does the rewrite for every weight before ONNX Runtime reads the model
(the artifact's file is not changed); a .ort is converted from it.

One place decides: ``precision_for(host)``; every session the project makes comes from ``session``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...core.host import Host, this_host
from ...core.threads import runtime_threads

OPTION = "session.x64quantprecision"
EXTERNAL_FOLDER = "session.model_external_initializers_file_folder_path"
_INT8 = 3  # onnx.TensorProto.INT8
# op -> (weight, weight zero point) input indices
_WEIGHT_INPUTS = {"MatMulInteger": (1, 3), "MatMulIntegerToFloat": (1, 5)}
_S7 = (-64, 64)  # weights inside this range cannot saturate (ONNX Runtime skips converting them too)


class Precision(enum.Enum):
    """How ONNX Runtime's int8 GEMM adds up u8 x s8 products on this host."""

    NATIVE = "u8s8"  # the kernel sums into 32 bits (VNNI, AMX, ARM64): the file's s8 weights as they are
    EXACT = "u8u8"  # the host's u8s8 kernel saturates: weights as u8 (ONNX Runtime's option + the Loop body)

    def describe(self, host: Host) -> str:
        """One line for reports: the mode and what it means on ``host``."""
        if self is Precision.EXACT:
            return (
                f"u8u8: {OPTION}=1 and the Loop body's weights as u8 (this CPU's u8s8 kernel adds pairs into "
                "16 bits and saturates)"
            )
        if saturates(host):
            return "u8s8: ONNX Runtime's default; this CPU's kernel adds pairs into 16 bits and saturates"
        why = next((f for f in _EXACT_SUMS if host.has(f)), "no saturating kernel on this architecture")
        return f"u8s8: 32-bit sums ({why}), as on a phone"


# x86 features with which MLAS's u8 x s8 GEMM sums into 32 bits (platform.cpp: AMX, AVX512-VNNI, AVX-VNNI)
_EXACT_SUMS = ("amx_int8", "avx512_vnni", "avx_vnni")


def saturates(host: Host) -> bool:
    """Whether ONNX Runtime's u8 x s8 GEMM saturates on ``host``: x86-64 without AVX-VNNI, AVX512-VNNI
    or AMX (MLAS picks its AVX2 or AVX-512 core kernel there)."""
    return host.x86_64 and not any(host.has(f) for f in _EXACT_SUMS)


def precision_for(host: Host | None = None) -> Precision:
    """The mode the project's sessions use on ``host`` (default: this one)."""
    return Precision.EXACT if saturates(host or this_host()) else Precision.NATIVE


def precision_modes(host: Host | None = None) -> tuple[str, ...]:
    """The modes worth measuring on ``host``: the sessions' first, then the saturating kernel it avoids."""
    mode = precision_for(host)
    return (mode.value, Precision.NATIVE.value) if mode is Precision.EXACT else (mode.value,)


def describe_precision(mode: str | None = None, host: Host | None = None) -> str:
    """One line for reports: ``mode`` (default: the sessions' on ``host``) and what it means there."""
    host = host or this_host()
    return (Precision(mode) if mode else precision_for(host)).describe(host)


def phone_precision() -> str:
    """A phone's mode: ARM64's int8 kernels sum into 32 bits, the file's s8 weights as they are."""
    return Precision.NATIVE.value


def _weight_uses(model, everywhere: bool) -> list:
    """(node, initializers it can read, the ``Concat`` stacking its weight or None) for the int8-weight
    nodes whose weight is an int8 initializer read from the main graph by a subgraph (what ONNX Runtime's option
    leaves), or anywhere with ``everywhere``, and for every node whose weight the per-token form stacks in the graph
    (computed, so no option reaches it before ONNX Runtime folds it)."""
    from quantize.onnx_graph import graphs
    from quantize.onnx_per_token import stacks

    main = {i.name: i for i in model.graph.initializer}
    uses = []
    stacked = stacks(model.graph)  # every stack is computed in the main graph (a Loop body reads it from there)
    for graph, _ in graphs(model.graph):
        local = {i.name: i for i in graph.initializer}
        scope = {**main, **local}
        # the main graph's own weights are ONNX Runtime's to convert; a subgraph's own ones too
        reach = scope if everywhere else {} if graph is model.graph else {k: main[k] for k in main.keys() - local}
        for node in graph.node:
            if node.op_type in _WEIGHT_INPUTS:
                weight = node.input[_WEIGHT_INPUTS[node.op_type][0]]
                concat = stacked.get(weight)
                codes = scope.get(concat.input[1]) if concat is not None else None
                if codes is not None and codes.data_type == _INT8:
                    uses.append((node, scope, concat))
                elif (found := reach.get(weight)) is not None and found.data_type == _INT8:
                    uses.append((node, scope, None))
    return uses


def _stack_as_u8(model, concat, codes_u8: str) -> None:
    """Make the per-token form's stacked weight ``concat`` u8 (its rows and codes moved by 128), in place: the
    codes read as ``codes_u8`` (their u8 twin), the rows cast to u8 after adding 128."""
    from onnx import TensorProto, helper

    graph = model.graph  # where quantize_per_token computes every stack
    rows = next(n for n in graph.node if n.op_type == "Cast" and n.output[0] == concat.input[0])
    shift = _u8_offset(model)
    shifted = rows.output[0] + "/u8"
    graph.node.insert(list(graph.node).index(rows), helper.make_node("Add", [rows.input[0], shift], [shifted]))
    rows.input[0] = shifted
    for attr in rows.attribute:
        if attr.name == "to":
            attr.i = TensorProto.UINT8
    concat.input[1] = codes_u8
    stale = [v for v in graph.value_info if v.name in (rows.output[0], concat.output[0])]
    for v in stale:
        graph.value_info.remove(v)


def _u8_offset(model) -> str:
    """The main graph's float constant 128 (an s8 value's u8 code minus the value), added once."""
    import numpy as np
    from onnx import numpy_helper

    name = "u8_table_offset"
    if name not in {i.name for i in model.graph.initializer}:
        model.graph.initializer.append(numpy_helper.from_array(np.array(128.0, dtype=np.float32), name))
    return name


def exact_model(path: Path, everywhere: bool = False):
    """The .onnx at ``path`` with s8 weights stored as u8 (zero points moved by 128: the same integers),
    None when no weight can saturate. By default only the weights subgraphs read from the main graph
    (ONNX Runtime's option converts the others itself); ``everywhere`` converts all. The u8 copies are
    initializers of the main graph, so ONNX Runtime still prepacks each once; every other weight stays
    in the external data file."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path), load_external_data=False)
    base = str(Path(path).parent)
    u8: dict[str, str] = {}  # s8 initializer -> its u8 twin
    values: dict[str, np.ndarray] = {}

    def read(tensor) -> np.ndarray:
        if tensor.name not in values:
            values[tensor.name] = numpy_helper.to_array(tensor, base_dir=base)
        return values[tensor.name]

    def twin(tensor) -> str:
        if tensor.name not in u8:
            new = numpy_helper.from_array(
                (read(tensor).astype(np.int16) + 128).astype(np.uint8), tensor.name + "_s8_2_u8"
            )
            model.graph.initializer.append(new)
            u8[tensor.name] = new.name
        return u8[tensor.name]

    def zero_point_as_u8(node, scope) -> bool:
        """Move ``node``'s weight zero point to u8 (False: it is not a stored int8 constant)."""
        zp_index = _WEIGHT_INPUTS[node.op_type][1]
        zp = node.input[zp_index] if len(node.input) > zp_index else ""
        if zp and (zp not in scope or scope[zp].data_type != _INT8):
            return False
        if zp:
            node.input[zp_index] = twin(scope[zp])
        else:  # no zero point means 0 in s8, 128 in u8
            while len(node.input) < zp_index:
                node.input.append("")
            zero = onnx.helper.make_tensor("s8_zero", _INT8, [], [0])
            values.setdefault(zero.name, np.zeros((), np.int8))
            node.input.append(twin(zero))
        return True

    converted: set[str] = set()  # stacked weights already made u8 (several nodes can read one)
    for node, scope, concat in _weight_uses(model, everywhere):
        w_index = _WEIGHT_INPUTS[node.op_type][0]
        if concat is not None:  # its rows reach 127 whatever the codes: always converted
            if zero_point_as_u8(node, scope) and concat.output[0] not in converted:
                _stack_as_u8(model, concat, twin(scope[concat.input[1]]))
                converted.add(concat.output[0])
            continue
        weight = scope[node.input[w_index]]
        arr = read(weight)
        if arr.min() >= _S7[0] and arr.max() <= _S7[1]:
            continue  # 7-bit weights cannot saturate: ONNX Runtime leaves them too
        if zero_point_as_u8(node, scope):
            node.input[w_index] = twin(weight)
    if everywhere:
        _tied_tables_as_u8(model, read, twin, zero_point_as_u8)
    if not u8:
        return None
    _drop_unused(model)
    return model


def _tied_tables_as_u8(model, read, twin, zero_point_as_u8) -> None:
    """A tied decoder multiplies by ``Transpose(table)`` of the int8 word table (``share_transposed_tables``),
    which no initializer rewrite reaches: the Transpose reads the table's u8 twin instead, and so do the
    table's lookups, each shifted back by 128 after its Cast to float, so the table is still stored once."""
    from onnx import helper

    from quantize.onnx_per_token import stacks

    graph = model.graph
    main = {i.name: i for i in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output}
    stacked = stacks(graph)
    for node in list(graph.node):
        t = producer.get(node.input[1]) if node.op_type in _WEIGHT_INPUTS else None
        concat = stacked.get(node.input[1]) if t is not None else None
        if concat is not None:  # the per-token form stacks the table's transpose under its zero-point rows
            t = producer.get(concat.input[1])
        if t is None or t.op_type != "Transpose" or t.input[0] not in main or main[t.input[0]].data_type != _INT8:
            continue
        table = main[t.input[0]]
        arr = read(table)
        seven_bit = arr.min() >= _S7[0] and arr.max() <= _S7[1] and concat is None  # stacked rows reach 127
        if seven_bit or not zero_point_as_u8(node, main):
            continue
        # the decoder reads a Transpose of the u8 twin of its own; the s8 one stays for its other readers (the
        # per-token column sums, folded at load) and is dropped once nothing reads it
        transposed = t.output[0] + "_u8"
        if not any(transposed in n.output for n in graph.node):
            u8_t = helper.make_node("Transpose", [twin(table)], [transposed], name=transposed, perm=[1, 0])
            graph.node.insert(list(graph.node).index(t) + 1, u8_t)
        if concat is not None:
            _stack_as_u8(model, concat, transposed)
        else:
            node.input[1] = transposed
        for gather in [n for n in graph.node if n.op_type == "Gather" and n.input[0] == table.name]:
            readers = [n for n in graph.node if gather.output[0] in n.input]
            if not all(r.op_type == "Cast" and _cast_to(r) == 1 for r in readers):  # 1: FLOAT
                continue  # a lookup not cast straight to float keeps the s8 table (then stored twice)
            gather.input[0] = twin(table)
            stale = [v for v in graph.value_info if v.name == gather.output[0]]  # it said int8: now u8
            for v in stale:
                graph.value_info.remove(v)
            for cast in readers:
                shifted = cast.output[0]
                cast.output[0] = shifted + "_u8"
                sub = helper.make_node("Sub", [cast.output[0], _u8_offset(model)], [shifted], name=shifted + "_s8")
                graph.node.insert(list(graph.node).index(cast) + 1, sub)


def _cast_to(node) -> int | None:
    return next((a.i for a in node.attribute if a.name == "to"), None)


def _drop_unused(model) -> None:
    """Remove main-graph initializers no graph reads any more (the s8 originals)."""
    from onnx import AttributeProto

    used: set[str] = set()

    def walk(graph):
        for node in graph.node:
            used.update(node.input)
            for attr in node.attribute:
                for sub in [attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs):
                    walk(sub)
        used.update(o.name for o in graph.output)

    walk(model.graph)
    keep = [i for i in model.graph.initializer if i.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(keep)


def session(
    path: Path,
    threads: int | None = None,
    precision: Precision | None = None,
    edit: Callable[[Any], None] | None = None,
):
    """An ONNX Runtime CPU session of ``path`` (.onnx or .ort) in ``precision`` (default: this host's);
    ``edit`` changes an .onnx's graph (a ModelProto, external data not loaded) before ONNX Runtime reads it."""
    import onnxruntime as ort

    precision = precision or precision_for()
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    threads = runtime_threads(threads)
    if threads:
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
    source: str | bytes = str(path)
    if precision is Precision.EXACT:
        opts.add_session_config_entry(OPTION, "1")
    if Path(path).suffix == ".onnx" and (precision is Precision.EXACT or edit is not None):
        # every weight, not only the Loop body's: ONNX Runtime's own conversion fails on a weight that
        # several nodes of the main graph read ("Attempt to replace the existing tensor", an unrolled
        # layer), and cannot reach a tied decoder's Transpose(table)
        model = exact_model(Path(path), everywhere=True) if precision is Precision.EXACT else None
        if edit is not None:
            if model is None:
                import onnx

                model = onnx.load(str(path), load_external_data=False)
            edit(model)
        if model is not None:
            opts.add_session_config_entry(EXTERNAL_FOLDER, str(Path(path).resolve().parent))
            source = model.SerializeToString()
    return ort.InferenceSession(source, sess_options=opts, providers=["CPUExecutionProvider"])


def exact_source(path: Path, opts, everywhere: bool = False) -> str | bytes:
    """What to hand ``ort.InferenceSession`` for ``path`` with ``exact_model``'s u8 weights: the rewritten
    graph's bytes (``opts`` told where its external data lives), or the path when nothing needs it."""
    exact = exact_model(path, everywhere)
    if exact is None:
        return str(path)
    opts.add_session_config_entry(EXTERNAL_FOLDER, str(Path(path).resolve().parent))
    return exact.SerializeToString()
