"""An artifact's own content hash, carried inside it: ``mobile-export-sha256:`` and 64 hex digits.

The export writes the value as zeros, hashes the artifact's files (the main file, then its data files), and
writes the digest over the zeros: the same length, so nothing else moves. Checking it reverses that: the
value's digits are read as zeros again and the files re-hashed. Everything else is covered, the bundled
assets included. Both passes stream, so memory does not grow with the file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..core.errors import ArtifactLoadError

MARKER = "mobile-export-sha256:"
DIGITS = 64
PLACEHOLDER = MARKER + "0" * DIGITS
_CHUNK = 1 << 20


def _find(path: Path, needle: bytes) -> list[int]:
    """Where ``needle`` starts in the file, read in chunks (at most two places are looked for)."""
    found: list[int] = []
    tail = b""
    offset = 0  # file offset of ``tail``'s first byte
    with open(path, "rb") as f:
        while len(found) < 2:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            window = tail + chunk
            start = 0
            while (hit := window.find(needle, start)) >= 0:  # the kept tail is shorter than a match: none twice
                found.append(offset + hit)
                start = hit + 1
            keep = min(len(window), len(needle) - 1)
            offset += len(window) - keep
            tail = window[len(window) - keep :] if keep else b""
    return found


def _digest(files: list[Path], digits_at: int) -> str:
    """sha256 of ``files`` in order, the first file's ``DIGITS`` bytes at ``digits_at`` read as ASCII zeros."""
    h = hashlib.sha256()
    zeros = b"0" * DIGITS
    for n, path in enumerate(files):
        position = 0
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                if n == 0 and position < digits_at + DIGITS and digits_at < position + len(chunk):
                    buf = bytearray(chunk)
                    lo, hi = max(digits_at, position), min(digits_at + DIGITS, position + len(chunk))
                    buf[lo - position : hi - position] = zeros[lo - digits_at : hi - digits_at]
                    chunk = bytes(buf)
                h.update(chunk)
                position += len(chunk)
    return h.hexdigest()


def stamp(files: list[Path]) -> str:
    """Write the digest of ``files`` over the placeholder the first one carries (once); returns the value."""
    hits = _find(files[0], PLACEHOLDER.encode())
    if len(hits) != 1:
        raise ValueError(f"{files[0].name} carries the identity placeholder {len(hits)} times, not once")
    digits_at = hits[0] + len(MARKER)
    digest = _digest(files, digits_at)
    with open(files[0], "r+b") as f:
        f.seek(digits_at)
        f.write(digest.encode("ascii"))
    return MARKER + digest


def restamp(path: Path, carried: str) -> str:
    """The file at ``path``, which carries another file's identity ``carried`` (a file derived from a stamped one),
    given its own: ``carried`` overwritten by the placeholder (the same length), then stamped; returns the value."""
    hits = _find(path, carried.encode())
    if len(hits) != 1:
        raise ValueError(f"{path.name} carries the identity {carried[:32]}... {len(hits)} times, not once")
    with open(path, "r+b") as f:
        f.seek(hits[0])
        f.write(PLACEHOLDER.encode())
    return stamp([path])


def verify(files: list[Path], value: str, shown: str) -> None:
    """Refuse (ArtifactLoadError) files whose bytes are not the ones the carried ``value`` was computed over."""
    digits = value[len(MARKER) :] if isinstance(value, str) and value.startswith(MARKER) else ""
    if len(digits) != DIGITS or any(c not in "0123456789abcdef" for c in digits):
        raise ArtifactLoadError(f"{shown} carries a malformed identity ({str(value)[:40]!r}); export it again")
    hits = _find(files[0], (MARKER + digits).encode())
    if len(hits) != 1:
        raise ArtifactLoadError(f"{shown} carries its identity {len(hits)} times, not once; export it again")
    actual = _digest(files, hits[0] + len(MARKER))
    if actual != digits:
        what = shown + "".join(f" with {f.name}" for f in files[1:])
        raise ArtifactLoadError(
            f"{what} hashes to sha256 {actual[:16]}..., not the {digits[:16]}... it carries (changed or corrupted "
            "after export); restore it or export again"
        )
