"""``mobile-export report DIR``: the human reports rebuilt from ``DIR/report.json``, once the artifacts beside it are
the ones it describes."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import BadInputError
from ..core.files import REPORT_JSON
from .records import ReportRecord, mismatch
from .render import write_reports


def regenerate(folder: Path) -> list[str]:
    """``mobile-export report DIR``: rebuild the human reports from DIR/report.json."""
    path = folder / REPORT_JSON
    if not path.is_file():
        raise BadInputError(f"{path} does not exist; pass a folder written by `mobile-export export` or `parity`")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        files = [(a.file, a.result.sha256) for a in ReportRecord.from_json(report).artifacts]
    except (ValueError, KeyError, TypeError):
        raise BadInputError(f"{path} is not a mobile-export report; re-run the export or parity command") from None
    for name, digest in files:  # the report must describe the artifacts beside it
        f = folder / Path(name).name
        found = mismatch(folder, name, digest) if f.exists() else None
        if found is not None:
            raise BadInputError(
                f"{path} describes a different {f.name} (sha256 {digest[:12]}..., {found}); "
                "re-run the export or parity command"
            )
    return write_reports(report, folder)
