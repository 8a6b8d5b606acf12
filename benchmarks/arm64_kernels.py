"""Which int8 / fp32 kernels each runtime's aarch64 build takes on each emulated CPU model.

    python benchmarks/arm64_kernels.py out/demo/model.pte out/demo/model.onnx [--cpus cortex-a710,max] [--tokens 64]

Runs each artifact once (one input of ``--tokens`` tokens, one thread) under the prepared ARM64 environment's
qemu with its translation log on (``QEMU_LOG=in_asm``: every guest block once, as it is first run), then counts
the instructions that only one kind of kernel uses: SME / SME2 (``smstart``, outer products into ``za``),
i8mm (``smmla``) and dotprod (``sdot``) (a CPU model with none of them runs plain NEON kernels), and names the
library and, where the library keeps its symbols, the function each came from
(``aarch64-linux-gnu-nm``; ONNX Runtime's library is stripped, so only its library is named). Numbers:
BENCHMARKS.md, "SME2".
"""

from __future__ import annotations

import argparse
import bisect
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mobile_export.parity.arm64.env import locate  # noqa: E402

KINDS = {
    "sme": re.compile(r"\bsmstart\b|\bsmstop\b|\bza\d*\b|mopa\b|\bzt0\b"),
    "i8mm": re.compile(r"\b(?:s|u|us)mmla\b"),
    "dotprod": re.compile(r"\b(?:s|u|us|su)dot\b"),
}
RUN = """
import sys
import numpy as np
from pathlib import Path
from mobile_export import backends
from mobile_export.backends import Backend
path, n = Path(sys.argv[1]), int(sys.argv[2])
runner = backends.load(Backend.EXECUTORCH if path.suffix == ".pte" else Backend.ONNX).Runner(path, threads=1)
ids = np.array([[2] + [5 + i % 90 for i in range(n - 2)] + [3]], dtype=np.int64)
runner.run({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
Path(sys.argv[3]).write_text(Path("/proc/self/maps").read_text())
"""


class Symbols:
    """The functions of the emulated process's shared libraries, by address."""

    def __init__(self, maps: str, userland: Path) -> None:
        self.regions = []
        for line in maps.splitlines():
            part = line.split()
            if len(part) >= 6 and ".so" in part[5]:
                lo, hi = (int(x, 16) for x in part[0].split("-"))
                self.regions.append((lo, hi, int(part[2], 16), part[5]))
        self.userland = userland
        self.tables: dict[str, tuple[list[int], list[str]]] = {}

    def _table(self, path: str) -> tuple[list[int], list[str]]:
        if path not in self.tables:
            host = path if Path(path).is_file() else str(self.userland) + path
            rows = []
            for flags in (["--defined-only"], ["-D", "--defined-only"]):
                out = subprocess.run(["aarch64-linux-gnu-nm", "-C", *flags, host], capture_output=True, text=True)
                for line in out.stdout.splitlines():
                    m = re.match(r"([0-9a-f]+) \w (.*)", line)
                    if m:
                        rows.append((int(m.group(1), 16), m.group(2)))
            rows.sort()
            self.tables[path] = ([r[0] for r in rows], [r[1] for r in rows])
        return self.tables[path]

    def name(self, address: int) -> tuple[str, str]:
        """(library, function) of a guest address; the function is "(stripped)" when the library has no symbols."""
        for lo, hi, offset, path in self.regions:
            if lo <= address < hi:
                starts, names = self._table(path)
                k = bisect.bisect_right(starts, address - lo + offset) - 1
                named = names[k] if k >= 0 and not names[k].startswith("PyInit_") else "(stripped)"
                return os.path.basename(path), named
        return "?", "?"


def kernels(artifact: Path, cpu: str, tokens: int) -> collections.Counter:
    """(kind, library, function) -> instructions of that kind translated while ``artifact`` ran on ``cpu``."""
    env = locate()
    with tempfile.TemporaryDirectory(prefix="arm64-kernels-") as tmp:
        work = Path(tmp)
        for name in ("mobile_export", "quantize"):
            (work / name).symlink_to(ROOT / name)
        (work / "run.py").write_text(RUN)
        log, maps = work / "qemu.log", work / "maps.txt"
        env_vars = {
            "QEMU_CPU": cpu,
            "QEMU_LD_PREFIX": str(env.userland),
            "QEMU_LOG": "in_asm",
            "QEMU_LOG_FILENAME": str(log),
            "LD_LIBRARY_PATH": str(env.stubs),
            "PYTHONPATH": f"{env.site}:{work}",
            "PYTHONNOUSERSITE": "1",
            "HOME": str(work),
            "PATH": "/usr/bin:/bin",
            "OMP_NUM_THREADS": "1",
        }
        subprocess.run([str(env.qemu), str(env.python), str(work / "run.py"), str(artifact.resolve()), str(tokens),
                        str(maps)], env=env_vars, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        symbols = Symbols(maps.read_text(), env.userland)
        counts: collections.Counter = collections.Counter()
        with open(log, errors="replace") as lines:
            for line in lines:
                m = re.match(r"0x([0-9a-f]+):\s+[0-9a-f]+\s+(.*)", line)
                if not m:
                    continue
                for kind, pattern in KINDS.items():
                    if pattern.search(m.group(2)):
                        counts[(kind, *symbols.name(int(m.group(1), 16)))] += 1
        return counts


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("artifacts", nargs="+", type=Path)
    p.add_argument("--cpus", default="cortex-a53,cortex-a76,cortex-a710,max")
    p.add_argument("--tokens", type=int, default=64)
    a = p.parse_args()
    print("| artifact | CPU model | kind | instructions | library | function |")
    print("|---|---|---|---:|---|---|")
    for artifact in a.artifacts:
        for cpu in a.cpus.split(","):
            counts = kernels(artifact, cpu, a.tokens)
            if not counts:
                print(f"| {artifact.name} | {cpu} | none of sme, i8mm, dotprod (plain NEON) | 0 | | |")
            for (kind, library, function), n in sorted(counts.items(), key=lambda kv: (kv[0][0], -kv[1])):
                print(f"| {artifact.name} | {cpu} | {kind} | {n} | {library} | `{function[:90]}` |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
