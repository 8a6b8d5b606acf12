"""The plain-text summary the CLI prints after ``export`` and ``parity``: each artifact's verdict, size, RAM and
repairs, the checking host, the budget."""

from __future__ import annotations

from .. import backends
from ..backends.base import Capability
from ..core.figures import mib
from .records import ReportRecord
from .tables import change_words, fold_outcome, memory_of, num, pct, sharing_words


def _cost_change(o: dict) -> str:
    """A repaired artifact's change in model RAM and latency, as the device's path measured them ('' if not)."""
    if o.get("latency_ms_before") is None:
        return ""
    ram = (o["model_rss_after"] - o["model_rss_before"]) / 2**20
    ms = 100 * (o["latency_ms_after"] / o["latency_ms_before"] - 1)
    return f", model RAM {ram:+.1f} MiB, {ms:+.0f}% ms at {o['cost_tokens']} tokens"


def folds_line(f: dict) -> str:
    """The line on the exact folds taken (or not) before lowering (report.json's ``folds``): the CLI's summary and
    the export's progress."""
    moved = sum(c["channels_rescaled"] for c in f["changes"])
    verb, gains = fold_outcome(f)
    return f"exact folds: {moved} channels in {len(f['changes'])} weight pairs {verb}, +0 B; emulated int8 {gains}"


def _repair_summary(r: dict) -> list[str]:
    """The CLI's lines on --repair: what each attempt changed and what it did to each artifact."""
    lines = []
    for a in r.get("attempts", []):
        if a.get("note") or not a.get("changes"):
            what = a.get("note")
        elif a["method"] in ("mixed", "ranges"):
            what = "; ".join(change_words(c) for c in a["changes"])
        else:
            moved = sum(c["channels_rescaled"] for c in a["changes"])
            stored = sum(c.get("stored_bytes", 0) for c in a["changes"])
            where = "inputs" if a["method"] == "scales" else "weight pairs"
            what = f"{moved} channels rescaled in {len(a['changes'])} {where}" + (f" ({stored:,} B)" if stored else "")
        done = ", ".join(
            f"{o['file']} {num(o['before_sqnr_db'], '.1f')} -> {num(o['after_sqnr_db'], '.1f')} dB "
            f"({'pass' if o['passed'] else 'FAIL'}, {o['bytes_after'] - o['bytes_before']:+,} B{_cost_change(o)})"
            for o in a.get("artifacts", [])
        )
        lines.append(f"repair {a['method']}: {what}" + (f"; {done}" if done else ""))
    return lines


def summary(report: dict) -> str:
    """The plain-text table the CLI prints after export and parity."""
    record = ReportRecord.from_json(report)
    w = max([12, *(len(a.file) for a in record.artifacts)])  # the file column fits the longest name (.qnn.onnx)
    lines = [
        f"{'artifact':<{w}} {'quant':<5} {'bytes':>12} {'max|diff|':>10} {'SQNR dB':>8} {'agree':>7} "
        f"{'accuracy':>15} {'ms/text':>8}  verdict"
    ]
    for a in record.artifacts:
        p = a.parity
        agree = "n/a" if p.decisive_agreement is None else f"{p.decisive_agreement:.1%}"
        acc = "n/a" if p.accuracy is None else f"{p.accuracy:.2%} ({pct(p.reference_accuracy)})"
        if p.retrieval_agreement is not None:  # a sentence embedding: the neighbours kept, the lowest cosine
            agree, acc = f"{p.retrieval_agreement:.1%}", f"cos {p.min_cosine:.4f}"
        ms = "n/a" if a.result.median_ms is None else f"{a.result.median_ms:.2f}"
        lines.append(
            f"{a.file:<{w}} {a.quant:<5} {a.bytes:>12,} {p.max_abs_diff:>10.3g} "
            f"{p.sqnr_db:>8.1f} {agree:>7} {acc:>15} {ms:>8}  {'pass' if p.passed else 'FAIL'}"
        )
        for e in a.isa:
            agree = "n/a" if e.decisive_agreement is None else f"{e.decisive_agreement:.1%}"
            acc = "n/a" if e.accuracy is None else f"{e.accuracy:.2%}"
            same = "n/a" if e.vs_host.agreement is None else f"{e.vs_host.agreement:.1%}"
            lines.append(
                f"  {e.cpu:<{w + 4}} {'':>12} {e.max_abs_diff:>10.3g} {e.sqnr_db:>8.1f} {agree:>7} "
                f"{acc:>15} {'':>8}  {'pass' if e.passed else 'FAIL'} (vs this machine: max|diff| "
                f"{e.vs_host.max_abs_diff:.3g}, top-1 {same})"
            )
    ties = [a.parity.near_ties for a in record.artifacts if a.parity.agreement is not None]
    if ties:
        lines.append(f"agree: decisive top-1 agreement (near-ties left out: {', '.join(map(str, ties))})")
    retrieval = [f"{a.parity.retrieval_queries}" for a in record.artifacts if a.parity.retrieval_agreement is not None]
    if retrieval:
        lines.append(
            f"agree: retrieval agreement, fp32's nearest neighbour kept ({', '.join(retrieval)} decisive queries); "
            "accuracy: every text's lowest cosine to fp32"
        )
    if any(a.parity.accuracy is not None for a in record.artifacts):
        lines.append(f"accuracy: artifact (fp32 reference) on {record.parity_data.get('labelled')} labelled texts")
    for a in record.artifacts:
        s = a.size
        if s is None:
            continue
        shared, memory = s.get("sharing_preserved"), memory_of(s)
        lines.append(
            f"{a.file}: deflate {s.get('deflate_bytes', 0):,} B; {sharing_words(s, shared)}"
            + (
                f"; RAM {mib(memory.model_rss_bytes)} ({memory.model_rss_bytes / a.bytes:.2f}x the file)"
                if memory and not s.get("simulated")
                else f"; {s['simulated']}'s RAM {mib(memory.model_rss_bytes)} (x86, not the device's)"
                if memory
                else ""
            )
            + (
                f"; {sharing_words(s, s.get('memory_sharing_preserved'), memory=True)}"
                if s.get("memory_sharing_preserved") is not None
                else ""
            )
        )
    lines += [folds_line(record.folds)] if record.folds else []
    lines += _repair_summary(record.repair or {})
    h = record.host
    if h:
        chosen = {  # the runtimes whose int8 kernels depend on the host (the others' are the same on every CPU)
            info.library for b, info in backends.BACKENDS.items() if backends.offers(b, Capability.HOST_PRECISION)
        }
        modes = "; ".join(f"{k}: {v}" for k, v in (h.get("precision") or {}).items() if k in chosen)
        lines.append(
            f"checked on {h.get('cpu')} ({' '.join(h.get('int8_features') or []) or 'no int8 features'})"
            + (f"; {modes}" if modes else "")
        )
    if record.budget is not None:
        b = record.budget
        lines.append(f"budget {b.name} {b.bytes:,} B ({b.applies_to}): {'within' if record.within_budget else 'OVER'}")
    for c in record.cross_runtime if record.tool == "mobile-export parity" else ():
        agree = "n/a" if c.agreement is None else f"{c.agreement:.2%}"
        lines.append(f"{c.a} vs {c.b}: top-1 agreement {agree}, max |diff| {c.max_abs_diff:.3g}")
    return "\n".join(lines)
