"""The emulated ARM64 environment: where it lives and the check before each use (``setup`` builds it).

It holds qemu's user-mode emulator (>= 11.1, from Debian's trixie-backports, a static build that runs on
Debian 12: Debian 12's own 7.2 computes SVE code wrongly and crashes ONNX Runtime's CPU detection, and 10.0
gives its ``max`` CPU SME but not SME2, so the newest phones' kernels would never run), a Debian arm64 userland with
Python 3.11 (debootstrap's first stage, unpacked without a chroot), the aarch64 wheels of the pinned
runtimes (the same versions as this machine's) and stand-ins for the CUDA libraries aarch64 torch links
(``stubs``). About 2 GB. Needs ``apt-get``, ``debootstrap``, ``binutils-aarch64-linux-gnu`` and root
(debootstrap), and reaches only Debian's and PyPI's package servers as this machine has them configured.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ...core.errors import BadInputError

MIN_QEMU = (11, 1)
SUITE = "bookworm"  # the userland's Debian (its Python 3.11 is this project's)
QEMU_SUITE = "trixie-backports"  # where qemu-user comes from (its binaries are static: any host runs them)


def runtimes() -> tuple[str, ...]:
    """The aarch64 builds that must match this machine's: torch and numpy, and every phone-CPU format's runtime (the
    registry's ``runtime_libraries``)."""
    from ... import backends

    return ("torch", "numpy", *backends.runtime_libraries())


# What importing the runtimes needs besides them (pure Python, or with aarch64 wheels), at this machine's versions.
SUPPORT = (
    "typing_extensions",
    "sympy",
    "mpmath",
    "networkx",
    "jinja2",
    "markupsafe",
    "fsspec",
    "filelock",
    "setuptools",
    "ruamel.yaml",
    "pyyaml",
    "flatbuffers",
    "packaging",
    "tabulate",
)
PLATFORMS = ("manylinux_2_28_aarch64", "manylinux_2_27_aarch64", "manylinux_2_17_aarch64", "manylinux2014_aarch64")
ENV_VAR = "MOBILE_EXPORT_ARM64_ENV"
PREPARE = "make arm64-env (or python -m mobile_export.parity.arm64.setup)"


def default_dir() -> Path:
    """Where the environment lives: $MOBILE_EXPORT_ARM64_ENV, else ~/.cache/mobile-export/arm64."""
    return Path(os.environ.get(ENV_VAR) or Path.home() / ".cache" / "mobile-export" / "arm64")


def wanted_versions() -> dict[str, str]:
    """The runtime versions the environment must have: this machine's."""
    out = {}
    for name in runtimes():
        try:
            out[name] = version(name).split("+")[0]
        except PackageNotFoundError:
            raise BadInputError(f"{name} is not installed here; install mobile-export first") from None
    return out


@dataclass(frozen=True)
class Arm64Env:
    """A prepared environment: where its emulator, userland, packages and CUDA stand-ins are."""

    root: Path

    @property
    def qemu(self) -> Path:
        return self.root / "qemu" / "usr" / "bin" / "qemu-aarch64"

    @property
    def qemu_x86_64(self) -> Path:
        """qemu's x86-64 user-mode emulator from the same package: ``-cpu Haswell`` is AVX2 without VNNI."""
        return self.root / "qemu" / "usr" / "bin" / "qemu-x86_64"

    @property
    def userland(self) -> Path:
        return self.root / "userland"

    @property
    def python(self) -> Path:
        return self.userland / "usr" / "bin" / "python3.11"

    @property
    def site(self) -> Path:
        return self.root / "site"

    @property
    def stubs(self) -> Path:
        return self.root / "stubs"

    @property
    def stamp(self) -> Path:
        return self.root / "env.json"

    def describe(self) -> dict:
        return json.loads(self.stamp.read_text())


def qemu_version(text: str) -> tuple[int, int]:
    """(major, minor) of a qemu version string such as ``11.1.3``, (0, 0) when it names none."""
    found = re.search(r"(\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def locate(folder: str | os.PathLike | None = None) -> Arm64Env:
    """The prepared environment in ``folder`` (default ``default_dir()``), checked against this machine's
    runtime versions; a missing or stale one is a one-line error naming the command that prepares it."""
    env = Arm64Env(Path(folder) if folder else default_dir())
    if not env.stamp.is_file() or not env.qemu.is_file() or not env.python.is_file():
        raise BadInputError(f"no ARM64 environment in {env.root}; prepare it with {PREPARE}")
    described = env.describe()
    have = described.get("versions", {})
    want = wanted_versions()
    stale = [f"{k} {have.get(k)} (want {v})" for k, v in want.items() if have.get(k) != v]
    if qemu_version(str(described.get("qemu", ""))) < MIN_QEMU:
        stale.append(f"qemu {described.get('qemu')} (want >= {'.'.join(map(str, MIN_QEMU))})")
    if stale:
        raise BadInputError(
            f"the ARM64 environment in {env.root} has {', '.join(stale)}; prepare it again with {PREPARE}"
        )
    return env
