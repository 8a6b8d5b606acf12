"""manifest.json: what an app needs from an export (files with checksums, how to load and call each
artifact, golden examples)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import backends
from ..core.fsutil import sha256_file

if TYPE_CHECKING:
    from ..model.loading import LoadedModel
    from ..parity.artifact import ArtifactResult
    from ..parity.checker import Tally

MANIFEST_SCHEMA = 2


def build_manifest(
    staging: Path, names: list[str], loaded: LoadedModel, run: Tally, results: list[ArtifactResult]
) -> dict[str, Any]:
    """What an app needs: files with checksums, how to load and call each artifact, golden examples."""
    artifacts = []
    for r in results:
        usage = dict(backends.load(r.backend).usage(r.stats))
        tolerance = max(4 * r.parity.max_abs_diff, 1e-4)  # what this export measured, with room for other CPUs
        artifacts.append(
            {
                "file": r.file,
                "backend": r.backend.value,
                "quant": r.quant.value,
                **usage,
                "self_test_max_abs_diff": float(f"{tolerance:.3g}"),
            }
        )
    files = []
    for name in names:
        path = staging / name
        paths = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for p in paths:
            files.append(
                {"path": p.relative_to(staging).as_posix(), "bytes": p.stat().st_size, "sha256": sha256_file(p)}
            )
    return {
        "schema_version": MANIFEST_SCHEMA,
        "task": loaded.task.name,
        "outputs": list(loaded.task.outputs),
        "head": loaded.task.head,
        "artifacts": artifacts,
        "files": files,
        "golden": run.golden,
    }
