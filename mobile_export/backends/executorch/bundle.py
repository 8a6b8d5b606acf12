"""Strings a .pte carries as constant methods (as ``layer_schedule`` is one): each a method of no inputs returning
one ExecuTorch String, which Python's runtime and the Android ``Module`` (``execute(name)[0].toStr()``) run.

They are appended to the written program's table after lowering (lowering again with ``constant_methods`` would
double the export's time); the data segments do not move relative to their base, so the weights' bytes are the
ones parity checked."""

from __future__ import annotations

from pathlib import Path

from ...core.errors import ArtifactLoadError
from ...core.fsutil import write_bytes
from .serializer import extended_header, program_of, program_table, with_program

_LEAF = '[1, {"type": null, "context": null, "children_spec": []}]'  # pytree spec of a single value
MAX_PROGRAM_BYTES = 256 * 1024**2  # the program table (weights live in segments): far above any export's


def bundle(path: Path, values: dict[str, str]) -> None:
    """Rewrite the .pte at ``path`` with one constant method per entry of ``values`` (name -> string)."""
    from executorch.exir.schema import Chain, ContainerMetadata, EValue, ExecutionPlan, String

    data = path.read_bytes()
    header = extended_header(data)
    if header is None:
        raise ValueError(f"{path.name} has no extended header: nothing to append after")
    program = program_of(data[: header.program_size])
    taken = {p.name for p in program.execution_plan}
    for name, text in values.items():
        if name in taken:
            raise ValueError(f"{path.name} already has a method {name}")
        program.execution_plan.append(
            ExecutionPlan(
                name=name,
                container_meta_type=ContainerMetadata("", _LEAF),
                values=[EValue(String(text))],
                inputs=[],
                outputs=[0],
                chains=[Chain(inputs=[], outputs=[], instructions=[], stacktrace=None)],
                operators=[],
                delegates=[],
                non_const_buffer_sizes=[0],
            )
        )
    base = header.segment_base_offset
    write_bytes(path, with_program(program, data[base : base + header.segment_data_size]))


def bundled(path: Path) -> dict[str, str]:
    """The strings the .pte's constant methods return, by method name (methods returning other values left out)."""
    header, program = _table(path)
    found: dict[str, str] = {}
    for plan in program.execution_plan:
        if plan.inputs or len(plan.values) != 1 or plan.outputs != [0]:
            continue
        val = getattr(plan.values[0], "val", None)
        text = getattr(val, "string_val", None)
        if isinstance(text, str):
            found[plan.name] = text
    return found


def _table(path: Path):
    """The program table of the .pte, its size bounded before it is parsed."""
    with open(path, "rb") as f:
        header = extended_header(f.read(64))
    size = header.program_size if header is not None else path.stat().st_size
    if size > MAX_PROGRAM_BYTES:
        raise ArtifactLoadError(f"{path.name}'s program table is {size:,} B, over {MAX_PROGRAM_BYTES:,}")
    return program_table(path)
