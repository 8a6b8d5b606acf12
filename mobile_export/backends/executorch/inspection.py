"""What a .pte holds, read from the file: delegate coverage, stored precision, 4-bit groups, RAM sharing."""

from __future__ import annotations

import functools
from pathlib import Path

from ...core.choices import Quant
from ..base import DelegateCoverage
from .convention import EMBED_METHOD, FORWARD_METHOD, INT4_TABLE_OP, SCHEDULE_METHOD
from .serializer import decompile_flatbuffer, read_program

# Operators an export may run outside the XNNPACK delegate: table lookups, shape queries and copies
# that move or reshape data without arithmetic. Any other operator outside the delegate is compute
# that falls back to ExecuTorch's portable kernels (slow, and unquantized in an int8 artifact).
OUTSIDE_DELEGATE_ALLOWED = frozenset(
    {
        "aten::embedding",
        "aten::sym_size",
        "aten::unsqueeze_copy",
        "aten::squeeze_copy",
        "aten::view_copy",
        "aten::slice_copy",
        "aten::select_copy",
        "aten::expand_copy",
        "aten::permute_copy",
        "aten::clone",
        "dim_order_ops::_to_dim_order_copy",
        "dim_order_ops::_clone_dim_order",
        "aten::_to_copy",
        "executorch_prim::et_view",
        "aten::split_with_sizes_copy",
        "aten::split_copy",
        "aten::unbind_copy",
        "quantized_decomposed::embedding_4bit",  # the 4-bit word table's lookup (int4)
    }
)


# The top-k head's selection (heads.TopKMasked): which positions hold a mask and the k best ids, on
# [S]- and [8, vocab]-sized index arrays; no weights. The pooling head's maximum over the tokens (ExecuTorch 1.5.1's
# XNNPACK takes no reduce-max; one pass over [S, H], no weights) and its position weights (arange). Allowed in the
# head (and forward) only.
HEAD_SELECTION_ALLOWED = frozenset(
    {
        "aten::amax",
        "aten::arange",
        "aten::eq",
        "aten::gt",
        "aten::full",
        "aten::full_like",
        "aten::scalar_tensor",
        "aten::gather",
        "aten::topk",
        "aten::where",
        "aten::cat",
        "aten::mul",
        "aten::rsub",
        "aten::sub",
        "executorch_prim::add",
        "executorch_prim::sub",
    }
)
_HEAD_PLANS = ("head", "forward")

# RoBERTa's and XLM-R's position ids from the mask (``stages.Embed``: cumsum, times the mask, plus the padding
# index): int64 arithmetic on the [B, S] index array before the lookups, which XNNPACK has no kernels for.
# Allowed in embed (and forward) only.
POSITION_INDEX_ALLOWED = frozenset({"aten::cumsum", "aten::mul", "aten::add", "aten::full_like"})
_EMBED_PLANS = (EMBED_METHOD, FORWARD_METHOD)


def _allowed(op: str, plan: str) -> bool:
    """Whether ``op`` may run outside the delegate in method ``plan`` (an op allowed in two methods for two reasons,
    RoBERTa's position ids in embed and the top-k selection in the head, is allowed in each)."""
    return (
        op in OUTSIDE_DELEGATE_ALLOWED
        or (op in HEAD_SELECTION_ALLOWED and plan in _HEAD_PLANS)
        or (op in POSITION_INDEX_ALLOWED and plan in _EMBED_PLANS)
    )


def coverage(path: Path, quant: Quant) -> DelegateCoverage:
    """Operators each method runs outside the XNNPACK delegate, read from the .pte's execution plans;
    anything beyond ``OUTSIDE_DELEGATE_ALLOWED`` (and, in the head, ``HEAD_SELECTION_ALLOWED``; in embed,
    ``POSITION_INDEX_ALLOWED``) is a problem."""
    pte = read_program(path)
    outside: dict[str, list[str]] = {}
    delegates = 0
    for plan in pte.program.execution_plan:
        delegates += len(plan.delegates)
        for op in plan.operators:
            outside.setdefault(op.name, []).append(plan.name)
    compute = sorted(op for op, plans in outside.items() if not all(_allowed(op, p) for p in plans))
    problems = []
    if compute:
        problems.append(
            f"{len(compute)} compute operator(s) run outside the XNNPACK delegate "
            f"({', '.join(f'{op} in {outside[op][0]}' for op in compute[:4])})"
        )
    return DelegateCoverage(delegates, tuple(sorted(outside)), tuple(compute), tuple(problems))


def int4_weight_group_sizes(path: Path) -> list[int]:
    """Group sizes of the XNNPACK 4-bit weights in a .pte."""
    found: list[int] = []
    for graph in xnnpack_graphs(path):
        for value in graph.get("xvalues", []):
            union = value.get("xvalue_union", {})
            if union.get("tensor_value", {}).get("datatype") == "xnn_datatype_qbint4":
                found.append(int(union.get("quant_params", {}).get("group_size", 0)))
    return found


def int4_group_size(path: Path) -> int | None:
    """Inputs per scale of the 4-bit weights (the smallest, if several), read from the XNNPACK graphs."""
    found = [g for g in int4_weight_group_sizes(path) if g]
    return min(found) if found else None


def stored_quant(path: Path) -> Quant:
    """int4 when the program looks a 4-bit table up or XNNPACK holds 4-bit (blockwise) weights; int8 when
    the XNNPACK weights have per-channel scales (named ``scale_*``); fp32 otherwise."""
    pte = read_program(path)
    keys = list(pte.named_data.pte_data) if pte.named_data is not None else []
    if any(op.name == INT4_TABLE_OP for plan in pte.program.execution_plan for op in plan.operators):
        return Quant.INT4
    if not any(k.startswith("scale_") for k in keys):
        return Quant.FP32
    return Quant.INT4 if int4_weight_group_sizes(path) else Quant.INT8


def xnnpack_graphs(path: Path) -> list[dict]:
    """Every XNNPACK delegate graph of the .pte, decoded (cached like ``read_program``)."""
    st = Path(path).stat()
    return _graphs_cached(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _graphs_cached(path: str, size: int, mtime_ns: int) -> list[dict]:
    pte = read_program(Path(path))
    return [_xnnpack_graph(bytes(d.data)) for d in pte.program.backend_delegate_data]


def _xnnpack_graph(blob: bytes) -> dict:
    """A delegate blob's XNNPACK graph as JSON (decoded by the flatc ExecuTorch ships, with its schema)."""
    import glob
    import json
    import os
    import re
    import tempfile

    from executorch.backends.xnnpack.serialization import xnnpack_graph_serialize
    from executorch.backends.xnnpack.serialization.xnnpack_graph_serialize import XNNHeader

    header = XNNHeader.from_bytes(blob[: XNNHeader.EXPECTED_LENGTH])
    payload = blob[header.flatbuffer_offset : header.flatbuffer_offset + header.flatbuffer_size]
    with tempfile.TemporaryDirectory() as tmp:
        bin_path = os.path.join(tmp, "graph.bin")
        with open(bin_path, "wb") as f:
            f.write(payload)
        decompile_flatbuffer(
            tmp, os.path.join(os.path.dirname(xnnpack_graph_serialize.__file__), "schema.fbs"), bin_path
        )
        [out] = glob.glob(os.path.join(tmp, "*.json"))
        with open(out) as f:
            text = f.read()
    # flatc writes float infinities and NaN bare (a clamp without an upper bound: output_max inf)
    return json.loads(re.sub(r"(?<=[:\[,\s])(-?)inf\b", r"\1Infinity", re.sub(r"(?<=[:\[,\s])nan\b", "NaN", text)))


def _int_fields(value, found: list, key_suffix: str) -> None:
    """Appends (key, value) of every int field whose key ends with ``key_suffix``, at any depth."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k.endswith(key_suffix) and isinstance(v, int):
                found.append((k, v))
            _int_fields(v, found, key_suffix)
    elif isinstance(value, list):
        for v in value:
            _int_fields(v, found, key_suffix)


def memory_sharing(path: Path) -> tuple[bool, str]:
    """Whether running the program keeps one packed copy of each stored weight.

    XNNPACK packs a weight for every operator that reads it, when that operator's method loads. Read
    from the artifact: every XNNPACK graph's operators and the stored weight (named data) behind each
    constant they read. A weight read by N operators is packed N times: the unrolled-layer program
    packs ALBERT's shared layer once per layer. Biases are not counted: equal biases (all-zero ones of
    a freshly initialised model) are one stored blob read by unrelated operators, a few bytes each.
    A program with the layer loop and ``forward`` (``--pte-entry both``) is judged by the loop, which
    the app runs; ``forward``'s method is never loaded then.
    """
    pte = read_program(path)
    if pte.named_data is None:
        return True, "shared in RAM: no XNNPACK weights stored by name"
    sizes = {key: len(pte.named_data.buffers[entry.buffer_index]) for key, entry in pte.named_data.pte_data.items()}
    names = {plan.name for plan in pte.program.execution_plan}
    loaded = {
        d.processed.index
        for plan in pte.program.execution_plan
        if SCHEDULE_METHOD not in names or plan.name != FORWARD_METHOD
        for d in plan.delegates
    }
    readers: dict[str, int] = {}
    for index, graph in enumerate(xnnpack_graphs(path)):
        if index not in loaded:
            continue
        keys = [c.get("named_key", "") for c in graph.get("constant_data", [])]
        tensor_key: dict[int, str] = {}
        for value in graph.get("xvalues", []):
            ids: list[tuple[str, int]] = []
            buffers: list[tuple[str, int]] = []
            _int_fields(value, ids, "id_out")
            _int_fields(value, buffers, "constant_buffer_idx")
            if ids and buffers and 0 < buffers[0][1] < len(keys) and keys[buffers[0][1]]:
                tensor_key[ids[0][1]] = keys[buffers[0][1]]
        for node in graph.get("xnodes", []):
            refs: list = []
            _int_fields(node.get("xnode_union", {}), refs, "_id")
            for name, ref in refs:
                if name not in ("output_id", "bias_id") and ref in tensor_key:
                    readers[tensor_key[ref]] = readers.get(tensor_key[ref], 0) + 1
    stored = sum(sizes.values())
    packed = sum(sizes.get(k, 0) * (n - 1) for k, n in readers.items() if n > 1)
    if packed > 0.01 * stored:
        return False, (
            f"NOT shared in RAM: {packed:,} B of stored weights are packed again by further XNNPACK "
            f"operators ({stored:,} B stored; unrolled layers each pack their own copy, unless the runtime's "
            "XNNPACK weights cache is on); re-export with --pte-entry loop or both"
        )
    how = " (the shared layer is its own method, run once per layer)" if SCHEDULE_METHOD in names else ""
    return True, f"shared in RAM: each stored weight is packed once{how}"
