"""Files are written under a temporary name and renamed into place; nothing half-written survives."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from .errors import OutputError

STAGING_PREFIX = ".mobile-export-staging-"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_json(path: Path, data, compact: bool = False) -> None:
    """Write JSON to a temporary file beside ``path``, then rename it into place."""
    text = (
        json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        if compact
        else json.dumps(data, indent=2, ensure_ascii=False)
    )
    write_bytes(path, (text + "\n").encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; exports are ordinary files
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def prepare_destination(out: Path, overwrite: bool) -> None:
    """Check that ``out`` can take an export: absent, empty, or ``overwrite`` given; and writable. A folder this
    check makes to try is removed again: nothing is left if the export fails before it writes (``make_staging``
    makes it for good)."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"--out {out} is a file; pass a folder")
    if out.is_dir() and any(p for p in out.iterdir() if not p.name.startswith(STAGING_PREFIX)) and not overwrite:
        raise OutputError(f"--out {out} is not empty; pass --overwrite to replace its export, or choose another folder")
    made = [p for p in (out, *out.parents) if not p.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=out, prefix=".mobile-export-probe-", delete=True)
        probe.close()
    except OSError as exc:
        raise OutputError(f"cannot write to --out {out} ({exc.strerror or exc}); choose a writable folder") from None
    finally:
        remove_empty(made)


def remove_empty(folders: list[Path]) -> None:
    """Remove each of ``folders`` (innermost first) that exists and is empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # absent, or not empty: it stays
            pass


_DISK_ERRNOS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}


def disk_error(exc: BaseException, out: Path) -> OutputError | None:
    """An OutputError for a write failure of the destination (full, read-only, no permission), else None."""
    if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:
        return OutputError(
            f"cannot write the export to {out}: {_DISK_ERRNOS[exc.errno]}; free space or choose "
            "another --out (nothing was written)"
        )
    return None


def make_staging(out: Path) -> Path:
    """A private folder inside ``out`` (same file system, so the final renames are atomic); ``out`` is made
    if it is missing."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out))
    except OSError as exc:
        raise OutputError(f"cannot write to --out {out} ({exc.strerror or exc}); choose a writable folder") from None


def publish(staging: Path, out: Path, names: list[str]) -> None:
    """Move each staged file or folder in ``names`` into ``out`` by rename, replacing an older one."""
    for name in names:
        src, dst = staging / name, out / name
        if src.is_dir():
            old = None
            if dst.exists():
                old = out / f"{STAGING_PREFIX}old-{name}"
                if old.exists():
                    shutil.rmtree(old)
                os.replace(dst, old)
            os.replace(src, dst)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(src, dst)


def remove_staging(staging: Path) -> None:
    shutil.rmtree(staging, ignore_errors=True)
