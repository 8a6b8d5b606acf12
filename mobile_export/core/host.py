"""The machine that runs a check: its CPU and the int8 features that decide the runtimes' kernels.

int8 results depend on the kernels a runtime picks from the CPU it finds: ONNX Runtime's x86 u8 x s8
GEMM saturates without VNNI (see ``backends.onnx.precision``), ARM64 runtimes pick dot-product or
i8mm kernels. Features are read as the process's own CPU reports them (numpy's CPUID probe on
x86-64, the kernel's hwcaps in /proc/self/auxv on ARM64), not from /proc/cpuinfo alone, which under
user-mode emulation describes the host's CPU instead of the emulated one.
"""

from __future__ import annotations

import functools
import platform
import struct
from dataclasses import dataclass
from pathlib import Path

# x86-64 features that choose int8 kernels, by /proc/cpuinfo name -> numpy's CPUID name (None: numpy
# does not probe it, /proc/cpuinfo is read when it agrees with numpy on the features both know).
X86_FEATURES: dict[str, str | None] = {
    "avx2": "AVX2",
    "avx512f": "AVX512F",
    "avx512bw": "AVX512BW",
    "avx512_vnni": "AVX512VNNI",
    "avx_vnni": None,
    "amx_int8": None,
}
# ARM64 features by name -> (auxv entry, bit): AT_HWCAP = 16, AT_HWCAP2 = 26 (Linux uapi asm/hwcap.h).
ARM64_FEATURES: dict[str, tuple[int, int]] = {
    "asimddp": (16, 20),  # dot product (sdot/udot)
    "sve": (16, 22),
    "sve2": (26, 1),
    "i8mm": (26, 13),  # int8 matrix multiply (smmla/ummla/usmmla)
}
# ARM's CPU part numbers (/proc/cpuinfo "CPU part") of the cores phones ship.
ARM_PARTS = {
    0xD03: "Cortex-A53",
    0xD05: "Cortex-A55",
    0xD0A: "Cortex-A75",
    0xD0B: "Cortex-A76",
    0xD0D: "Cortex-A77",
    0xD41: "Cortex-A78",
    0xD44: "Cortex-X1",
    0xD46: "Cortex-A510",
    0xD47: "Cortex-A710",
    0xD48: "Cortex-X2",
    0xD4D: "Cortex-A715",
    0xD4E: "Cortex-X3",
    0xD80: "Cortex-A520",
    0xD81: "Cortex-A720",
    0xD82: "Cortex-X4",
}


@dataclass(frozen=True)
class Host:
    """A CPU as the running process sees it: architecture, model name and int8 features present."""

    arch: str  # platform.machine(): x86_64, aarch64, ...
    cpu: str
    features: tuple[str, ...]

    def has(self, feature: str) -> bool:
        """Whether the CPU has ``feature`` (a name of ``X86_FEATURES`` or ``ARM64_FEATURES``)."""
        return feature in self.features

    @property
    def x86_64(self) -> bool:
        return self.arch in ("x86_64", "AMD64")

    def describe(self) -> dict:
        """The host for report.json: CPU, architecture, int8 features."""
        return {"cpu": self.cpu, "arch": self.arch, "int8_features": list(self.features)}

    def summary(self) -> str:
        """One line: 'AMD EPYC (x86_64: avx2 avx512f avx512_vnni)'."""
        return f"{self.cpu} ({self.arch}: {' '.join(self.features) or 'no int8 features'})"


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""


def _field(text: str, name: str) -> str | None:
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return None


def _x86(cpuinfo: str) -> tuple[str, tuple[str, ...]]:
    import numpy._core._multiarray_umath as umath  # numpy's runtime CPUID probe

    probed = umath.__cpu_features__
    flags = set((_field(cpuinfo, "flags") or "").split())
    known = [name for name, np_name in X86_FEATURES.items() if np_name]
    same_cpu = bool(flags) and all((name in flags) == bool(probed.get(X86_FEATURES[name])) for name in known)
    found = [
        name
        for name, np_name in X86_FEATURES.items()
        if (probed.get(np_name, False) if np_name else same_cpu and name in flags)
    ]
    cpu = _field(cpuinfo, "model name") if same_cpu else None
    return cpu or "unknown x86-64 CPU (/proc/cpuinfo describes another CPU: emulated?)", tuple(found)


def _auxv() -> dict[int, int]:
    try:
        data = Path("/proc/self/auxv").read_bytes()
    except OSError:
        return {}
    pairs = struct.iter_unpack("<QQ", data[: len(data) // 16 * 16])
    return {key: value for key, value in pairs}


def _arm64(cpuinfo: str) -> tuple[str, tuple[str, ...]]:
    aux = _auxv()
    found = tuple(name for name, (key, bit) in ARM64_FEATURES.items() if aux.get(key, 0) >> bit & 1)
    part = _field(cpuinfo, "CPU part")
    try:
        cpu = ARM_PARTS.get(int(part, 16), f"ARM CPU part {part}") if part else None
    except ValueError:
        cpu = None
    return cpu or "unknown ARM64 CPU", found


@functools.cache
def this_host() -> Host:
    """The CPU this process runs on."""
    arch = platform.machine()
    text = _cpuinfo()
    if arch in ("x86_64", "AMD64"):
        cpu, features = _x86(text)
    elif arch in ("aarch64", "arm64"):
        cpu, features = _arm64(text)
    else:
        cpu, features = (_field(text, "model name") or platform.processor() or "unknown CPU"), ()
    return Host(arch=arch, cpu=cpu, features=features)
