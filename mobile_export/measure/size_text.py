"""An artifact's size section as the ``size`` command prints it: the breakdown by part, sharing, memory, budgets."""

from __future__ import annotations

from ..core.figures import mib
from .size import SizeEntry


def format_overhead(e: SizeEntry | dict) -> int:
    """Bytes of the artifact that are neither weights, other constants, its bundled assets nor other lengths'
    graphs."""
    return (
        int(e.get("overhead_bytes", 0))
        - int(e.get("other_constants_bytes", 0))
        - int(e.get("bundle_bytes", 0))
        - sum(e.get("length_graphs", {}).values())
    )


def _mb(n: int) -> str:
    return f"{n:,} B ({mib(n, 2)})"


def format_entry(e: SizeEntry) -> str:
    """The ``size`` command's text for one artifact."""
    lines = [f"{e['file']}: {_mb(e['bytes'])}; deflate-compressed {_mb(e['deflate_bytes'])}"]
    if e.get("compiled_for"):
        return "\n".join(
            lines
            + [
                f"  precompiled for {e['compiled_for']}: its compiled part {_mb(e.get('context_bytes', 0))} "
                "holds the weights; the breakdown, the sharing and the RAM are those of the model it was "
                "compiled from (size that file)"
            ]
        )
    groups = e.get("groups")
    if groups:
        for g, v in groups.items():
            lines.append(f"  {g:<26}{v:>14,} B  {100 * v / e['bytes']:5.1f}%")
        lines.append(f"  {'other constants':<26}{e['other_constants_bytes']:>14,} B")
        if e.get("bundle_bytes"):
            lines.append(f"  {'bundled assets':<26}{e['bundle_bytes']:>14,} B  (tokenizer, labels, card, identity)")
        if e.get("length_graphs"):
            lengths = ", ".join(e["length_graphs"])
            lines.append(
                f"  {'graphs of other lengths':<26}{sum(e['length_graphs'].values()):>14,} B  ({lengths} tokens: "
                "their nodes and own scales, compressed; the weights are the file's)"
            )
        lines.append(
            f"  {'format overhead':<26}{format_overhead(e):>14,} B"
            + (f"  (XNNPACK graphs {e['delegate_graph_bytes']:,} B)" if e.get("delegate_graph_bytes") else "")
        )
        p = e["parameters"]
        shared = f"; {p['unshared']:,} if the {p['layers']} layers were not shared ({p['ratio']}x)"
        lines.append(f"  parameters: {p['unique']:,} unique" + (shared if p["unshared"] != p["unique"] else ""))
        verdict = e["sharing_verdict"]
        if e.get("shares_weights") is False and e.get("sharing_preserved") and verdict.startswith("preserved: "):
            verdict = "none to keep (the model shares no weight); " + verdict.removeprefix("preserved: ")
        lines.append(f"  sharing: {verdict}")
    lines.append(f"  stored blobs: {e['distinct_blobs']} distinct of {e['blobs']}")
    if e.get("memory_sharing_verdict"):
        lines.append(f"  memory sharing: {e['memory_sharing_verdict']}")
    for c in e.get("precompiled", []):
        lines.append(
            f"  precompiled for {c['soc']}: {c['file']} {_mb(c['bytes'])}, {c['over_model_bytes']:,} B over {e['file']}"
        )
    if e.get("memory") and e.get("simulated"):
        m = e["memory"]
        lines.append(
            f"  RAM of {e['simulated']}'s process on this x86 host (load + one run at {m['seq_len']} tokens; not the "
            f"device's, whose accelerator holds the weights in its own memory): model {mib(m['model_rss_bytes'])}; "
            f"peak RSS {mib(m['peak_rss_bytes'], 0)}"
        )
    elif e.get("memory"):
        m = e["memory"]
        lines.append(
            f"  RAM (load + one run at {m['seq_len']} tokens): model {mib(m['model_rss_bytes'])}, "
            f"{m['model_rss_bytes'] / e['bytes']:.2f}x the file (private {mib(m['private_bytes'])}, "
            f"artifact pages {mib(m['artifact_bytes'])}); runtime library code touched "
            f"{mib(m['library_bytes'])}; peak RSS of the measuring process (its runtime libraries included) "
            f"{mib(m['peak_rss_bytes'], 0)}"
        )
    for b in e.get("budgets", []):
        verdict = "within" if b["within"] else f"OVER by {b['over_bytes']:,} B"
        lines.append(f"  budget {b['name']} {b['bytes']:,} B ({b['applies_to']}): {verdict}")
    return "\n".join(lines)
