"""Where a .pte keeps its bytes: data segments, the constants inside them, and stored bytes shared."""

from __future__ import annotations

from pathlib import Path

from .compiler_free import call_exir, exir_attribute
from .serializer import (
    SEGMENT_ALIGNMENT,
    aligned,
    extended_header,
    program_of,
    program_table,
    read_program,
    with_program,
)

MAX_SEGMENT_ALIGNMENT = 4096


def files(path: Path) -> list[Path]:
    """The artifact's files: the .pte holds everything."""
    return [path]


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
    from executorch.exir.schema import DataSegment

    header = extended_header(data)
    if header is None or header.segment_base_offset == 0:
        return data, 0
    program = program_of(data[: header.program_size])
    constants = program.constant_segment
    if not program.named_data or constants is None or not constants.offsets:
        return data, 0
    base, segments = header.segment_base_offset, program.segments

    def raw(segment) -> bytes:
        return data[base + segment.offset : base + segment.offset + segment.size]

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
            hit = next((s for s in regions.get(padded, ()) if constant_bytes[s : s + len(blob)] == blob), None)
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
        body += b"\0" * (aligned(len(body), alignment) - len(body))
        placed[i] = len(body)
        body += raw(segments[i])
    constant_start = placed[constants.segment_index]
    program.segments = [
        DataSegment(offset=constant_start + inside[i], size=s.size)
        if i in inside
        else DataSegment(offset=placed[i], size=s.size)
        for i, s in enumerate(segments)
    ]
    out = with_program(program, bytes(body))
    return out, len(data) - len(out)


def _constant_sizes(program) -> dict[int, int]:
    """Bytes each constant buffer's tensor uses (its storage is padded to the segment's alignment)."""
    import torch  # the runtime's own torch; imported here so that the package loads without it (its options, --help)

    dtypes = {int(code): dtype for dtype, code in exir_attribute("tensor", "scalar_type_table").items()}
    sizes: dict[int, int] = {}
    for plan in program.execution_plan:
        for value in plan.values:
            t = value.val
            index = getattr(t, "data_buffer_idx", 0)
            if index > 0 and int(t.scalar_type) in dtypes:
                used = call_exir(
                    "tensor", "num_bytes_from_shape_and_dtype", torch.Size(t.sizes), dtypes[int(t.scalar_type)]
                )
                sizes[index] = max(sizes.get(index, 0), used)
    return sizes


def blobs(path: Path) -> tuple[list[bytes], int]:
    """(weight/constant blobs, bytes of delegate graphs) stored in a .pte: each program constant, and
    each named-data segment that has bytes of its own (one that points into the constant segment,
    see ``share_stored_bytes``, is the constant's bytes and is not counted again)."""
    pte = read_program(path)
    used = _constant_sizes(pte.program)
    found = [
        bytes(c.storage)[: used.get(i, len(c.storage))]
        for i, c in enumerate(pte.program.constant_buffer)
        if len(c.storage)
    ]
    graphs = sum(len(d.data) for d in pte.program.backend_delegate_data)
    if pte.named_data is None:
        return found, graphs
    header, program = program_table(path)
    if header is None:  # named data lives in segments, which only a file with an extended header has
        return found, graphs
    with open(path, "rb") as f:
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
