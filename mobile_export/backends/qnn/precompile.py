"""The NPU file precompiled for named SoCs (``--soc``): QNN compiles the QDQ model for each SoC's HTP into an
EPContext model (one file, the context binary inside it), which an app loads without compiling on the phone. Each
is checked on the simulator as its SoC against the QDQ model compiled there: the same outputs, bit for bit."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ...core.errors import ExportFailedError
from .options import QnnOptions
from .socs import Soc, parse_socs
from ...core.fsutil import write_bytes
from . import htp
from .metadata import META_KEY, facts
from .runner import QnnRunner as Runner


def _own_facts(path: Path, soc: Soc) -> None:
    """Record in the compiled file which SoC it is for (it carries the QDQ model's metadata, identity included: the
    export gives it its own, ``exporter.precompiled``)."""
    import onnx

    model = onnx.load(str(path))
    for p in model.metadata_props:
        if p.key == META_KEY:
            p.value = json.dumps({**json.loads(p.value), "compiled_for": soc.name, "htp_arch": soc.htp_arch})
    write_bytes(path, model.SerializeToString())


def _same_outputs(compiled: Runner, source: Runner, feeds, shown: str, path: Path, soc: Soc) -> None:
    for f in feeds:
        if not all(np.array_equal(a, b) for a, b in zip(compiled.run(f), source.run(f))):
            raise ExportFailedError(
                f"{shown} gives other outputs than {path.name} on the HTP simulator as {soc.name}; rerun with "
                "--debug and report it"
            )


def targets(options: QnnOptions) -> tuple[str, ...]:
    """The SoCs the export's ``--soc`` names (none: only the portable QDQ model)."""
    return tuple(soc.name for soc in parse_socs(options.soc.split(",") if options.soc else ()))


def precompile(path: Path, options: QnnOptions, feeds: Sequence[dict[str, np.ndarray]]) -> list[dict]:
    """Each SoC of ``options.soc`` (``SM8650,SM8750``) its precompiled file beside the NPU file at ``path``, checked
    on ``feeds`` (one text each) against the QDQ model on the same SoC's simulator; what each is (the manifest's
    entries). ExportFailedError if one differs."""
    entries = []
    for soc in parse_socs(targets(options)):
        dest = path.with_name(soc.file_name)
        dest.unlink(missing_ok=True)  # QNN refuses to write over a compiled file
        try:
            t0 = time.perf_counter()
            htp.compile_context(path, dest, soc)
            compile_seconds = time.perf_counter() - t0
            _own_facts(dest, soc)
            t1 = time.perf_counter()
            compiled = Runner(dest, soc=soc)
            load_seconds = time.perf_counter() - t1
            _same_outputs(compiled, Runner(path, soc=soc), feeds, f"{dest.name} (compiled for {soc.name})", path, soc)
        except BaseException:
            dest.unlink(missing_ok=True)  # nothing half-checked stays
            raise
        entries.append(
            {
                "soc": soc.name,
                "device": f"{soc.name} ({soc.marketing}, HTP v{soc.htp_arch})",
                "name": soc.marketing,
                "htp_arch": soc.htp_arch,
                "soc_model": soc.soc_model,
                "file": dest.name,
                "bytes": dest.stat().st_size,
                "compile_seconds": round(compile_seconds, 2),
                "load_seconds": round(load_seconds, 3),
                "checked_texts": len(feeds),
            }
        )
    return entries


def compiled_for(path: Path) -> dict | None:
    """A precompiled file's SoC and the bytes of its context binary (the weights are inside it), None for a file
    not compiled (the QDQ model itself) (``base.Precompiling``)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    soc = facts(model).get("compiled_for")
    if not soc:
        return None
    context = sum(
        len(a.s)
        for n in model.graph.node
        if n.op_type == "EPContext"
        for a in n.attribute
        if a.name == "ep_cache_context"
    )
    return {"soc": str(soc), "context_bytes": context}
