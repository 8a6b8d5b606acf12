"""The phone CPU models ``--isa arm64`` emulates (qemu CPU models)."""

from __future__ import annotations

# --isa arm64: the phone CPU generations checked by default (no dotprod: older and low-end phones;
# dotprod; SVE2 + i8mm + bf16: current; qemu's max, the one model with SME2: the newest flagships, where both
# runtimes switch to KleidiAI's SME2 kernels) and every qemu CPU model accepted.
DEFAULT_ARM64_CPUS = ("cortex-a53", "cortex-a76", "cortex-a710", "max")
ARM64_CPUS = (
    "cortex-a53",
    "cortex-a55",
    "cortex-a57",
    "cortex-a72",
    "cortex-a76",
    "cortex-a710",
    "neoverse-n1",
    "neoverse-n2",
    "neoverse-v1",
    "a64fx",
    "max",
)
