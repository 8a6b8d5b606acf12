"""An export folder opened for use without its checkpoint: manifest, checksums, labels, tokenizer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from .. import backends
from ..assets.labels import read_labels
from ..assets.manifest import Manifest
from ..core.choices import Backend
from ..core.errors import ArtifactLoadError, BadInputError
from ..core.files import LABELS, MANIFEST, TOKENIZER_DIR, TOKENIZER_JSON, TOKENIZER_SETTINGS
from ..core.fsutil import sha256_file
from ..core.tasks import TaskSpec, get_task


@dataclass(frozen=True)
class ArtifactEntry:
    """One artifact the manifest lists."""

    file: str
    backend: Backend
    quant: str
    entry: dict[str, Any]  # the manifest's entry (load, calling convention, ...)


@dataclass(frozen=True)
class ExportFolder:
    """What ``mobile-export export`` wrote into a folder, read back through its manifest."""

    path: Path
    manifest: Manifest
    task: TaskSpec
    artifacts: tuple[ArtifactEntry, ...]
    labels: tuple[str, ...]
    score_function: str  # softmax, sigmoid or none (text-classification)
    settings: dict[str, Any]  # tokenizer_settings.json

    def artifact(self, backend: Backend | None) -> ArtifactEntry:
        """The artifact of ``backend`` (the first listed when None); BadInputError naming those present."""
        for a in self.artifacts:
            if backend is None or a.backend is backend:
                return a
        have = ", ".join(a.backend.value for a in self.artifacts) or "none"
        raise BadInputError(
            f"{self.path} has no {backend.value if backend else ''} artifact (it has: {have}); "
            "pick one of those with --backend or export it with --backend"
        )

    def verified(self, relative: str) -> Path:
        """The path of a file the manifest lists, after checking its sha256 (exit 2 when changed or missing)."""
        listed = self.manifest.file(relative)
        path = self.path / relative
        if listed is None:
            raise BadInputError(f"{MANIFEST} in {self.path} does not list {relative}; export the folder again")
        if not path.is_file():
            raise ArtifactLoadError(f"{path} is missing; the export in {self.path} is incomplete, export it again")
        if sha256_file(path) != listed.sha256:
            raise ArtifactLoadError(
                f"{path}'s sha256 is not the one {MANIFEST} records (changed or corrupted after export); "
                "restore the file or export again"
            )
        return path

    def artifact_path(self, artifact: ArtifactEntry) -> Path:
        """The artifact's main file, every file of it checked against the manifest and its format."""
        info = backends.get_info(artifact.backend)
        main = self.verified(artifact.file)
        for extra in info.data_files:
            if (self.path / extra).exists() or self.manifest.file(extra) is not None:
                self.verified(extra)
        backends.open_artifact(main)
        return main

    @property
    def max_length(self) -> int:
        """The longest input the export takes (tokenizer_settings.json)."""
        return int(self.settings.get("max_length", 512))

    @cached_property
    def tokenizer(self) -> Any:
        """The export's tokenizer (``tokenizer/tokenizer.json``, the pipeline transformers ran), checksums
        checked; loaded once for every artifact of the folder."""
        from tokenizers import Tokenizer
        from transformers import PreTrainedTokenizerFast

        name = self.settings.get("files", {}).get("tokenizer", TOKENIZER_JSON)
        self.verified(f"{TOKENIZER_DIR}/{TOKENIZER_SETTINGS}")
        path = self.verified(f"{TOKENIZER_DIR}/{name}")
        try:
            backend = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises its own Exception type for a bad file
            raise ArtifactLoadError(f"{path} does not load as a tokenizer ({exc}); export the folder again") from None
        special = {f"{role}_token": v["token"] for role, v in self.settings.get("special_tokens", {}).items()}
        return PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=self.max_length, **special)


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInputError(f"{path} is not readable JSON ({type(exc).__name__}); {what}") from None


def open_export(folder: str | Path) -> ExportFolder:
    """Open the folder ``mobile-export export --out`` wrote; BadInputError (exit 2) if it is not one."""
    path = Path(folder)
    if not path.is_dir():
        raise BadInputError(f"{path} is not a folder; pass the --out folder of mobile-export export")
    again = "export the folder again"
    manifest = Manifest.read(path)
    from ..core.heads import HeadSpec, head_task

    task = head_task(get_task(manifest.task), HeadSpec.from_manifest(manifest.head))
    artifacts = []
    for entry in manifest.artifacts:
        try:
            backend = Backend(entry["backend"])
        except (KeyError, ValueError):
            continue  # a format this version does not know: listed, not usable here
        artifacts.append(ArtifactEntry(str(entry["file"]), backend, str(entry.get("quant", "")), dict(entry)))
    if not artifacts:
        raise BadInputError(f"{path / MANIFEST} lists no artifact this version can run; {again}")
    labels: tuple[str, ...] = ()
    function = "softmax"
    if task.has_labels:
        info = _read_json(path / LABELS, again) if (path / LABELS).is_file() else {}
        labels, function = read_labels(info)
    settings_path = path / TOKENIZER_DIR / TOKENIZER_SETTINGS
    if not settings_path.is_file():
        raise BadInputError(f"{path} has no {TOKENIZER_DIR}/{TOKENIZER_SETTINGS}; {again}")
    settings = _read_json(settings_path, again)
    return ExportFolder(path, manifest, task, tuple(artifacts), labels, function, settings)
