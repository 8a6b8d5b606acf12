"""The export's stage that precompiles a checked, bundled file for named devices (the NPU file's EPContext models,
``--soc``), through its format's ``Capability.PRECOMPILE``; each one is checked by it before it is kept."""

from __future__ import annotations

import numpy as np

from .. import backends
from ..assets.identity import restamp
from ..core.fsutil import sha256_file
from ..core.signature import INPUT_NAMES
from ..parity.checker import Checked
from .context import ExportRun


def _feeds(golden: list[dict], length: int) -> list[dict[str, np.ndarray]]:
    """The first golden example's inputs, and one text of the file's whole length (each runs twice per SoC on the
    simulator: about 20 s a run at albert-base's size)."""
    rows = [(g["input_ids"], g["token_type_ids"]) for g in golden[:1]]
    full = np.random.default_rng(0).integers(5, 100, size=length)
    rows.append((full.tolist(), [0] * length))
    out = []
    for ids, types in rows:
        a = np.asarray([ids], np.int64)
        out.append({INPUT_NAMES[0]: a, INPUT_NAMES[1]: np.ones_like(a), INPUT_NAMES[2]: np.asarray([types], np.int64)})
    return out


def precompile_all(run: ExportRun, checked: Checked) -> list[str]:
    """Each artifact of ``checked`` whose format precompiles, precompiled for the devices its options name; the
    files written."""
    written: list[str] = []
    for r in checked.results:
        fmt = backends.precompiling(r.backend)
        options = run.options.options_for(r.backend)
        devices = fmt.targets(options) if fmt is not None else ()
        if fmt is None or not devices:
            continue
        length = backends.sequence_length(r.backend, dict(r.stats)) or run.max_len
        with run.progress.step(f"precompiling {r.file} for {', '.join(devices)} (checked on each device's simulator)"):
            entries = fmt.precompile(run.staging / r.file, options, _feeds(checked.tally.golden, length))
        carried = (r.stats.get("bundle") or {}).get("identity")
        for e in entries:  # each carries the file's identity: give it its own (the bytes the check ran on)
            if carried:
                e["identity"] = restamp(run.staging / e["file"], carried)
            e["sha256"] = sha256_file(run.staging / e["file"])
        r.stats["precompiled"] = entries
        written += [e["file"] for e in entries]
        for e in entries:
            run.progress.say(
                f"{e['file']}: {e['bytes']:,} B for {e['device']}, outputs equal to "
                f"{r.file}'s on {e['checked_texts']} texts; loads in {e['load_seconds']} s"
            )
    return written
