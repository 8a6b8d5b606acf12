"""The private ExecuTorch serializer functions the .pte format wraps (``backends/executorch/serializer.py``):
a new ExecuTorch that renames or reshapes one fails here, by name, before any export is wrong."""

from __future__ import annotations

import inspect

from mobile_export.core.choices import Quant
from mobile_export.backends import Backend
from mobile_export.exporter.options import ExportOptions

# (module, name) -> the parameters the wrapper passes, as ExecuTorch 1.5.1 names them
PRIVATE = {
    ("executorch.exir._serialize._program", "_get_extended_header"): ["program_data"],
    ("executorch.exir._serialize._program", "_flatbuffer_to_program"): ["program_data"],
    ("executorch.exir._serialize._program", "_program_to_flatbuffer"): ["program", "constant_tensor_alignment",
                                                                        "delegate_alignment"],
    ("executorch.exir._serialize._program", "_insert_flatbuffer_header"): ["flatbuffer_data", "magic_regex",
                                                                           "header_data"],
    ("executorch.exir._serialize._program", "deserialize_pte_binary"): ["program_data"],
    ("executorch.exir._serialize._program", "_ExtendedHeader"): ["program_size", "segment_base_offset",
                                                                 "segment_data_size", "magic", "length"],
    ("executorch.exir._serialize.padding", "aligned_size"): ["input_size", "alignment"],
    ("executorch.exir._serialize.padding", "pad_to"): ["data", "length"],
    ("executorch.exir._serialize._flatbuffer", "_flatc_decompile"): ["output_dir", "schema_path", "bin_path",
                                                                     "flatc_additional_args"],
}


def test_private_serializer_functions_keep_their_signatures():
    import importlib

    changed = []
    for (module, name), params in PRIVATE.items():
        obj = getattr(importlib.import_module(module), name, None)
        if obj is None:
            changed.append(f"{module}.{name} is gone")
        elif list(inspect.signature(obj).parameters) != params:
            changed.append(f"{module}.{name}{inspect.signature(obj)} (expected {params})")
    assert not changed, "ExecuTorch's private serializer changed: " + "; ".join(changed)


def test_rewriting_a_pte_through_the_wrapper_keeps_it_identical(tiny_checkpoint, shared_export, tmp_path):
    """Header and program read back and written again with the same segments give the same file, which loads."""
    from mobile_export.backends.executorch import Runner
    from mobile_export.backends.executorch.serializer import program_table, with_program

    result = shared_export(tiny_checkpoint(), ExportOptions(backends=(Backend.EXECUTORCH,), quant=Quant.INT8,
                                                            measure_memory=False))
    path = result.out / "model.pte"
    data = path.read_bytes()
    header, program = program_table(path)
    assert header is not None and header.segment_data_size > 0
    again = with_program(program, data[header.segment_base_offset:])
    assert again == data
    copy = tmp_path / "again.pte"
    copy.write_bytes(again)
    Runner(copy)
