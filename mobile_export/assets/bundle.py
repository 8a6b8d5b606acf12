"""The block an artifact carries inside itself: the export's card (task, labels, calling convention, golden
examples, identity of its checkpoint) and the tokenizer assets, as one deflated zip in base64 text.

Text because both runtimes hand strings to an app through their public API: a .pte's constant method returns
an ExecuTorch String (Android ``EValue.toStr()``), an .onnx's metadata is string to string
(``OrtSession.getMetadata().getCustomMetadata()``). Base64 has no NUL (the Python runtime reads an ExecuTorch
string as a C string) and never contains the identity marker's ``-`` or ``:`` (``identity``).

Read as untrusted input: every size is checked before the bytes are inflated, and member names must be plain
relative paths; anything else is one ``ArtifactLoadError`` line.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

from ..core.errors import ArtifactLoadError

ASSETS_KEY = "mobile_export_assets"  # the .pte's method / the .onnx's metadata key holding the block
IDENTITY_KEY = "mobile_export_identity"  # the artifact's own content hash (``identity``)
CARD = "card.json"  # what the folder's manifest says of this artifact, with its labels and model summary
CARD_SCHEMA = 1

MAX_TEXT_CHARS = 48 * 1024**2  # base64 of the block (the demo's is ~0.1 MB; a 250k-word vocabulary ~4 MB)
MAX_MEMBERS = 64
MAX_MEMBER_BYTES = 64 * 1024**2
MAX_TOTAL_BYTES = 160 * 1024**2
MAX_CARD_BYTES = 16 * 1024**2
_NAME = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*")
_EPOCH = (1980, 1, 1, 0, 0, 0)  # a fixed time in every member: the same assets give the same bytes


def _plain(name: str) -> bool:
    """A member name that is a plain relative POSIX path (no absolute path, no ``..``)."""
    return bool(_NAME.fullmatch(name)) and ".." not in name.split("/")


def pack(files: dict[str, bytes]) -> str:
    """``files`` (relative POSIX path -> bytes, ``CARD`` among them) as the block's text."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name in sorted(files):
            if not _plain(name):
                raise ValueError(f"{name!r} is not a plain relative path")
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, files[name], compresslevel=9)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def unpack(text: str, shown: str) -> dict[str, bytes]:
    """The files of a block, every limit checked first; ArtifactLoadError naming ``shown`` when it is broken."""
    bad = f"{shown} carries a broken bundle"
    again = "export it again, or use its export folder"
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
        size = len(text) if isinstance(text, str) else 0
        raise ArtifactLoadError(f"{bad} ({size:,} characters, over the {MAX_TEXT_CHARS:,} limit); {again}")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise ArtifactLoadError(f"{bad} (not base64); {again}") from None
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            members = z.infolist()
            if len(members) > MAX_MEMBERS:
                raise ArtifactLoadError(f"{bad} ({len(members)} members, over {MAX_MEMBERS}); {again}")
            total = sum(m.file_size for m in members)
            for m in members:
                if not _plain(m.filename):
                    raise ArtifactLoadError(f"{bad} (member {m.filename[:60]!r} is not a plain path); {again}")
                if m.file_size > MAX_MEMBER_BYTES or total > MAX_TOTAL_BYTES:
                    raise ArtifactLoadError(
                        f"{bad} ({m.filename} inflates to {m.file_size:,} B, {total:,} B in all; the limits are "
                        f"{MAX_MEMBER_BYTES:,} and {MAX_TOTAL_BYTES:,}); {again}"
                    )
            files = {m.filename: _read(z, m) for m in members}
    except ArtifactLoadError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise ArtifactLoadError(f"{bad} (not a readable zip: {type(exc).__name__}); {again}") from None
    if CARD not in files:
        raise ArtifactLoadError(f"{bad} (no {CARD}); {again}")
    return files


def _read(z: zipfile.ZipFile, member: zipfile.ZipInfo) -> bytes:
    """A member's bytes, never more than its declared size (a zip may lie about it)."""
    with z.open(member) as f:
        data = f.read(member.file_size + 1)
    if len(data) != member.file_size:
        raise ArtifactLoadError(f"bundled member {member.filename} is not the size its zip entry declares")
    return data


def read_card(files: dict[str, bytes], shown: str) -> dict[str, Any]:
    """The card of an unpacked block, checked to be a JSON object of bounded size."""
    raw = files[CARD]
    if len(raw) > MAX_CARD_BYTES:
        raise ArtifactLoadError(f"{shown}'s bundled {CARD} is {len(raw):,} B, over {MAX_CARD_BYTES:,}")
    try:
        card = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ArtifactLoadError(f"{shown}'s bundled {CARD} is not JSON; export it again") from None
    if not isinstance(card, dict):
        raise ArtifactLoadError(f"{shown}'s bundled {CARD} is not a JSON object; export it again")
    return card


def carried(path: Path, shown: str, check: bool = True) -> tuple[dict[str, bytes], dict[str, Any]] | None:
    """(files, card) the artifact at ``path`` carries, its identity checked first unless ``check`` is False;
    None when it carries no block (``--no-bundle``, an older export, an .ort)."""
    from .. import backends
    from .identity import verify

    strings = backends.load(backends.for_path(path)).bundled(path)
    if ASSETS_KEY not in strings or IDENTITY_KEY not in strings:
        return None
    if check:
        verify(backends.artifact_files(path), strings[IDENTITY_KEY], shown)
    files = unpack(strings[ASSETS_KEY], shown)
    return files, read_card(files, shown)
