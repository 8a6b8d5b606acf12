"""Test helpers: an export's artifact copied with the strings it carries replaced (a crafted bundle), its
identity stamped again so that only the block is what a reader can object to."""

from __future__ import annotations

import shutil
from pathlib import Path

from mobile_export import backends
from mobile_export.assets.bundle import ASSETS_KEY, IDENTITY_KEY
from mobile_export.assets.identity import MARKER, PLACEHOLDER, stamp


def with_strings(src: Path, dest: Path, values: dict[str, str], restamp: bool = True) -> Path:
    """``src`` (a .pte or .onnx that carries strings) copied to ``dest`` with ``values`` in place of its own."""
    values = {**values, IDENTITY_KEY: values.get(IDENTITY_KEY, PLACEHOLDER)}
    if src.suffix == ".pte":
        from mobile_export.backends.executorch.serializer import extended_header, program_of, with_program

        data = src.read_bytes()
        header = extended_header(data)
        program = program_of(data[: header.program_size])
        for plan in program.execution_plan:
            if plan.name in values:
                plan.values[0].val.string_val = values[plan.name]
        base = header.segment_base_offset
        dest.write_bytes(with_program(program, data[base : base + header.segment_data_size]))
        files = [dest]
    else:
        import onnx

        model = onnx.load(str(src), load_external_data=False)
        for p in model.metadata_props:
            if p.key in values:
                p.value = values[p.key]
        dest.write_bytes(model.SerializeToString())
        shutil.copy(src.with_name(src.name + ".data"), dest.with_name(dest.name + ".data"))
        files = [dest, dest.with_name(dest.name + ".data")]
    if restamp and values[IDENTITY_KEY] == PLACEHOLDER:
        stamp(files)
    return dest


def copy_alone(src: Path, folder: Path) -> Path:
    """``src`` (and its data file) copied into ``folder``, nothing else beside it; returns the copy."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, folder / src.name)
    data = src.with_name(src.name + ".data")
    if data.is_file():
        shutil.copy(data, folder / data.name)
    return folder / src.name


def restamp(path: Path) -> Path:
    """An artifact a test changed after export (drifted weights, a tampered graph) with its identity computed
    again: consistent with itself, as a faulty export would be, so that only parity's gate can object to it."""
    value = backends.load(backends.for_path(path)).bundled(path)[IDENTITY_KEY]
    data = path.read_bytes()
    at = data.index(value.encode()) + len(MARKER)
    path.write_bytes(data[:at] + PLACEHOLDER[len(MARKER) :].encode() + data[at + len(value) - len(MARKER) :])
    stamp(backends.artifact_files(path))
    return path


def without_strings(path: Path) -> Path:
    """The .onnx at ``path`` (one file) without the strings an export bundles: a file another tool wrote."""
    import onnx

    model = onnx.load(str(path))
    kept = [p for p in model.metadata_props if p.key not in (ASSETS_KEY, IDENTITY_KEY)]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    onnx.save(model, str(path))
    return path
