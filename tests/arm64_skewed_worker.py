"""The emulated ARM64 worker with one CPU model's results off by 25%, as a miscomputing kernel would be:
runs inside qemu for tests/test_arm64.py (everything else is the real worker and the real runtimes)."""

import os

from mobile_export.parity.arm64 import worker

SKEWED_CPU = "cortex-a76"


def _skew(cls):
    real = cls.run

    def run(self, feeds):
        outputs = real(self, feeds)
        return [o * 1.25 for o in outputs] if os.environ.get("QEMU_CPU") == SKEWED_CPU else outputs

    cls.run = run


from mobile_export.backends import executorch, onnx  # noqa: E402

_skew(executorch.Runner)
_skew(onnx.Runner)

if __name__ == "__main__":
    raise SystemExit(worker.main())
