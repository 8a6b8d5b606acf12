"""An export opened for use without its checkpoint: manifest, checksums, labels, tokenizer; from its folder, or from
one artifact that carries them (``export`` bundles them: ``assets.bundle``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from .. import backends
from ..assets.labels import read_labels
from ..assets.manifest import Manifest
from ..backends import Backend
from ..core.errors import ArtifactLoadError, BadInputError, first_line
from ..core.files import LABELS, MANIFEST, TOKENIZER_DIR, TOKENIZER_JSON, TOKENIZER_SETTINGS
from ..core.fsutil import sha256_file
from ..core.tasks import TaskSpec, get_task
from .tokenizer import ExportTokenizer


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
    bundle: dict[str, bytes] | None = None  # one artifact's own assets (checked by its identity); None: a folder
    single: Path | None = None  # that artifact

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

    def read(self, relative: str) -> bytes:
        """The bytes of an asset the export lists (``tokenizer/...``), checked: against the manifest in a folder,
        by the artifact's identity when it carries them."""
        if self.bundle is None:
            return self.verified(relative).read_bytes()
        if relative not in self.bundle:
            raise ArtifactLoadError(f"{self.single} carries no {relative}; export it again")
        return self.bundle[relative]

    def artifact_path(self, artifact: ArtifactEntry) -> Path:
        """The artifact's main file, every file of it checked against the manifest and its format."""
        if self.single is not None:
            return self.single  # checked when opened
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
    def tokenizer(self) -> ExportTokenizer:
        """The export's tokenizer (``tokenizer/tokenizer.json``, the pipeline transformers ran, read with the
        ``tokenizers`` package alone), checksums checked; loaded once for every artifact of the folder."""
        name = self.settings.get("files", {}).get("tokenizer", TOKENIZER_JSON)
        self.read(f"{TOKENIZER_DIR}/{TOKENIZER_SETTINGS}")
        relative = f"{TOKENIZER_DIR}/{name}"
        special = {role: v["token"] for role, v in self.settings.get("special_tokens", {}).items()}
        try:
            return ExportTokenizer(self.read(relative).decode("utf-8"), special)
        except (UnicodeDecodeError, Exception) as exc:  # tokenizers raises its own Exception type for a bad file
            where = self.single or self.path / relative
            raise ArtifactLoadError(
                f"{where}: {relative} does not load as a tokenizer ({first_line(exc)}); export it again"
            ) from None


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInputError(f"{path} is not readable JSON ({type(exc).__name__}); {what}") from None


def open_export(source: str | Path) -> ExportFolder:
    """Open the folder ``mobile-export export --out`` wrote, or one .pte / .onnx of it (which carries its assets);
    BadInputError (exit 2) if it is neither."""
    path = Path(source)
    if path.is_file():
        return open_artifact_file(path)
    if not path.is_dir():
        raise BadInputError(
            f"{path} is neither a folder nor a file; pass the --out folder of mobile-export export, or its "
            f"{' / '.join(_embedding_suffixes())} file"
        )
    again = "export the folder again"
    manifest = Manifest.read(path)
    labels: tuple[str, ...] = ()
    function = "softmax"
    info = _read_json(path / LABELS, again) if (path / LABELS).is_file() else {}
    settings_path = path / TOKENIZER_DIR / TOKENIZER_SETTINGS
    if not settings_path.is_file():
        raise BadInputError(f"{path} has no {TOKENIZER_DIR}/{TOKENIZER_SETTINGS}; {again}")
    settings = _read_json(settings_path, again)
    task, artifacts = _described(manifest, path)
    if task.has_labels:
        labels, function = read_labels(info)
    return ExportFolder(path, manifest, task, artifacts, labels, function, settings)


def open_artifact_file(path: Path) -> ExportFolder:
    """One .pte / .onnx opened with the assets it carries, its bytes checked against its identity first."""
    from ..assets.bundle import carried

    backend, real = backends.open_artifact(path)
    found = carried(real, str(path))
    if found is None:
        raise BadInputError(
            f"{path} carries no bundled assets (exported with --no-bundle, by an older version, or a "
            f"{backends.suffixes_where(lambda i: not i.bundles)}); pass its export folder instead"
        )
    files, card = found
    manifest = Manifest.from_json(card, path)
    for entry in manifest.files:  # the identity covers them; a mismatch here is a block built wrong
        if entry.path not in files:
            raise ArtifactLoadError(f"{path}'s bundled assets lack {entry.path}; export it again")
    task, artifacts = _described(manifest, path)
    if len(artifacts) != 1 or artifacts[0].backend is not backend:
        raise ArtifactLoadError(f"{path}'s bundled card does not describe a {backend.value} artifact; export it again")
    artifact = ArtifactEntry(real.name, backend, artifacts[0].quant, artifacts[0].entry)
    settings = _json_of(files, f"{TOKENIZER_DIR}/{TOKENIZER_SETTINGS}", path)
    labels: tuple[str, ...] = ()
    function = "softmax"
    if task.has_labels:
        labels, function = read_labels(_json_of(files, LABELS, path) if LABELS in files else {})
    return ExportFolder(real.parent, manifest, task, (artifact,), labels, function, settings, files, real)


def _described(manifest: Manifest, where: Path) -> tuple[TaskSpec, tuple[ArtifactEntry, ...]]:
    """The task (with the export's head) and the artifacts a manifest lists that this version can run."""
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
        raise BadInputError(f"{where} lists no artifact this version can run; export it again")
    return task, tuple(artifacts)


def _json_of(files: dict[str, bytes], name: str, where: Path) -> Any:
    """A bundled JSON asset, as a dict; ArtifactLoadError naming ``where`` when it is not one."""
    try:
        data = json.loads(files[name].decode("utf-8"))
    except KeyError:
        raise ArtifactLoadError(f"{where} carries no {name}; export it again") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ArtifactLoadError(f"{where}'s bundled {name} is not JSON; export it again") from None
    if not isinstance(data, dict):
        raise ArtifactLoadError(f"{where}'s bundled {name} is not a JSON object; export it again")
    return data


def _embedding_suffixes() -> list[str]:
    """The suffixes of the formats whose files carry their assets."""
    return [info.suffix for info in backends.BACKENDS.values() if info.bundles]
