"""Resident memory of an artifact loaded and run once in a fresh process, split by where it lives.

Linux only (/proc). The child imports the runtime library, resets the peak counter, then loads the
artifact through its backend's ``Runner`` (the same path parity and bench use) and runs it once.
Resident pages are read from ``/proc/self/smaps`` and split three ways:

- private: anonymous memory and the heap (packed weights, planned activation arenas, runtime
  objects): what the model costs the device and nobody can share or page out without swap;
- artifact: pages of the artifact file itself that are mapped and resident (a memory-mapped
  program's weights, mlocked or touched);
- libraries: code pages of shared libraries first touched by the run (runtime kernels, and in
  Python the torch library the harness calls): the runtime's, not the model's.

``model_rss_bytes`` = private + artifact growth over the baseline taken after the runtime import.
The child runs with glibc's mmap threshold fixed at 16 KiB: by default glibc raises it after a
large buffer is freed, so the harness's short-lived copies (the hidden states passed between a
``.pte``'s methods) stay in the heap and showed up as +-1 MiB of noise that no runtime holds.
``peak_over_baseline_bytes`` is the process's peak (VmHWM) over that baseline, library pages and
transient load buffers included.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

_MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")


def status_kib(key: str) -> int:
    """A ``/proc/self/status`` field in KiB (``VmRSS``, ``VmHWM``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def reset_peak() -> None:
    """Reset VmHWM to the current RSS."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def resident_kib(artifact: Path | None = None) -> dict[str, int]:
    """Resident KiB by kind: private (anonymous, heap, stacks), artifact (pages of files whose path
    starts with ``artifact``, e.g. model.onnx and model.onnx.data), libraries (other file pages)."""
    prefix = str(Path(artifact).resolve()) if artifact is not None else None
    out = {"private": 0, "artifact": 0, "libraries": 0}
    kind = "private"
    with open("/proc/self/smaps") as f:
        for line in f:
            if _MAPPING.match(line):
                fields = line.split(maxsplit=5)
                name = fields[5].strip() if len(fields) > 5 else ""
                if not name or name.startswith("["):
                    kind = "private"
                elif prefix is not None and name.startswith(prefix):
                    kind = "artifact"
                else:
                    kind = "libraries"
            elif line.startswith("Rss:"):
                out[kind] += int(line.split()[1])
    return out


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in after}


def model_kib(delta: dict[str, int]) -> int:
    """What the model holds: private memory plus the artifact's resident pages (library code apart)."""
    return delta["private"] + delta["artifact"]


def _child(path: Path, backend: str, seq: int) -> dict:
    """In the measuring process: baseline, load, one run; resident memory after each (KiB)."""
    import numpy as np

    from .child import import_runtime

    from .. import backends
    from ..backends import Backend

    module = import_runtime(backend)
    options: dict = {}
    fmt = backends.host_precision(Backend(backend))
    if fmt is not None:
        # RAM of the file as the app runs it: the in-memory u8 copy of the Loop body's weights that keeps an x86
        # CPU without VNNI from saturating (the .onnx's precision modes) is a checking-host aid a phone does not
        # hold (albert-base: +21 MiB)
        options["precision"] = fmt.phone_precision()
    reset_peak()
    base_kib = status_kib("VmRSS")
    base = resident_kib(path)
    runner = module.Runner(path, **options)
    loaded = delta(resident_kib(path), base)
    load_peak_kib = status_kib("VmHWM")
    feeds = {
        "input_ids": np.ones((1, seq), np.int64),
        "attention_mask": np.ones((1, seq), np.int64),
        "token_type_ids": np.zeros((1, seq), np.int64),
    }
    runner.run(feeds)
    ran = delta(resident_kib(path), base)
    return {
        "baseline_kib": base_kib,
        "load_peak_kib": load_peak_kib,
        "peak_kib": status_kib("VmHWM"),
        "after_load": loaded,
        "after_run": ran,
    }


@dataclass(frozen=True)
class MemoryFigures:
    """Resident memory of a fresh process that loaded an artifact and ran it once (bytes)."""

    seq_len: int
    model_rss_bytes: int  # private + artifact pages after load and one run
    load_rss_bytes: int  # the same after load only
    private_bytes: int
    artifact_bytes: int
    library_bytes: int  # runtime library code touched
    peak_over_baseline_bytes: int
    peak_rss_bytes: int  # the whole process
    runtime_baseline_bytes: int

    def to_dict(self) -> dict[str, int]:
        """As report.json stores it."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MemoryFigures:
        """From report.json's ``size.memory``."""
        return cls(**{f.name: int(d.get(f.name, 0)) for f in fields(cls)})


def measure(path: Path, seq_len: int = 128) -> MemoryFigures:
    """Memory of a fresh process that loads ``path`` in its runtime and runs it once at ``seq_len``.

    Raises:
        ArtifactLoadError: the artifact did not load or run in the child process.
    """
    from .. import backends
    from .child import run_child

    backend = backends.for_path(path)
    r = run_child(
        "mobile_export.measure.memory",
        [str(path), backend.value, str(seq_len)],
        dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(16 * 1024)),
        1800,
        f"{path.name} could not be loaded and run to measure memory",
    )
    kib = 1024
    run, load = r["after_run"], r["after_load"]
    return MemoryFigures(
        seq_len=seq_len,
        model_rss_bytes=model_kib(run) * kib,
        load_rss_bytes=model_kib(load) * kib,
        private_bytes=run["private"] * kib,
        artifact_bytes=run["artifact"] * kib,
        library_bytes=run["libraries"] * kib,
        peak_over_baseline_bytes=(r["peak_kib"] - r["baseline_kib"]) * kib,
        peak_rss_bytes=r["peak_kib"] * kib,
        runtime_baseline_bytes=r["baseline_kib"] * kib,
    )


if __name__ == "__main__":
    from .child import print_result

    print_result(_child(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
