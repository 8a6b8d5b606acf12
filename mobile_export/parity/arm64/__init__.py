"""The artifacts on the phone's instruction set: the ARM64 builds of ExecuTorch and ONNX Runtime run under
qemu's user-mode emulation of phone CPU models (``env`` prepares it, ``emulator`` runs it, ``worker`` is
what runs inside). Emulation computes what the ARM64 kernels compute; it says nothing about speed."""

# Phone CPU generations qemu models: no dotprod (older and low-end phones), dotprod, SVE2 + i8mm + bf16 (current).
DEFAULT_CPUS = ("cortex-a53", "cortex-a76", "cortex-a710")
