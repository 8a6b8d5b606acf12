"""ExecuTorch's .pte serializer, the private functions this package needs, wrapped in one place.

ExecuTorch 1.5.1 offers no public API to read a program's segments or to rewrite where they sit, so
these come from ``executorch.exir._serialize``; ``tests/test_pte_serializer.py`` fails loudly when a new
version changes them. What reads a file imports them without the compiler (``compiler_free``)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from .compiler_free import call_exir


def extended_header(head: bytes) -> Any | None:
    """The extended header of a .pte (program size, where segments start and how many bytes they hold),
    or None when the file has none; ``head`` is the file's first 64 bytes or more."""
    return call_exir("_serialize._program", "_get_extended_header", head)


def program_of(flatbuffer: bytes) -> Any:
    """The program table (``executorch.exir.schema.Program``) of a .pte's flatbuffer part."""
    return call_exir("_serialize._program", "_flatbuffer_to_program", flatbuffer)


def program_table(path: Path) -> tuple[Any | None, Any]:
    """(extended header or None, program table) of the .pte at ``path``, reading only the flatbuffer part."""
    with open(path, "rb") as f:
        header = extended_header(f.read(64))
        f.seek(0)
        data = f.read(header.program_size) if header is not None else f.read()
    return header, program_of(data)


def with_program(program: Any, segment_data: bytes) -> bytes:
    """A .pte of ``program`` (its segments already pointing into ``segment_data``) followed by that data."""
    from executorch.exir._serialize._program import (
        _ExtendedHeader,
        _insert_flatbuffer_header,
        _program_to_flatbuffer,
    )
    from executorch.exir._serialize.padding import aligned_size, pad_to

    flat = _program_to_flatbuffer(program)
    header_length = aligned_size(_ExtendedHeader.EXPECTED_LENGTH, flat.max_alignment)
    program_size = header_length + len(flat.data)
    segment_base = aligned_size(program_size, SEGMENT_ALIGNMENT)
    new_header = pad_to(
        _ExtendedHeader(
            program_size=program_size, segment_base_offset=segment_base, segment_data_size=len(segment_data)
        ).to_bytes(),
        header_length,
    )
    head = _insert_flatbuffer_header(flat.data, r"ET[0-9a-zA-Z][0-9a-zA-Z]", new_header)
    return head + b"\0" * (segment_base - len(head)) + bytes(segment_data)


SEGMENT_ALIGNMENT = 128  # ExecuTorch's default start alignment of a data segment


def aligned(size: int, alignment: int) -> int:
    """``size`` rounded up to a multiple of ``alignment``."""
    return call_exir("_serialize.padding", "aligned_size", size, alignment)


def read_program(path: Path) -> Any:
    """The deserialized .pte (program and named data). One command reads the same .pte several times
    (check, precision, coverage, size breakdown, memory verdict): the last two files decoded are kept,
    keyed by their path, size and modification time."""
    st = Path(path).stat()
    return _read_cached(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=2)
def _read_cached(path: str, size: int, mtime_ns: int) -> Any:
    return call_exir("_serialize._program", "deserialize_pte_binary", Path(path).read_bytes())


def decompile_flatbuffer(out_dir: str, schema: str, binary: str) -> None:
    """Decode ``binary`` with ``schema`` into JSON under ``out_dir`` (the flatc ExecuTorch ships)."""
    call_exir("_serialize._flatbuffer", "_flatc_decompile", out_dir, schema, binary)
