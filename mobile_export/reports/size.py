"""The ``size`` command: each artifact's size section (``measure.size.size_entry``), the model it was exported from
read from the export's report.json beside it, the card the artifact carries, or its checkpoint."""

from __future__ import annotations

import os
from pathlib import Path

from .. import backends
from ..assets.bundle import carried
from ..core.choices import Quant
from ..core.errors import ArtifactLoadError, BadInputError
from ..core.files import REPORT_JSON
from ..measure.budgets import budget_verdict, resolve_budget
from ..measure.size import SizeEntry, compiled_entry, precompiled_sizes, size_entry
from ..model.summary import config_summary
from .records import kept_fp32, mismatch


def size_inputs(path: Path, checkpoint: str | None) -> tuple[dict | None, str | None, bool, list[str]]:
    """(model summary, quant, int8 embeddings, Linears a repair kept fp32) from ``checkpoint``, the export's
    report.json beside it, or the card the artifact carries."""
    import json

    if checkpoint:
        from ..model.loading import read_config_dict, resolve_folder

        config = read_config_dict(resolve_folder(checkpoint))
        architecture = (config.get("architectures") or [None])[0]
        summary = {"config": config_summary(config), "architecture": architecture, "model_type": config["model_type"]}
        return summary, None, True, []
    report = path.parent / REPORT_JSON
    if report.is_file():
        try:
            r = json.loads(report.read_text(encoding="utf-8"))
            opts = r.get("options", {})
            entry = next((a for a in r["artifacts"] if a.get("file") == path.name), None)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise BadInputError(f"{report} is not a mobile-export report; pass --checkpoint instead") from None
        if mismatch(path.parent, path.name, entry.get("sha256") if entry else None) is not None:
            raise ArtifactLoadError(
                f"{report} does not describe this {path.name} (no entry, or its sha256 differs "
                "from the file's): pass --checkpoint, or keep the export folder as written"
            )
        return (
            r.get("model"),
            opts.get("quant"),
            bool(opts.get("int8_embeddings")),
            kept_fp32(r.get("repair"), path.name),
        )
    found = carried(path, str(path))  # a lone artifact: what it carries, its identity checked
    if found is not None:
        card = found[1]
        recorded = card.get("options")
        chosen: dict = recorded if isinstance(recorded, dict) else {}
        kept = card.get("kept_fp32")
        return (
            card.get("model") if isinstance(card.get("model"), dict) else None,
            chosen.get("quant"),
            bool(chosen.get("int8_embeddings")),
            [str(k) for k in kept] if isinstance(kept, list) else [],
        )
    return None, None, True, []


def size_report(
    artifacts: list[str | os.PathLike],
    checkpoint: str | None = None,
    quant: Quant | None = None,
    budgets: tuple[str, ...] | list[str] = (),
    measure: bool = True,
) -> list[SizeEntry]:
    """What each artifact's bytes are, whether sharing survived on disk and in RAM, and budget verdicts.

    Args:
        artifacts: .pte / .onnx / .ort files.
        checkpoint: the source checkpoint, when no export report.json sits beside an artifact.
        quant: how the artifacts were quantized (default: from report.json, else what the file stores).
        budgets: sizes (``15MB``) or store presets; each gives a verdict per artifact.
        measure: also load and run each artifact once in a fresh process to measure its RAM.

    Returns:
        One dict per artifact (see ``size.breakdown``), with ``memory`` and ``budgets``.
    """
    resolved = [resolve_budget(b) for b in budgets]
    entries = []
    for name in artifacts:
        backend, path = backends.open_artifact(name)  # checked before any runtime sees it
        if backends.get_info(backend).simulated:  # a file its device refuses (the simulator here) is not sized
            carried(path, path.name)  # its identity first: a precompiled file's weights are bytes no check reads
            backends.load(backend).Runner(path)
        made_for = backends.compiled_for(path)
        if made_for is not None:
            entry = compiled_entry(path, made_for["soc"], int(made_for["context_bytes"]))
            entry["budgets"] = [budget_verdict(entry["bytes"], entry["deflate_bytes"], b) for b in resolved]
            entries.append(entry)
            continue
        info, stored_quant, int8_embeddings, kept = size_inputs(path, checkpoint)
        chosen = quant or (Quant(stored_quant) if stored_quant else backends.detect_quant(path))
        positions = int((info or {}).get("config", {}).get("max_position_embeddings") or 128)
        entry = size_entry(path, info, chosen, int8_embeddings, positions, None, measure, kept)
        entry["budgets"] = [budget_verdict(entry["bytes"], entry["deflate_bytes"], b) for b in resolved]
        compiled = _precompiled_beside(path)
        if compiled:
            entry["precompiled"] = precompiled_sizes(entry, compiled)
        entries.append(entry)
    return entries


def _precompiled_beside(path: Path) -> list[dict]:
    """The files the export's report.json beside ``path`` says were compiled from it (``--soc``) and still are
    there, with their bytes as they are now."""
    import json

    report = path.parent / REPORT_JSON
    try:
        r = json.loads(report.read_text(encoding="utf-8")) if report.is_file() else {}
        entry: dict = next((a for a in r.get("artifacts", []) if a.get("file") == path.name), {})
        compiled = (entry.get("stats") or {}).get("precompiled") or []
    except (ValueError, AttributeError, TypeError):
        return []
    beside = [(c, path.parent / str(c.get("file"))) for c in compiled if isinstance(c, dict)]
    return [{**c, "bytes": f.stat().st_size} for c, f in beside if f.is_file()]
