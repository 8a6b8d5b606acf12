"""Stand-ins for the CUDA libraries that PyPI's aarch64 torch links but a CPU-only run never calls.

ExecuTorch's Python runtime links torch, and PyPI's aarch64 torch is a CUDA build whose NVIDIA libraries
are not all published for aarch64. Each missing library gets a stand-in with its soname, its symbol
versions and every symbol torch's libraries import from it; each function returns CUDA's "no device"
error (100), so ``torch.cuda.is_available()`` is False. Built with binutils' aarch64 assembler and linker.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

# The NVIDIA libraries a CUDA build of torch links (the only ones stood in for).
_NVIDIA = re.compile(r"lib(cu|nccl|nvrtc|nvshmem|nvToolsExt|nvJitLink)")
NO_DEVICE = 100


def _readelf(*args: str) -> str:
    return subprocess.run(["readelf", *args], capture_output=True, text=True, check=True).stdout


def _dynamic_symbols(lib: Path) -> list[list[str]]:
    """readelf's rows of the dynamic symbol table: [num, value, size, type, bind, vis, ndx, name]."""
    return [
        p
        for p in (line.split() for line in _readelf("--dyn-syms", "-W", str(lib)).splitlines())
        if len(p) >= 8 and p[6] != "Ndx"
    ]


def build(site: Path, root: Path, out: Path) -> list[str]:
    """Write a stand-in into ``out`` for each NVIDIA library that the torch and ExecuTorch libraries in
    ``site`` need and neither ``site`` nor the userland ``root`` has; returns their sonames."""
    libs = sorted(site.glob("torch/lib/*.so*")) + sorted(site.glob("executorch/**/*.so"))
    system = [root / "lib/aarch64-linux-gnu", root / "usr/lib/aarch64-linux-gnu"]
    present = {p.name for p in libs}
    missing: dict[str, set[str]] = {}  # soname -> symbol versions required from it
    wanted: dict[tuple[str, str | None], str] = {}  # (symbol, version) -> ELF type
    for lib in libs:
        for name in re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", _readelf("-d", str(lib))):
            if _NVIDIA.match(name) and name not in present and not any((d / name).exists() for d in system):
                missing.setdefault(name, set())
    for lib in libs:
        owner = None
        for line in _readelf("-V", "-W", str(lib)).splitlines():
            file_match = re.search(r"File: (\S+)", line)
            if file_match:
                owner = file_match.group(1)
            found = re.search(r"Name: (\S+)\s+Flags", line)
            if found and owner in missing:
                missing[owner].add(found.group(1))
        for row in _dynamic_symbols(lib):
            if row[6] == "UND" and row[4] != "WEAK":  # a weak reference may stay unresolved
                name, _, version = row[7].partition("@")
                wanted[(name, version.split(" ")[0] or None)] = row[3]
    defined = {
        row[7].split("@")[0]
        for lib in [*site.glob("**/*.so*"), *(p for d in system if d.exists() for p in d.glob("*.so*"))]
        for row in _dynamic_symbols(lib)
        if row[6] != "UND"
    }
    orphans = sorted((n, k) for (n, v), k in wanted.items() if v is None and n not in defined)
    owner_of = {v: soname for soname, versions in missing.items() for v in versions}
    out.mkdir(parents=True, exist_ok=True)
    for soname, versions in sorted(missing.items()):
        symbols: list[tuple[str, str, str | None]]
        if versions:
            symbols = sorted((n, k, v) for (n, v), k in wanted.items() if v is not None and owner_of.get(v) == soname)
        else:  # linked without symbol versions: it stands in for every symbol nothing else defines
            symbols = [(n, k, None) for n, k in orphans]
        _link(out, soname, symbols, sorted(versions))
    return sorted(missing)


def _link(out: Path, soname: str, symbols: list[tuple[str, str, str | None]], versions: list[str]) -> None:
    asm = []
    for name, kind, _ in symbols:
        if kind == "OBJECT":
            asm += [".data", f".globl {name}", f".type {name},%object", f".size {name},64", f"{name}:", ".zero 64"]
        else:
            asm += [".text", f".globl {name}", f".type {name},%function", f"{name}:", f"mov w0, #{NO_DEVICE}", "ret"]
    work = out / f".{soname}"
    work.mkdir(exist_ok=True)
    (work / "stub.s").write_text("\n".join(asm) + "\n")
    subprocess.run(["aarch64-linux-gnu-as", "-o", str(work / "stub.o"), str(work / "stub.s")], check=True)
    cmd = ["aarch64-linux-gnu-ld", "-shared", "-soname", soname, "-o", str(out / soname), str(work / "stub.o")]
    if versions:
        script = "".join(
            f"{v} {{ global: {' '.join(n + ';' for n, _, sv in symbols if sv == v)} }};\n" for v in versions
        )
        (work / "versions.map").write_text(script)
        cmd[1:1] = ["--version-script", str(work / "versions.map")]
    subprocess.run(cmd, check=True)
