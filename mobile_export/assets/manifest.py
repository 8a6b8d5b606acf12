"""manifest.json, the file an app reads first: every file of the export with its checksum, how to load and call
each artifact, and golden examples. Written and read by ``Manifest`` alone."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ArtifactLoadError, BadInputError
from ..core.files import MANIFEST
from ..core.fsutil import sha256_file, write_json

MANIFEST_SCHEMA = 2


@dataclass(frozen=True)
class FileEntry:
    """One file of the export (``path`` relative to its folder, POSIX separators)."""

    path: str
    bytes: int
    sha256: str

    @classmethod
    def of(cls, folder: Path, path: Path) -> FileEntry:
        """The entry of ``path`` inside ``folder``, its checksum computed."""
        return cls(path.relative_to(folder).as_posix(), path.stat().st_size, sha256_file(path))


@dataclass(frozen=True)
class Manifest:
    """What an app needs from an export: the task and its outputs, the head it was exported with, per artifact
    how to load and call it (``artifacts``: each format's ``usage`` with file, backend, quant and the self-test
    tolerance), every file with its checksum, golden inputs with their ids and fp32 outputs."""

    task: str
    outputs: tuple[str, ...]
    head: dict[str, Any] | None
    artifacts: tuple[dict[str, Any], ...]
    files: tuple[FileEntry, ...]
    golden: tuple[dict[str, Any], ...] = field(default=())
    schema_version: int = MANIFEST_SCHEMA

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "task": self.task,
            "outputs": list(self.outputs),
            "head": self.head,
            "artifacts": list(self.artifacts),
            "files": [{"path": f.path, "bytes": f.bytes, "sha256": f.sha256} for f in self.files],
            "golden": list(self.golden),
        }

    @classmethod
    def from_json(cls, d: Any, where: Path) -> Manifest:
        """The manifest ``to_json`` wrote; BadInputError (exit 2) naming ``where`` when ``d`` is not one."""
        again = "export the folder again"
        if not isinstance(d, dict) or "task" not in d or "artifacts" not in d:
            raise BadInputError(f"{where} is not a mobile-export manifest (no task or artifacts); {again}")
        try:
            files = tuple(FileEntry(str(f["path"]), int(f["bytes"]), str(f["sha256"])) for f in d.get("files", []))
            artifacts = tuple(dict(a) for a in d["artifacts"])
        except (KeyError, TypeError, ValueError):
            raise BadInputError(f"{where} has a malformed file or artifact entry; {again}") from None
        head = d.get("head")
        return cls(
            str(d["task"]),
            tuple(d.get("outputs") or ()),
            head if isinstance(head, dict) else None,
            artifacts,
            files,
            tuple(d.get("golden") or ()),
            int(d.get("schema_version", MANIFEST_SCHEMA)),
        )

    @classmethod
    def read(cls, folder: Path) -> Manifest:
        """The manifest.json in ``folder``; BadInputError (exit 2) when it is missing or not one."""
        path = folder / MANIFEST
        if not path.is_file():
            raise BadInputError(
                f"{folder} is not an export folder (no {MANIFEST}); pass the --out folder of mobile-export export"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadInputError(
                f"{path} is not readable JSON ({type(exc).__name__}); export the folder again"
            ) from None
        return cls.from_json(data, path)

    def write(self, folder: Path) -> None:
        """manifest.json in ``folder`` (written to a temporary name, then renamed)."""
        write_json(folder / MANIFEST, self.to_json())

    def file(self, relative: str) -> FileEntry | None:
        """The entry of the file at ``relative``, None when the manifest does not list it."""
        return next((f for f in self.files if f.path == relative), None)


def file_entries(folder: Path, names: list[str]) -> tuple[FileEntry, ...]:
    """The entry of every file named in ``names`` inside ``folder``, a folder's files each (sorted)."""
    entries = []
    for name in names:
        path = folder / name
        for p in sorted(q for q in path.rglob("*") if q.is_file()) if path.is_dir() else [path]:
            entries.append(FileEntry.of(folder, p))
    return tuple(entries)


def check_beside(files: list[Path], shown: str) -> None:
    """Refuse an artifact whose files differ from what the manifest.json beside them records (ArtifactLoadError,
    one line naming the file and both sha256); a folder without a readable manifest, or whose manifest does not
    list the file, says nothing either way."""
    folder = files[0].parent
    try:
        manifest = Manifest.read(folder)
    except BadInputError:
        return
    for path in files:
        listed = manifest.file(path.name)
        if listed is None:
            continue
        actual = sha256_file(path)
        if actual != listed.sha256:
            what = shown if path == files[0] else f"{path} (part of {shown})"
            raise ArtifactLoadError(
                f"{what} has sha256 {actual[:16]}..., not the {listed.sha256[:16]}... the {MANIFEST} beside it "
                "records (changed or corrupted after export); restore it or export again, or pass --ignore-manifest "
                "to check it anyway"
            )


def recorded_head(folder: Path) -> dict | None:
    """The head the manifest.json in ``folder`` records; None without a readable manifest that records one."""
    try:
        return Manifest.read(folder).head
    except BadInputError:
        return None
