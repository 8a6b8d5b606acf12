"""The ARM64 features a process's CPU offers, as the kernel (or qemu's user mode) announces them in its
auxiliary vector: what the runtimes' kernel dispatch reads, so a report can name what each CPU model had."""

from __future__ import annotations

import ctypes
import os

_AT_HWCAP, _AT_HWCAP2 = 16, 26
# bit positions in Linux's arm64 uapi hwcap.h: the features the runtimes' int8 and int4 kernels choose by
_HWCAP = {"dotprod": 20, "sve": 22}
_HWCAP2 = {"sve2": 1, "i8mm": 13, "bf16": 14, "sme": 23, "sme2": 37}


def cpu_features() -> list[str]:
    """The features of this process's ARM64 CPU that choose kernels (dotprod, i8mm, SVE, SME2, ...); empty
    elsewhere."""
    if os.uname().machine != "aarch64":
        return []
    libc = ctypes.CDLL(None)
    libc.getauxval.restype = ctypes.c_ulong
    libc.getauxval.argtypes = [ctypes.c_ulong]
    hwcap, hwcap2 = libc.getauxval(_AT_HWCAP), libc.getauxval(_AT_HWCAP2)
    return [name for name, bit in _HWCAP.items() if hwcap >> bit & 1] + [
        name for name, bit in _HWCAP2.items() if hwcap2 >> bit & 1
    ]
