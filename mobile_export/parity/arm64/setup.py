"""Building the emulated ARM64 environment (``env``) once into a cache folder.

    python -m mobile_export.parity.arm64.setup [--dir DIR] [--if-missing]    (what ``make arm64-env`` runs)

qemu-user from trixie-backports, a Debian arm64 userland (debootstrap), the aarch64 wheels of the
pinned runtimes, the CUDA stand-ins (``stubs``), then both runtimes loaded under emulation as a smoke test.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ...core.errors import BadInputError
from .emulator import Emulator
from .env import (
    ENV_VAR,
    MIN_QEMU,
    PLATFORMS,
    QEMU_SUITE,
    runtimes,
    SUITE,
    SUPPORT,
    Arm64Env,
    default_dir,
    locate,
    qemu_version,
    wanted_versions,
)
from .stubs import build


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


def debian_mirror() -> str:
    """The Debian mirror this machine's apt uses for the main suite (so nothing else is reached)."""
    texts = []
    for p in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if p.is_file():
            texts.append(p.read_text(errors="replace"))
    for text in texts:
        for block in re.split(r"\n\s*\n", text):  # deb822 stanzas
            uris, suites = re.search(r"^URIs:\s*(\S+)", block, re.M), re.search(r"^Suites:(.*)$", block, re.M)
            if uris and suites and SUITE in suites.group(1).split() and "security" not in uris.group(1):
                return uris.group(1)
        for m in re.finditer(rf"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+{SUITE}\s", text, re.M):
            return m.group(1)
    raise BadInputError(f"no Debian {SUITE} source in /etc/apt; the ARM64 environment needs Debian's packages")


def _qemu(env: Arm64Env, mirror: str) -> str:
    """qemu-user from trixie-backports, unpacked (its binaries are static); returns its version."""
    apt = env.root / "apt"
    (apt / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(
        f"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {mirror} {QEMU_SUITE} main\n"
    )
    opts = [
        f"-oDir::Etc::SourceList={apt / 'sources.list'}",
        "-oDir::Etc::SourceParts=/nonexistent",
        f"-oDir::State::Lists={apt / 'lists'}",
        f"-oDir::Cache={apt / 'cache'}",
        "-oDebug::NoLocking=1",
        "-oAPT::Sandbox::User=root",
        "-qq",
    ]
    _run(["apt-get", *opts, "update"])
    for old in apt.glob("qemu-user_*.deb"):
        old.unlink()
    _run(["apt-get", *opts, "download", f"qemu-user/{QEMU_SUITE}"], cwd=apt)
    [deb] = apt.glob("qemu-user_*.deb")
    shutil.rmtree(env.root / "qemu", ignore_errors=True)
    _run(["dpkg-deb", "-x", str(deb), str(env.root / "qemu")])
    text = _run([str(env.qemu), "--version"], capture_output=True, text=True).stdout
    found = re.search(r"version (\d+\.\d+(?:\.\d+)?)", text)
    if not found or qemu_version(found.group(1)) < MIN_QEMU:
        raise BadInputError(
            f"qemu from {QEMU_SUITE} is {text.strip()[:60]}; need >= {'.'.join(map(str, MIN_QEMU))} (for SME2)"
        )
    return found.group(1)


def _userland(env: Arm64Env, mirror: str) -> None:
    """Debian arm64 with Python 3.11: debootstrap's first stage, every package unpacked in place."""
    shutil.rmtree(env.userland, ignore_errors=True)
    _run(
        [
            "debootstrap",
            "--arch=arm64",
            "--foreign",
            "--variant=minbase",
            "--include=python3.11,libpython3.11-stdlib,libatomic1",
            SUITE,
            str(env.userland),
            mirror,
        ],
        stdout=subprocess.DEVNULL,
    )
    for deb in sorted((env.userland / "var" / "cache" / "apt" / "archives").glob("*.deb")):
        _run(["dpkg-deb", "-x", str(deb), str(env.userland)])


def _packages(env: Arm64Env, versions: dict[str, str]) -> None:
    """The aarch64 wheels of the runtimes and what importing them needs, at this machine's versions."""
    shutil.rmtree(env.site, ignore_errors=True)
    pins = [f"{n}=={versions[n]}" for n in runtimes()]
    for name in SUPPORT:
        try:
            pins.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            pins.append(name)
    platform = [a for p in PLATFORMS for a in ("--platform", p)]
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--target",
            str(env.site),
            *platform,
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            *pins,
        ]
    )


def prepare(folder: str | os.PathLike | None = None, say=print) -> Arm64Env:
    """Build the environment in ``folder`` (default ``default_dir()``) from scratch and smoke-test it."""
    for tool, package in (
        ("apt-get", "apt"),
        ("dpkg-deb", "dpkg"),
        ("debootstrap", "debootstrap"),
        ("aarch64-linux-gnu-ld", "binutils-aarch64-linux-gnu"),
        ("readelf", "binutils"),
    ):
        if shutil.which(tool) is None:
            raise BadInputError(f"{tool} not found: apt-get install -y {package}")
    env = Arm64Env(Path(folder) if folder else default_dir())
    env.root.mkdir(parents=True, exist_ok=True)
    env.stamp.unlink(missing_ok=True)
    versions = wanted_versions()
    mirror = debian_mirror()
    say(f"arm64 env: qemu-user from {QEMU_SUITE}")
    qemu = _qemu(env, mirror)
    say("arm64 env: Debian arm64 userland with Python 3.11 (debootstrap)")
    _userland(env, mirror)
    say("arm64 env: aarch64 wheels of " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    _packages(env, versions)
    say("arm64 env: CUDA stand-ins for aarch64 torch")
    stood_in = build(env.site, env.userland, env.stubs)
    say("arm64 env: loading the runtimes under emulation (about a minute)")
    with Emulator(env, "cortex-a76") as emulator:
        found = emulator.versions()
    want = {k: versions[k] for k in runtimes() if k not in ("torch", "numpy")}
    if {k: found.get(k) for k in want} != want:
        raise BadInputError(f"the emulated runtimes report {found}, expected {want}")
    env.stamp.write_text(
        json.dumps({"qemu": qemu, "versions": versions, "emulated": found, "cuda_stand_ins": stood_in}, indent=1) + "\n"
    )
    say(f"arm64 env ready in {env.root}")
    return env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m mobile_export.parity.arm64.setup",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--dir", help=f"where to build it (default ${ENV_VAR} or ~/.cache/mobile-export/arm64)")
    p.add_argument("--if-missing", action="store_true", help="keep an environment that is already up to date")
    a = p.parse_args(argv)
    if a.if_missing:
        try:
            print(f"arm64 env up to date in {locate(a.dir).root}")
            return 0
        except BadInputError:
            pass
    try:
        prepare(a.dir)
    except (BadInputError, subprocess.CalledProcessError) as exc:
        print(f"mobile-export: error: arm64 env: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
