"""The artifacts on the phone's instruction set: the ARM64 builds of ExecuTorch and ONNX Runtime run under
qemu's user-mode emulation of phone CPU models (``env`` prepares it, ``emulator`` runs it, ``worker`` is
what runs inside). Emulation computes what the ARM64 kernels compute; it says nothing about speed."""
