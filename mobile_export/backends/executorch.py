"""ExecuTorch .pte with the XNNPACK delegate: export (PT2E int8 or fp32) and run in the ExecuTorch runtime."""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path

import numpy as np
import torch

from ..config import Quant
from ..errors import ArtifactLoadError, first_line
from ..reference import not_an_export


def RUNTIME_VERSION() -> str:
    from importlib.metadata import version

    return version("executorch")


class SigmoidGelu(torch.nn.Module):
    """gelu_new (tanh approximation) as ``x * sigmoid(x * (2a + 2ab x^2))``: the same function
    (0.5 (1 + tanh z) = sigmoid(2z); max difference 2e-15 in float64), in six ops XNNPACK takes; the
    textbook form's ``pow(x, 3)`` stays outside the delegate as a slow portable kernel and the form
    needs nine ops per layer."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x * (1.5957691216057308 + 0.0713548162726009 * (x * x)))


# gelu_new differs from the exact (erf) GELU by at most 4.8e-4; int8 weights and activations move
# the outputs far more than that, so int8 exports use XNNPACK's one-op GELU (one node per layer
# instead of six: smaller graph per layer, faster). fp32 exports keep the exact function.
GELU_NEW_VS_ERF_MAX_DIFF = 4.8e-4


class XnnpackLayerNorm(torch.nn.LayerNorm):
    """LayerNorm written with ops XNNPACK takes (ExecuTorch 1.5 has no XNNPACK layer-norm config, so
    ``native_layer_norm`` stayed outside the delegate and cut every layer into pieces).

    XNNPACK lowers ``mean`` only over the two inner dims of a 4D tensor (global average pooling), so
    the batch-1 input is normalised as ``[1, S, 1, H]``: the encoder keeps its hidden states in that
    shape (``_xnnpack_encoder_forward``); a ``[1, S, H]`` input is viewed there and back (static sizes
    and one ``-1``: a reshape XNNPACK takes with a dynamic sequence length)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        width = self.normalized_shape[-1]
        x4 = x if x.dim() == 4 else x.view(1, -1, 1, width)
        centred = x4 - x4.mean(dim=(2, 3), keepdim=True)
        var = (centred * centred).mean(dim=(2, 3), keepdim=True)
        y = centred * torch.rsqrt(var + self.eps)
        if self.weight is not None:
            y = y * self.weight
        if self.bias is not None:
            y = y + self.bias
        return y if x.dim() == 4 else y.view(1, -1, width)


def _xnnpack_attention_forward(self, hidden_states, attention_mask=None, **kwargs):
    """AlbertAttention for a batch of one, as 3D batched matmuls over the heads.

    Eager attention's 4D ``matmul`` becomes expand + reshape-with-symbolic-sizes + bmm, and XNNPACK takes
    no reshape with a symbolic size, so each layer fell apart into ~8 delegate calls. Here every
    reshape has static sizes and one ``-1``. ``hidden_states`` is ``[1, S, 1, hidden]`` and
    ``attention_mask`` the ``[1, 1, S]`` additive mask, both prepared by ``_xnnpack_encoder_forward``;
    the query weights carry the 1/sqrt(head size) scaling (``xnnpack_friendly``). Each projection reads
    its own view of the input: with one shared input the int8 export quantizes it once for all three,
    and the XNNPACK partitioner then cuts the layer in two after the projections, which leaves their
    outputs in the method's activation arena (+4.5 MiB for albert-base at 512 tokens).
    """
    heads, size = self.num_attention_heads, self.attention_head_size
    width = self.all_head_size
    q = self.query(hidden_states.view(-1, width)).view(-1, heads, size).permute(1, 0, 2)  # [H, S, D]
    k = self.key(hidden_states.view(1, -1, width)).view(-1, heads, size).permute(1, 2, 0)  # [H, D, S]
    v = self.value(hidden_states.view(-1, 1, width)).view(-1, heads, size).permute(1, 0, 2)  # [H, S, D]
    scores = torch.bmm(q, k)
    if attention_mask is not None:
        scores = scores + attention_mask
    probs = torch.softmax(scores, dim=-1)
    context = torch.bmm(probs, v).permute(1, 0, 2).contiguous().view(1, -1, 1, self.all_head_size)
    return self.LayerNorm(hidden_states + self.dense(context)), None


def _xnnpack_encoder_forward(self, hidden_states, attention_mask=None, **kwargs):
    """AlbertTransformer for a batch of one: the mask becomes ``[1, 1, S]`` additive once, and the hidden
    states stay ``[1, S, 1, hidden]`` through all layers (no reshapes inside a layer)."""
    from transformers.modeling_outputs import BaseModelOutput

    if attention_mask is not None:  # ExportWrapper's additive [1, 1, 1, S] float mask
        attention_mask = attention_mask[0]
    hidden = self.embedding_hidden_mapping_in(hidden_states)
    width = hidden.shape[-1]
    hidden = hidden.view(1, -1, 1, width)
    config = self.config
    for i in range(config.num_hidden_layers):
        group = int(i / (config.num_hidden_layers / config.num_hidden_groups))
        hidden = self.albert_layer_groups[group](hidden, attention_mask)
    return BaseModelOutput(last_hidden_state=hidden.view(1, -1, width))


def xnnpack_friendly(wrapper: torch.nn.Module, quant: Quant = Quant.FP32) -> tuple[torch.nn.Module, dict]:
    """A batch-1 copy of ``wrapper`` with the parts XNNPACK cannot take rewritten into ones it can.

    Same functions (for int8, gelu_new becomes the exact GELU: see ``GELU_NEW_VS_ERF_MAX_DIFF``), same
    (shared) parameters; returns (copy, counts of rewritten modules). Only for the .pte path, whose
    batch size is static 1.
    """
    import copy
    import types

    from transformers.activations import NewGELUActivation
    from transformers.models.albert.modeling_albert import AlbertAttention, AlbertTransformer

    wrapper = copy.deepcopy(wrapper)
    counts = {"gelu": 0, "layer_norm": 0, "attention": 0, "encoder": 0}
    for module in list(wrapper.modules()):
        for name, child in list(module.named_children()):
            if type(child) is NewGELUActivation:
                setattr(module, name, SigmoidGelu() if quant is Quant.FP32 else torch.nn.GELU())
                counts["gelu"] += 1
        if type(module) is torch.nn.LayerNorm and len(module.normalized_shape) == 1:
            module.__class__ = XnnpackLayerNorm
            counts["layer_norm"] += 1
        elif type(module) is AlbertAttention:
            module.forward = types.MethodType(_xnnpack_attention_forward, module)
            with torch.no_grad():  # fold the score scaling into the query projection
                module.query.weight.mul_(module.scaling)
                if module.query.bias is not None:
                    module.query.bias.mul_(module.scaling)
            counts["attention"] += 1
        elif type(module) is AlbertTransformer:
            module.forward = types.MethodType(_xnnpack_encoder_forward, module)
            counts["encoder"] += 1
    return wrapper, counts


KEY_HEX_CHARS = 16


class _ShortDigest:
    def __init__(self, digest) -> None:
        self._digest = digest

    def hexdigest(self) -> str:
        return self._digest.hexdigest()[:KEY_HEX_CHARS]


class _ShortSha256:
    """Stands in for ``hashlib`` in ExecuTorch's XNNPACK serializer: see ``short_constant_keys``."""

    @staticmethod
    def sha256(data=b""):
        import hashlib

        return _ShortDigest(hashlib.sha256(data))


@contextlib.contextmanager
def short_constant_keys():
    """Name XNNPACK's constants by 64 bits of their SHA-256 instead of all 256 while lowering.

    Every delegated call refers to each of its constants (weights, biases, per-channel scales) by that
    key. The keys only need to be unique within one file; ExecuTorch's named-data store refuses one
    key for two different blobs, so a collision would fail the export, never corrupt it.
    """
    from executorch.backends.xnnpack.operators import node_visitor

    original = node_visitor.hashlib
    node_visitor.hashlib = _ShortSha256
    try:
        yield
    finally:
        node_visitor.hashlib = original


# The .pte's calling convention (recorded in the manifest): ALBERT's layers share weights, so the
# program holds the shared layer once as its own method and the caller runs it once per layer.
EMBED_METHOD = "embed"
HEAD_METHOD = "head"
SCHEDULE_METHOD = "layer_schedule"
GROUP_METHOD = "layer_group_{}"
CALLING_CONVENTION = {
    "name": "albert-layer-loop/1",
    "methods": {
        EMBED_METHOD: "(input_ids, attention_mask, token_type_ids) int64 [1, S] -> (hidden float32 [1, S, 1, H], "
                      "mask float32 [1, 1, S] additive)",
        GROUP_METHOD.format("G"): "(hidden, mask) -> hidden: layer group G (ALBERT's shared layer)",
        HEAD_METHOD: "(hidden) -> the task's outputs",
        SCHEDULE_METHOD: "() -> one int per layer: which layer_group_G runs at that depth",
    },
    "loop": "hidden, mask = embed(ids, mask, types); for g in layer_schedule(): hidden = layer_group_g(hidden, mask); "
            "outputs = head(hidden)",
    "why": "every method's XNNPACK weights are packed once when the method loads: one method per shared layer "
           "keeps one packed copy in RAM however many layers run",
}


def usage(stats: dict) -> dict:
    """How an app loads and calls this export's .pte (recorded in manifest.json)."""
    return {"load": "memory-mapped: Android Module.load(path, Module.LOAD_MODE_MMAP); the file must be on disk",
            "calling_convention": CALLING_CONVENTION, "layer_schedule": stats.get("layer_schedule"),
            **({"kernels": f"{INT4_TABLE_OP} (ExecuTorch's quantized kernel library: executorch-android links it; "
                           "a custom runtime build must keep it)"} if stats.get("int4") else {})}


def stages(wrapper: torch.nn.Module, quant: Quant) -> tuple[dict[str, torch.nn.Module], list[int], dict]:
    """The XNNPACK-friendly copy of ``wrapper`` cut into methods (embed, one per layer group, head),
    the layer schedule, and the counts of rewritten modules."""
    from ..stages import cut, layer_schedule

    friendly, rewritten = xnnpack_friendly(wrapper, quant)
    embed, groups, head = cut(friendly.model, tuple(wrapper.output_names), batch_one=True)
    methods: dict[str, torch.nn.Module] = {EMBED_METHOD: embed}
    methods.update({GROUP_METHOD.format(g): group for g, group in enumerate(groups)})
    methods[HEAD_METHOD] = head
    return methods, layer_schedule(friendly.model.config), rewritten


def export(wrapper: torch.nn.Module, example: tuple[torch.Tensor, ...], dynamic_shapes: dict,
           quant: Quant, dest: Path, progress, group_size: int | None = None, int4_kernel: str | None = None) -> dict:
    """Export ``wrapper`` to ``dest`` (.pte) as the layer-loop program, lowered to XNNPACK; returns stats.

    int4 (``group_size`` inputs per scale): torchao's 8da4w on every Linear and a 4-bit word table
    (``quantize.xnnpack_int4``), applied before torch.export.
    ``int4_kernel`` is the .onnx's choice; XNNPACK has one 4-bit kernel."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.utils.configs import (
        get_xnnpack_edge_compile_config,
        get_xnnpack_executorch_backend_config,
    )
    from executorch.exir import to_edge_transform_and_lower

    methods, schedule, rewritten = stages(wrapper, quant)
    int4 = None
    if quant is Quant.INT4:
        from quantize.xnnpack_int4 import quantize_int4

        with progress.step(f"executorch: int4 weights (groups of {group_size}, torchao 8da4w)"):
            int4 = quantize_int4(torch.nn.ModuleDict(methods), group_size)
    seq = dynamic_shapes["input_ids"][1]
    examples = {EMBED_METHOD: example}
    with torch.no_grad():
        hidden, mask = methods[EMBED_METHOD](*example)
    dims = {EMBED_METHOD: dynamic_shapes}
    for name in methods:
        if name.startswith(GROUP_METHOD.format("")):
            examples[name] = (hidden, mask)
            dims[name] = {"hidden": {1: seq}, "mask": {2: seq}}
    examples[HEAD_METHOD] = (hidden,)
    dims[HEAD_METHOD] = {"hidden": {1: seq}}
    programs = {}
    with progress.step(f"executorch: torch.export of {len(methods)} methods"):
        for name, module in methods.items():
            programs[name] = torch.export.export(module, examples[name], dynamic_shapes=dims[name], strict=False)
    if quant is Quant.INT8:
        from quantize.pt2e import quantize_graph

        with progress.step("executorch: int8 PT2E quantization"):
            for name, ep in programs.items():
                gm = quantize_graph(ep.module(), [examples[name]])
                programs[name] = torch.export.export(gm, examples[name], dynamic_shapes=dims[name], strict=False)
    with progress.step("executorch: lowering to XNNPACK"), short_constant_keys():
        edge = to_edge_transform_and_lower(
            programs, partitioner=[XnnpackPartitioner()], compile_config=get_xnnpack_edge_compile_config(),
            constant_methods={SCHEDULE_METHOD: schedule},
        )
        program = edge.to_executorch(get_xnnpack_executorch_backend_config())
    with progress.step("executorch: writing .pte"):
        data, shared = share_stored_bytes(program.buffer)
        dest.write_bytes(data)
    delegates, outside = 0, set()
    for name in methods:
        graph = program.exported_program(name).graph_module.graph
        delegates += sum(1 for n in graph.nodes if n.op == "call_function" and "call_delegate" in str(n.target))
        outside |= {str(n.target) for n in graph.nodes if n.op == "call_function" and str(n.target).startswith("aten.")}
    return {"xnnpack_partitions": delegates, "ops_outside_delegate": sorted(outside),
            "shared_stored_bytes": shared, "rewritten_for_xnnpack": rewritten, **({"int4": int4} if int4 else {}),
            "methods": sorted(methods), "layer_schedule": schedule, "calling_convention": CALLING_CONVENTION["name"]}


SEGMENT_ALIGNMENT = 128  # ExecuTorch's default start alignment of a data segment
MAX_SEGMENT_ALIGNMENT = 4096


def share_stored_bytes(data: bytes) -> tuple[bytes, int]:
    """``data`` (a serialized .pte) with every XNNPACK weight that repeats a program constant stored once.

    The program keeps its constants (the embedding tables ``embed`` looks up) in one data segment, and
    XNNPACK's weights are named data, one segment each; ExecuTorch dedupes within each store, not
    across them. A fill-mask ALBERT reads its tied word-embedding table twice: looked up in ``embed``
    (a constant) and multiplied in ``head``'s decoder (an XNNPACK weight, the same int8 codes and the
    same per-row scales). Here a named-data segment whose bytes equal a constant's is pointed at that
    constant's bytes inside the constant segment and its own copy dropped; the other segments move up
    (each keeps its original start alignment). The runtime reads a segment by offset and size, so the
    two readers now map the same bytes.

    Returns:
        (the new file's bytes, how many bytes were dropped).
    """
    from executorch.exir._serialize._program import (
        _ExtendedHeader,
        _flatbuffer_to_program,
        _get_extended_header,
        _insert_flatbuffer_header,
        _program_to_flatbuffer,
    )
    from executorch.exir._serialize.padding import aligned_size, pad_to
    from executorch.exir.schema import DataSegment

    header = _get_extended_header(data)
    if header is None or header.segment_base_offset == 0:
        return data, 0
    program = _flatbuffer_to_program(data[:header.program_size])
    constants = program.constant_segment
    if not program.named_data or constants is None or not constants.offsets:
        return data, 0
    base, segments = header.segment_base_offset, program.segments

    def raw(segment) -> bytes:
        return data[base + segment.offset:base + segment.offset + segment.size]

    constant_bytes = raw(segments[constants.segment_index])
    starts = list(constants.offsets)
    regions: dict[int, list[int]] = {}  # padded length of a constant -> where such constants start
    for start, end in zip(starts, starts[1:] + [len(constant_bytes)]):
        if end > start:
            regions.setdefault(end - start, []).append(start)
    inside: dict[int, int] = {}  # named-data segment -> offset of its bytes within the constant segment
    for index in sorted({entry.segment_index for entry in program.named_data}):
        blob = raw(segments[index])
        if not blob or index == constants.segment_index:
            continue
        for padded in range(len(blob), len(blob) + MAX_SEGMENT_ALIGNMENT):
            hit = next((s for s in regions.get(padded, ()) if constant_bytes[s:s + len(blob)] == blob), None)
            if hit is not None:
                inside[index] = hit
                break
    if not inside:
        return data, 0
    order = sorted((i for i in range(len(segments)) if i not in inside), key=lambda i: segments[i].offset)
    body = bytearray()
    placed: dict[int, int] = {}
    for i in order:
        old = segments[i].offset
        alignment = max(SEGMENT_ALIGNMENT, min(MAX_SEGMENT_ALIGNMENT, old & -old if old else MAX_SEGMENT_ALIGNMENT))
        body += b"\0" * (aligned_size(len(body), alignment) - len(body))
        placed[i] = len(body)
        body += raw(segments[i])
    constant_start = placed[constants.segment_index]
    program.segments = [DataSegment(offset=constant_start + inside[i], size=s.size) if i in inside
                        else DataSegment(offset=placed[i], size=s.size) for i, s in enumerate(segments)]
    flat = _program_to_flatbuffer(program)
    header_length = aligned_size(_ExtendedHeader.EXPECTED_LENGTH, flat.max_alignment)
    program_size = header_length + len(flat.data)
    segment_base = aligned_size(program_size, SEGMENT_ALIGNMENT)
    new_header = pad_to(_ExtendedHeader(program_size=program_size, segment_base_offset=segment_base,
                                        segment_data_size=len(body)).to_bytes(), header_length)
    head = _insert_flatbuffer_header(flat.data, r"ET[0-9a-zA-Z][0-9a-zA-Z]", new_header)
    out = head + b"\0" * (segment_base - len(head)) + bytes(body)
    return out, len(data) - len(out)


def files(path: Path) -> list[Path]:
    """The artifact's files: the .pte holds everything."""
    return [path]


def _read(path: Path):
    """The deserialized program. One command reads the same .pte several times (check, precision,
    coverage, size breakdown, memory verdict): the last two files decoded are kept, keyed by their
    path, size and modification time."""
    st = Path(path).stat()
    return _read_cached(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _read_cached(path: str, size: int, mtime_ns: int):
    from executorch.exir._serialize._program import deserialize_pte_binary

    return deserialize_pte_binary(Path(path).read_bytes())


def _constant_sizes(program) -> dict[int, int]:
    """Bytes each constant buffer's tensor uses (its storage is padded to the segment's alignment)."""
    from executorch.exir.tensor import num_bytes_from_shape_and_dtype, scalar_type_table

    dtypes = {int(code): dtype for dtype, code in scalar_type_table.items()}
    sizes: dict[int, int] = {}
    for plan in program.execution_plan:
        for value in plan.values:
            t = value.val
            index = getattr(t, "data_buffer_idx", 0)
            if index > 0 and int(t.scalar_type) in dtypes:
                used = num_bytes_from_shape_and_dtype(torch.Size(t.sizes), dtypes[int(t.scalar_type)])
                sizes[index] = max(sizes.get(index, 0), used)
    return sizes


def blobs(path: Path) -> tuple[list[bytes], int]:
    """(weight/constant blobs, bytes of delegate graphs) stored in a .pte: each program constant, and
    each named-data segment that has bytes of its own (one that points into the constant segment,
    see ``share_stored_bytes``, is the constant's bytes and is not counted again)."""
    from executorch.exir._serialize._program import _flatbuffer_to_program, _get_extended_header

    pte = _read(path)
    used = _constant_sizes(pte.program)
    found = [bytes(c.storage)[:used.get(i, len(c.storage))] for i, c in enumerate(pte.program.constant_buffer)
             if len(c.storage)]
    graphs = sum(len(d.data) for d in pte.program.backend_delegate_data)
    if pte.named_data is None:
        return found, graphs
    with open(path, "rb") as f:
        head = f.read(64)
        header = _get_extended_header(head)
        f.seek(0)
        program = _flatbuffer_to_program(f.read(header.program_size))
        segments = program.segments
        constants = program.constant_segment
        within = segments[constants.segment_index] if constants is not None and constants.offsets else None
        for index in sorted({entry.segment_index for entry in program.named_data}):
            segment = segments[index]
            if within is not None and within.offset <= segment.offset < within.offset + within.size:
                continue
            f.seek(header.segment_base_offset + segment.offset)
            found.append(f.read(segment.size))
    return found, graphs


# Operators an export may run outside the XNNPACK delegate: table lookups, shape queries and copies
# that move or reshape data without arithmetic. Any other operator outside the delegate is compute
# that falls back to ExecuTorch's portable kernels (slow, and unquantized in an int8 artifact).
OUTSIDE_DELEGATE_ALLOWED = frozenset({
    "aten::embedding", "aten::sym_size", "aten::unsqueeze_copy", "aten::squeeze_copy", "aten::view_copy",
    "aten::slice_copy", "aten::select_copy", "aten::expand_copy", "aten::permute_copy", "aten::clone",
    "dim_order_ops::_to_dim_order_copy", "dim_order_ops::_clone_dim_order", "aten::_to_copy",
    "executorch_prim::et_view", "aten::split_with_sizes_copy", "aten::split_copy", "aten::unbind_copy",
    "quantized_decomposed::embedding_4bit",  # the 4-bit word table's lookup (int4)
})


def coverage(path: Path, quant: Quant) -> dict:
    """Operators each method runs outside the XNNPACK delegate, read from the .pte's execution plans;
    anything beyond ``OUTSIDE_DELEGATE_ALLOWED`` is a problem."""
    pte = _read(path)
    outside: dict[str, list[str]] = {}
    delegates = 0
    for plan in pte.program.execution_plan:
        delegates += len(plan.delegates)
        for op in plan.operators:
            outside.setdefault(op.name, []).append(plan.name)
    compute = sorted(op for op in outside if op not in OUTSIDE_DELEGATE_ALLOWED)
    problems = []
    if compute:
        problems.append(f"{len(compute)} compute operator(s) run outside the XNNPACK delegate "
                        f"({', '.join(f'{op} in {outside[op][0]}' for op in compute[:4])})")
    return {"xnnpack_calls": delegates, "ops_outside_delegate": sorted(outside),
            "compute_ops_outside_delegate": compute, "problems": problems}


PTE_IDENTIFIER = b"ET12"  # the flatbuffer file identifier of ExecuTorch programs, at byte 4


def check(path: Path, shown: str) -> None:
    """What the .pte must be before the ExecuTorch runtime sees it: the program identifier, data
    segments inside the file, a program Python's own flatbuffer reader can decode, the methods and
    inputs of an export; then one load with full verification in a child process, so a file that
    still crashes the native loader ends that child, not this process."""
    with open(path, "rb") as f:
        head = f.read(64)
    if head[4:8] != PTE_IDENTIFIER:
        hint = " (it looks like an ONNX model: rename it .onnx)" if head[:1] == b"\x08" else ""
        raise ArtifactLoadError(f"{shown} is not an ExecuTorch program (no '{PTE_IDENTIFIER.decode()}' identifier "
                                f"at byte 4){hint}; pass a .pte written by mobile-export export")
    from executorch.exir._serialize._program import _get_extended_header

    size = path.stat().st_size
    try:
        header = _get_extended_header(head)
    except Exception:
        header = None
    if header is not None and header.segment_base_offset + header.segment_data_size > size:
        raise ArtifactLoadError(f"{shown} is truncated: its data ends at byte "
                                f"{header.segment_base_offset + header.segment_data_size:,} but the file has "
                                f"{size:,}; download or export it again")
    try:
        pte = _read(path)
    except Exception as exc:
        raise ArtifactLoadError(f"{shown} is a damaged ExecuTorch program (it does not decode: "
                                f"{type(exc).__name__}); export it again") from None
    plans = {plan.name: plan for plan in pte.program.execution_plan}
    entry = plans.get(EMBED_METHOD) or plans.get("forward")
    if entry is None or (EMBED_METHOD in plans and not {HEAD_METHOD, SCHEDULE_METHOD} <= set(plans)):
        raise not_an_export(shown, f"its methods are {', '.join(sorted(plans)) or 'none'}")
    found = []
    for i in entry.inputs:
        v = entry.values[i].val
        found.append((type(v).__name__, getattr(v, "scalar_type", None), len(getattr(v, "sizes", []) or [])))
    if len(found) != 3 or any(k != "Tensor" or int(t) != 4 or r != 2 for k, t, r in found):  # 4: Long
        text = ", ".join(f"{k} (type {t}, rank {r})" for k, t, r in found) or "none"
        raise not_an_export(shown, f"method {entry.name} takes {text}")
    _probe_load(path, shown)


def _probe_load(path: Path, shown: str) -> None:
    """Load ``path`` with full verification in a child process (``_probe_child``): a native abort ends
    the child, not this process."""
    import subprocess
    import sys

    code = "import sys; from mobile_export.backends.executorch import _probe_child; _probe_child(sys.argv[1])"
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=600)
    if proc.returncode == 0:
        return
    if proc.returncode < 0:
        raise ArtifactLoadError(f"{shown} crashed the ExecuTorch loader (signal {-proc.returncode}) in a checking "
                                "process; the file is damaged: export it again")
    said = (proc.stdout.strip().splitlines() or ["no message"])[-1]
    raise ArtifactLoadError(f"{shown} does not load in the ExecuTorch runtime (strict verification): {said}; "
                            "export it again")


def _probe_child(path: str) -> None:
    """In the checking process: load every method as ``Runner`` does; on an error print it in one
    line and exit 3."""
    import sys

    try:
        Runner(Path(path))
    except Exception as exc:
        print(f"{type(exc).__name__}: {first_line(exc, 200)}")
        sys.exit(3)


INT4_TABLE_OP = "quantized_decomposed::embedding_4bit"


def _groups(path: Path) -> list[int]:
    """Group sizes of the XNNPACK 4-bit weights in a .pte."""
    found: list[int] = []
    for graph in _graphs(path):
        for value in graph.get("xvalues", []):
            union = value.get("xvalue_union", {})
            if union.get("tensor_value", {}).get("datatype") == "xnn_datatype_qbint4":
                found.append(int(union.get("quant_params", {}).get("group_size", 0)))
    return found


def int4_group_size(path: Path) -> int | None:
    """Inputs per scale of the 4-bit weights (the smallest, if several), read from the XNNPACK graphs."""
    found = [g for g in _groups(path) if g]
    return min(found) if found else None


def stored_quant(path: Path) -> Quant:
    """int4 when the program looks a 4-bit table up or XNNPACK holds 4-bit (blockwise) weights; int8 when
    the XNNPACK weights have per-channel scales (named ``scale_*``); fp32 otherwise."""
    pte = _read(path)
    keys = list(pte.named_data.pte_data) if pte.named_data is not None else []
    if any(op.name == INT4_TABLE_OP for plan in pte.program.execution_plan for op in plan.operators):
        return Quant.INT4
    if not any(k.startswith("scale_") for k in keys):
        return Quant.FP32
    return Quant.INT4 if _groups(path) else Quant.INT8


def _graphs(path: Path) -> list[dict]:
    """Every XNNPACK delegate graph of the .pte, decoded (cached like ``_read``)."""
    st = Path(path).stat()
    return _graphs_cached(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _graphs_cached(path: str, size: int, mtime_ns: int) -> list[dict]:
    pte = _read_cached(path, size, mtime_ns)
    return [_xnnpack_graph(bytes(d.data)) for d in pte.program.backend_delegate_data]


def _xnnpack_graph(blob: bytes) -> dict:
    """A delegate blob's XNNPACK graph as JSON (decoded by the flatc ExecuTorch ships, with its schema)."""
    import glob
    import json
    import os
    import tempfile

    from executorch.backends.xnnpack.serialization import xnnpack_graph_serialize
    from executorch.backends.xnnpack.serialization.xnnpack_graph_serialize import XNNHeader
    from executorch.exir._serialize._flatbuffer import _flatc_decompile

    header = XNNHeader.from_bytes(blob[:XNNHeader.EXPECTED_LENGTH])
    payload = blob[header.flatbuffer_offset:header.flatbuffer_offset + header.flatbuffer_size]
    with tempfile.TemporaryDirectory() as tmp:
        bin_path = os.path.join(tmp, "graph.bin")
        with open(bin_path, "wb") as f:
            f.write(payload)
        _flatc_decompile(tmp, os.path.join(os.path.dirname(xnnpack_graph_serialize.__file__), "schema.fbs"), bin_path)
        [out] = glob.glob(os.path.join(tmp, "*.json"))
        with open(out) as f:
            return json.load(f)


def _walk(value, found: list, key_suffix: str) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if k.endswith(key_suffix) and isinstance(v, int):
                found.append((k, v))
            _walk(v, found, key_suffix)
    elif isinstance(value, list):
        for v in value:
            _walk(v, found, key_suffix)


def memory_sharing(path: Path) -> tuple[bool, str]:
    """Whether running the program keeps one packed copy of each stored weight.

    XNNPACK packs a weight for every operator that reads it, when that operator's method loads. Read
    from the artifact: every XNNPACK graph's operators and the stored weight (named data) behind each
    constant they read. A weight read by N operators is packed N times: the unrolled-layer program
    packs ALBERT's shared layer once per layer. Biases are not counted: equal biases (all-zero ones of
    a freshly initialised model) are one stored blob read by unrelated operators, a few bytes each.
    """
    pte = _read(path)
    if pte.named_data is None:
        return True, "shared in RAM: no XNNPACK weights stored by name"
    sizes = {key: len(pte.named_data.buffers[entry.buffer_index]) for key, entry in pte.named_data.pte_data.items()}
    readers: dict[str, int] = {}
    for graph in _graphs(path):
        keys = [c.get("named_key", "") for c in graph.get("constant_data", [])]
        tensor_key: dict[int, str] = {}
        for value in graph.get("xvalues", []):
            ids, buffers = [], []
            _walk(value, ids, "id_out")
            _walk(value, buffers, "constant_buffer_idx")
            if ids and buffers and 0 < buffers[0][1] < len(keys) and keys[buffers[0][1]]:
                tensor_key[ids[0][1]] = keys[buffers[0][1]]
        for node in graph.get("xnodes", []):
            refs: list = []
            _walk(node.get("xnode_union", {}), refs, "_id")
            for name, ref in refs:
                if name not in ("output_id", "bias_id") and ref in tensor_key:
                    readers[tensor_key[ref]] = readers.get(tensor_key[ref], 0) + 1
    stored = sum(sizes.values())
    packed = sum(sizes.get(k, 0) * (n - 1) for k, n in readers.items() if n > 1)
    if packed > 0.01 * stored:
        return False, (f"NOT shared in RAM: {packed:,} B of stored weights are packed again by further XNNPACK "
                       f"operators ({stored:,} B stored; unrolled layers each pack their own copy); re-export "
                       "with this version")
    names = {plan.name for plan in pte.program.execution_plan}
    how = " (the shared layer is its own method, run once per layer)" if SCHEDULE_METHOD in names else ""
    return True, f"shared in RAM: each stored weight is packed once{how}"


_NOISE = (b"[cpuinfo_utils.cpp:",)


@contextlib.contextmanager
def _runtime_chatter_filtered():
    """The ExecuTorch runtime prints cpuinfo probing lines (``[cpuinfo_utils.cpp:71] Reading file ...``)
    on the process's stderr when it first initializes; catch file descriptor 2 while loading and pass
    every other line through, so real errors still show."""
    import os
    import sys
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            kept = [line for line in caught.read().splitlines(keepends=True) if not line.startswith(_NOISE)]
            if kept:
                os.write(2, b"".join(kept))


class Runner:
    """A .pte loaded by the ExecuTorch runtime, run through its calling convention.

    The layer-loop program (``embed``, ``layer_group_G``, ``head``, ``layer_schedule``) is what
    ``export`` writes; a single ``forward`` method (older exports, other tools) is run as it is.
    """

    def __init__(self, path: Path, threads: int | None = None, verification: str = "internal") -> None:
        with _runtime_chatter_filtered():
            self._load(path, threads, verification)

    def _load(self, path: Path, threads: int | None, verification: str) -> None:
        from executorch.runtime import Runtime, Verification

        import executorch.kernels.quantized  # noqa: F401  registers embedding_4bit (int4 tables) in the runtime
        if threads:
            from executorch.extension.pybindings import portable_lib

            portable_lib._unsafe_reset_threadpool(threads)
        level = Verification.InternalConsistency if verification == "internal" else Verification.Minimal
        self.program = Runtime.get().load_program(str(path), verification=level)
        names = self.program.method_names
        if EMBED_METHOD in names:
            schedule = [int(v) for v in self.program.load_method(SCHEDULE_METHOD).execute([])]
            self.embed = self.program.load_method(EMBED_METHOD)
            self.groups = {g: self.program.load_method(GROUP_METHOD.format(g)) for g in sorted(set(schedule))}
            self.schedule = schedule
            self.head = self.program.load_method(HEAD_METHOD)
            self.forward = None
        else:
            self.forward = self.program.load_method("forward")

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        from ..reference import INPUT_NAMES

        inputs = [torch.from_numpy(np.ascontiguousarray(feeds[n], dtype=np.int64)) for n in INPUT_NAMES]
        if self.forward is not None:
            outputs = self.forward.execute(inputs)
        else:
            hidden, mask = self.embed.execute(inputs)
            for g in self.schedule:
                (hidden,) = self.groups[g].execute([hidden, mask])
            outputs = self.head.execute([hidden])
        return [o.detach().numpy().copy() for o in outputs]
