"""What an .onnx holds, read from the file: stored precision, 4-bit groups, MatMul coverage, RAM sharing."""

from __future__ import annotations

from pathlib import Path

from ...core.choices import Quant
from ..base import MatmulCoverage

INT4_OPS = ("MatMulNBits", "GatherBlockQuantized")


def quant_of(op_types: set[str], initializer_types: set[int]) -> Quant:
    """What an ONNX / ORT graph stores: 4-bit weight ops, else int8 initializers, else fp32."""
    if op_types & set(INT4_OPS):
        return Quant.INT4
    from onnx import TensorProto  # here, not at import: the ARM64 worker runs the Runner without onnx

    int8_types = {TensorProto.INT8, TensorProto.UINT8}  # the ORT format uses the same codes
    return Quant.INT8 if initializer_types & int8_types else Quant.FP32


def int4_group_size(path: Path) -> int | None:
    """The ``block_size`` of the artifact's first 4-bit weight op, None without one."""
    import onnx

    from quantize.onnx_graph import graphs

    model = onnx.load(str(path), load_external_data=False)
    for graph, _ in graphs(model.graph):
        for node in graph.node:
            if node.op_type in INT4_OPS:
                return next((int(a.i) for a in node.attribute if a.name == "block_size"), None)
    return None


def stored_quant(path: Path) -> Quant:
    import onnx

    from quantize.onnx_graph import graphs

    model = onnx.load(str(path), load_external_data=False)
    ops = {node.op_type for graph, _ in graphs(model.graph) for node in graph.node}
    return quant_of(ops, {t.data_type for t in model.graph.initializer})


QUANTIZED_MATMULS = ("MatMulInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QGemm", "MatMulNBits")


def matmul_coverage(nodes, quant: Quant, declared: frozenset[str] = frozenset()) -> MatmulCoverage:
    """Quantization coverage from ``(op_type, name, weight input, reads_a_constant_weight)`` of every node: an
    int8 or int4 artifact must leave no MatMul/Gemm on a stored weight in fp32, except on the weights the file
    declares kept in fp32 (``declared``, a repair's mixed precision)."""
    fp32, quantized, kept = [], 0, 0
    for op, name, weight, constant_b in nodes:
        if op in QUANTIZED_MATMULS:
            quantized += 1
        elif op in ("MatMul", "Gemm", "FusedMatMul") and constant_b:
            if weight in declared:
                kept += 1
            else:
                fp32.append(name or op)
    problems = []
    if quant is not Quant.FP32 and fp32:
        problems.append(
            f"{len(fp32)} weight MatMul/Gemm left in fp32 in an {quant.value} artifact "
            f"({', '.join(fp32[:4])}{', ...' if len(fp32) > 4 else ''})"
        )
    return MatmulCoverage(quant, quantized, len(fp32), tuple(fp32[:20]), tuple(problems), kept, tuple(sorted(declared)))


def declared_fp32(props: dict[str, str]) -> frozenset[str]:
    """The weight initializers a file's metadata declares kept in fp32 (``quantize.onnx_dynamic``)."""
    from quantize.onnx_dynamic import FP32_WEIGHTS_KEY

    value = props.get(FP32_WEIGHTS_KEY, "")
    return frozenset(n for n in value.split(",") if n)


def coverage(path: Path, quant: Quant) -> MatmulCoverage:
    """Weight MatMuls quantized and left fp32, read from the .onnx (subgraphs included)."""
    import onnx

    from quantize.onnx_graph import graphs

    model = onnx.load(str(path), load_external_data=False)
    return matmul_coverage(
        (
            (n.op_type, n.name, n.input[1] if len(n.input) > 1 else "", len(n.input) > 1 and n.input[1] in constants)
            for graph, constants in graphs(model.graph)
            for n in graph.node
        ),
        quant,
        declared_fp32({p.key: p.value for p in model.metadata_props}),
    )


# Operators whose CPU kernels prepack their constant weight (input 1) when the session is created: each
# such node keeps its own packed copy, so the same bytes read by two nodes are packed twice.
PACKING_OPS = frozenset(
    {
        "MatMul",
        "Gemm",
        "FusedMatMul",
        "MatMulInteger",
        "DynamicQuantizeMatMul",
        "MatMulIntegerToFloat",
        "QGemm",
        "MatMulNBits",
    }
)


def packing_verdict(weights: dict[str, bytes], nodes, loop: bool) -> tuple[bool, str]:
    """The RAM verdict from a graph's stored weights (initializer name -> bytes) and its nodes
    (``(op_type, weight input name, whether that input is a constant)``, subgraphs included, each once).

    ONNX Runtime prepacks a weight once per node that multiplies by it, and a Loop body's nodes are
    built once however many iterations run. So each stored weight's bytes (two initializers with
    identical bytes are one weight stored twice) count their packing readers: the Loop keeps ALBERT's
    shared layer at one; an unrolled graph, or a layer stored once per Loop, packs it again per reader.
    """
    import hashlib

    digests = {name: hashlib.sha256(data).hexdigest() for name, data in weights.items()}
    readers: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for op, weight, constant in nodes:
        if op in PACKING_OPS and constant and weight in digests:
            readers[digests[weight]] = readers.get(digests[weight], 0) + 1
            sizes[digests[weight]] = len(weights[weight])
    stored = sum(sizes.values())
    packed = sum(sizes[d] * (n - 1) for d, n in readers.items() if n > 1)
    if packed > 0.01 * stored:
        return False, (
            f"NOT shared in RAM: {packed:,} B of weights are packed again by further MatMul nodes "
            f"({stored:,} B read by MatMuls; ONNX Runtime packs a weight once per node that reads it)"
        )
    how = " (the shared layer is a Loop body, built once)" if loop else ""
    return True, f"shared in RAM: ONNX Runtime packs each stored weight once{how}"


def memory_sharing(path: Path) -> tuple[bool, str]:
    """Whether a session keeps one packed copy of each stored weight, from what the .onnx stores
    (``packing_verdict``)."""
    import onnx

    from quantize.onnx_graph import graphs
    from quantize.onnx_per_token import stacks

    from .layout import stored_bytes

    model = onnx.load(str(path))
    weights = {t.name: stored_bytes(t) for graph, _ in graphs(model.graph) for t in graph.initializer}
    nodes = []
    stacked = stacks(model.graph)  # a weight the per-token form stacks is packed once folded: as its stored codes
    for graph, constants in graphs(model.graph):
        for n in graph.node:
            weight = n.input[1] if len(n.input) > 1 else ""
            weight = stacked[weight].input[1] if weight in stacked else weight
            nodes.append((n.op_type, weight, weight in constants))
    return packing_verdict(weights, nodes, any(n.op_type == "Loop" for n in model.graph.node))
