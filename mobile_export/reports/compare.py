"""``mobile-export compare``: exports side by side on one harness (ALBERT against BERT, int8 against int4, ...).

For every artifact of every export folder: the model's parameters, the file's bytes, its parity figures (read from
the folder's report.json), and what the device feels, measured as ``bench`` measures (``measure.bench.measure``:
a fresh process per artifact and length, the same thread count, batch-1 calls on fixed token ids after warm-up):
latency, the model's RAM after load and the runs, and the peak of the process above its runtime's baseline, at
each length the export takes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import backends
from ..core.errors import BadInputError
from ..core.figures import mib
from ..core.files import REPORT_JSON
from ..measure.bench import machine, measure
from ..model.families import longest_input
from .records import ReportRecord


def _record(folder: Path) -> ReportRecord:
    path = folder / REPORT_JSON
    if not path.is_file():
        raise BadInputError(f"{folder} has no {REPORT_JSON}; pass the --out folders of mobile-export export")
    try:
        return ReportRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, TypeError):
        raise BadInputError(f"{path} is not a mobile-export report; export the folder again") from None


def compare(
    folders: Sequence[str | Path],
    seq_lens: Sequence[int] = (128, 512),
    threads: int = 2,
    runs: int = 15,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Every artifact of every export folder in ``folders``, measured on one harness; JSON-ready.

    Args:
        folders: the --out folders of ``mobile-export export`` (each with its report.json).
        seq_lens: the token counts latency and RAM are measured at (a length beyond an export's max length is
            left out for it, and says so).
        threads: the runtime's threads, the same for every artifact.
        runs: timed runs per length (after warm-up).
        say: where progress lines go.
    """
    records = [(Path(f), _record(Path(f))) for f in folders]  # every folder read before anything is measured
    rows = []
    for folder, record in records:
        config = record.model.get("config") or {}
        max_len = int(record.options.get("max_seq_len") or longest_input(config))
        vocab = int(config.get("vocab_size") or 100)
        for a in record.artifacts:
            backend, path = backends.open_artifact(folder / a.file)
            longest = backends.sequence_length(backend, dict(a.result.stats)) or max_len  # a fixed-length file
            row: dict[str, Any] = {
                "export": folder.name,
                "file": a.file,
                "family": record.model.get("model_type"),
                "task": record.model.get("task"),
                "quant": a.quant,
                "parameters": record.model.get("unique_parameters"),
                "bytes": a.bytes,
                "sqnr_db": a.parity.sqnr_db,
                "decisive_agreement": a.parity.decisive_agreement,
                "min_example_sqnr_db": a.parity.min_example_sqnr_db,
                "passed": a.parity.passed,
                "at": {},
            }
            for tokens in seq_lens:
                if tokens > longest:
                    row["at"][str(tokens)] = {"skipped": f"beyond the export's max length {longest}"}
                    continue
                say(f"compare {folder.name}/{a.file} at {tokens} tokens, {threads} threads ...")
                got = measure(backend.value, str(path), threads, [tokens], vocab, runs)
                timed = "simulator_latency_ms" if got.get("simulator") else "latency_ms"  # not the device's time
                row["at"][str(tokens)] = {
                    timed: got[timed][str(tokens)]["median"],
                    timed.replace("_ms", "_p90_ms"): got[timed][str(tokens)]["p90"],
                    "model_rss_bytes": got["model_rss_bytes"],
                    "peak_over_baseline_bytes": got["peak_over_baseline_bytes"],
                    "peak_rss_bytes": got["peak_rss_bytes"],
                    "load_seconds": got["load_seconds"],
                }
            rows.append(row)
    return {"machine": machine(), "threads": threads, "seq_lens": list(seq_lens), "runs": runs, "rows": rows}


def markdown(result: dict[str, Any]) -> str:
    """The comparison as a Markdown table (one row per artifact)."""
    lens = [str(s) for s in result["seq_lens"]]
    head = ["export", "file", "family", "quant", "parameters", "bytes", "bytes / parameter", "SQNR dB"]
    for s in lens:
        head += [f"ms @{s}", f"model RAM @{s}", f"peak above runtime @{s}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in result["rows"]:
        params = r["parameters"] or 0
        cells = [
            r["export"],
            r["file"],
            str(r["family"]),
            r["quant"],
            f"{params:,}",
            f"{r['bytes']:,}",
            f"{r['bytes'] / params:.3f}" if params else "n/a",
            f"{r['sqnr_db']:.1f}",
        ]
        for s in lens:
            m = r["at"].get(s, {})
            if "model_rss_bytes" not in m:
                cells += ["n/a"] * 3
                continue
            ms = f"{m['latency_ms']:.2f}" if "latency_ms" in m else f"({m['simulator_latency_ms']:.0f}, simulator)"
            cells += [ms, mib(m["model_rss_bytes"]), mib(m["peak_over_baseline_bytes"])]
        lines.append("| " + " | ".join(cells) + " |")
    m = result.get("machine") or {}
    lines.append("")
    lines.append(
        f"{result['threads']} threads, median of {result['runs']} batch-1 calls after warm-up, each artifact and "
        f"length in a fresh process; on {m.get('cpu')} ({' '.join(m.get('int8_features') or []) or 'no int8 features'})"
    )
    if any("simulator_latency_ms" in at for r in result["rows"] for at in r["at"].values()):
        lines.append(
            "(ms, simulator): the NPU file on its simulator on this host (the simulator's time, not the phone's; "
            "its RAM is the simulator process'); BENCHMARKS.md has the device figures"
        )
    return "\n".join(lines)
