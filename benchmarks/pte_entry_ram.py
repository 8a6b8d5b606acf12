"""Model RAM of a ``--pte-entry both`` .pte run through its layer loop and through ``forward``, the latter
with XNNPACK's weights cache off (the Python wheel's default) and on (the default of ExecuTorch's Android
and iOS builds), each in a fresh process, measured as ``mobile_export.measure.memory`` measures (numbers in
BENCHMARKS.md, "--pte-entry").

    python benchmarks/pte_entry_ram.py out/base-both/model.pte [--seq 128] [--repeats 3]

The wheel has no Python switch for the cache; the child sets ExecuTorch's runtime option
``XnnpackBackend.weight_cache_enabled`` through ``executorch::runtime::set_option`` (exported by
libexecutorch.so) with ctypes, before the program loads. Layout of ``BackendOption`` from
runtime/backend/options.h: ``char key[64]`` then ``std::variant<bool, int, std::array<char, 256>>``
(256 bytes of storage, then the index byte).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path


def _enable_weights_cache() -> None:
    import executorch

    lib = ctypes.CDLL(str(Path(list(executorch.__path__)[0]) / "lib" / "libexecutorch.so"))

    class Option(ctypes.Structure):
        _fields_ = [("key", ctypes.c_char * 64), ("value", ctypes.c_uint8 * 256), ("index", ctypes.c_uint8),
                    ("pad", ctypes.c_uint8 * 3)]

    assert ctypes.sizeof(Option) == 324
    opt = Option()
    opt.key = b"weight_cache_enabled"
    opt.value[0] = 1  # bool true
    opt.index = 0  # the variant holds the bool
    fn = lib._ZN10executorch7runtime10set_optionEPKcNS0_4SpanINS0_13BackendOptionEEE
    fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]  # Span<T> by value: (data, length)
    fn.restype = ctypes.c_uint32
    err = fn(b"XnnpackBackend", ctypes.addressof(opt), 1)
    if err != 0:
        raise SystemExit(f"set_option(XnnpackBackend, weight_cache_enabled) failed: error 0x{err:x}")


def _child(path: Path, entry: str, cache: bool, seq: int) -> dict:
    import numpy as np

    from mobile_export.measure.child import import_runtime
    from mobile_export.measure.memory import delta, model_kib, reset_peak, resident_kib, status_kib

    module = import_runtime("executorch")
    if cache:
        _enable_weights_cache()
    reset_peak()
    base = resident_kib(path)
    runner = module.Runner(path, entry=entry)
    loaded = model_kib(delta(resident_kib(path), base))
    feeds = {
        "input_ids": np.ones((1, seq), np.int64),
        "attention_mask": np.ones((1, seq), np.int64),
        "token_type_ids": np.zeros((1, seq), np.int64),
    }
    runner.run(feeds)
    ran = model_kib(delta(resident_kib(path), base))
    return {"load_kib": loaded, "model_kib": ran}


def main() -> None:
    """Measure each way of running the file and print a Markdown table."""
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("pte")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(_child(Path(a.pte), a.child[0], a.child[1] == "on", a.seq)))
        return
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(16 * 1024))
    print(f"{a.pte}: {Path(a.pte).stat().st_size:,} B, {a.seq} tokens, median of {a.repeats} fresh processes")
    print("| run through | XNNPACK weights cache | model RAM after load MiB | model RAM after one run MiB |")
    print("|---|---|---|---|")
    for entry, cache in (("loop", "off"), ("loop", "on"), ("forward", "off"), ("forward", "on")):
        rows = []
        for _ in range(a.repeats):
            out = subprocess.run(
                [sys.executable, __file__, a.pte, "--seq", str(a.seq), "--child", entry, cache],
                env=env, capture_output=True, text=True, check=True,
            ).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
        load = statistics.median(r["load_kib"] for r in rows) / 1024
        model = statistics.median(r["model_kib"] for r in rows) / 1024
        print(f"| {entry} | {cache} | {load:.1f} | {model:.1f} |")


if __name__ == "__main__":
    main()
