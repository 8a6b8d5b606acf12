"""The report's section tables and its summary lines, from report.json's record: artifacts, length buckets, the
emulated ARM64 CPUs, size and memory, the int8 diagnosis, the NPU file's, the repairs (``render`` lays them out as
Markdown and HTML)."""

from __future__ import annotations

import math

from ..core.figures import mib
from ..core.thresholds import Thresholds
from ..measure.memory import MemoryFigures
from ..measure.size import SizeEntry
from ..measure.size_text import format_overhead
from .records import DepthWords, ReportRecord, depth_series, depth_words, granularity_label


def pct(v) -> str:
    return "n/a" if v is None else f"{v:.2%}"


def num(v, fmt: str = ".3g") -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return format(v, fmt)


def _artifact_rows(report: ReportRecord) -> list[list[str]]:
    rows = []
    for a in report.artifacts:
        p = a.parity
        acc = "n/a" if p.accuracy is None else f"{p.accuracy:.2%} (fp32 {pct(p.reference_accuracy)})"
        if p.topk_overlap is not None:
            acc = f"top-k overlap {p.topk_overlap:.2%}"
        if p.retrieval_agreement is not None:
            acc = f"retrieval {p.retrieval_agreement:.2%} of {p.retrieval_queries} queries"
        rows.append(
            [
                a.file,
                a.quant,
                f"{a.bytes:,}",
                num(p.max_abs_diff),
                num(p.mean_abs_diff),
                num(p.sqnr_db, ".1f"),
                num(p.min_example_sqnr_db, ".1f"),
                num(p.min_cosine, ".5f"),
                pct(p.agreement),
                pct(p.decisive_agreement),
                "n/a" if p.near_ties is None else str(p.near_ties),
                p.coverage.summary() if p.coverage else "n/a",
                acc,
                "pass" if p.passed else "FAIL: " + "; ".join(p.failures),
            ]
        )
    return rows


HEAD = [
    "artifact",
    "quant",
    "bytes",
    "max abs diff",
    "mean abs diff",
    "SQNR dB",
    "min example SQNR dB",
    "min cosine",
    "raw top-1 agreement",
    "decisive agreement",
    "near-ties",
    "coverage",
    "accuracy",
    "verdict",
]


BUCKET_HEAD = [
    "tokens",
    "examples",
    "max abs diff",
    "mean abs diff",
    "SQNR dB",
    "min example SQNR dB",
    "raw agreement",
    "decisive agreement",
    "near-ties",
    "gated",
]
ISA_HEAD = [
    "artifact",
    "CPU model",
    "max abs diff",
    "SQNR dB",
    "min example SQNR dB",
    "decisive agreement",
    "accuracy",
    "max abs diff vs this machine",
    "decisive agreement vs this machine",
    "raw agreement vs this machine",
    "verdict",
]


# the peak of the fresh process that loads and runs the artifact: the runtime's libraries and (.pte) torch count
PEAK_LABEL = "peak RSS of the measuring process (its runtime libraries included)"


def _preserved(verdict: bool | None) -> str:
    return "preserved" if verdict else "NOT preserved"


def sharing_words(size: SizeEntry, verdict: bool | None, memory: bool = False) -> str:
    """The summary's words for a sharing verdict: "sharing" where the model shares a weight (ALBERT's layer, a tied
    table), else what the check still proves, that each weight is stored (or packed) once."""
    if verdict is None:
        return "sharing n/a"
    if size.get("shares_weights", True):
        return f"{'memory ' if memory else ''}sharing {_preserved(verdict)}"
    what = "packed" if memory else "stored"
    return f"each weight {what} once" if verdict else f"a weight {what} twice"


def memory_of(size: SizeEntry) -> MemoryFigures | None:
    """The RAM measured in an artifact's size section (None: not measured)."""
    memory = size.get("memory")
    return MemoryFigures.from_dict(memory) if memory else None


def sections(report: ReportRecord) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) tables shared by the Markdown and HTML reports."""
    out = [("Parity against the fp32 PyTorch reference", HEAD, _artifact_rows(report))]
    for a in report.artifacts:
        rows = [
            [
                b.bucket,
                str(b.examples),
                num(b.max_abs_diff),
                num(b.mean_abs_diff),
                num(b.sqnr_db, ".1f"),
                num(b.min_example_sqnr_db, ".1f"),
                pct(b.agreement),
                pct(b.decisive_agreement),
                "n/a" if b.near_ties is None else str(b.near_ties),
                "yes" if b.gated else "no",
            ]
            for b in a.parity.by_length
        ]
        if rows:
            out.append((f"{a.file}: by sequence length (tokens)", BUCKET_HEAD, rows))
    isa = [
        [
            a.file,
            f"{e.cpu} ({', '.join(e.features)})" if e.features else e.cpu,
            num(e.max_abs_diff),
            num(e.sqnr_db, ".1f"),
            num(e.min_example_sqnr_db, ".1f"),
            pct(e.decisive_agreement),
            pct(e.accuracy),
            num(e.vs_host.max_abs_diff),
            pct(e.vs_host.decisive_agreement),
            pct(e.vs_host.agreement),
            "pass" if e.passed else "FAIL: " + "; ".join(e.failures),
        ]
        for a in report.artifacts
        for e in a.isa
    ]
    if isa:
        out.append(("On ARM64 (the runtimes' aarch64 builds under qemu, per phone CPU model)", ISA_HEAD, isa))
    if report.cross_runtime:
        out.append(
            (
                "Across runtimes",
                ["a", "b", "top-1 agreement", "decisions", "max abs diff"],
                [[c.a, c.b, pct(c.agreement), str(c.decisions), num(c.max_abs_diff)] for c in report.cross_runtime],
            )
        )
    worst = [
        [a.file, str(w.length), num(w.max_abs_diff), w.text[:120]] for a in report.artifacts for w in a.parity.worst
    ]
    if worst:
        out.append(("Worst examples", ["artifact", "tokens", "max abs diff", "text"], worst))
    diagnosis, repair = report.diagnosis or {}, report.repair or {}
    out += _diagnosis_sections(diagnosis, repair, depth_words(report.model)) + _repair_sections(repair)
    out += [section for d in diagnosis.get("npu") or [] for section in _npu_sections(d)]
    sized = [(a, a.size) for a in report.artifacts if a.size is not None and a.size.get("groups")]
    if sized:
        parts = list((sized[0][1].get("groups") or {}).keys())  # the family's parts (one model per report)
        rows = [[g] + [f"{(s.get('groups') or {}).get(g, 0):,}" for _, s in sized] for g in parts]
        rows.append(["other constants"] + [f"{s.get('other_constants_bytes', 0):,}" for _, s in sized])
        if any(s.get("bundle_bytes") for _, s in sized):
            rows.append(["bundled assets"] + [f"{s.get('bundle_bytes', 0):,}" for _, s in sized])
        if any(s.get("length_graphs") for _, s in sized):
            graphs = [sum(s.get("length_graphs", {}).values()) for _, s in sized]
            rows.append(["graphs of other lengths"] + [f"{b:,}" for b in graphs])
        rows.append(["format overhead"] + [f"{format_overhead(s):,}" for _, s in sized])
        rows.append(["deflate-compressed"] + [f"{s.get('deflate_bytes', 0):,}" for _, s in sized])
        rows.append(["sharing on disk"] + [_preserved(s.get("sharing_preserved")) for _, s in sized])
        if all(s.get("memory_sharing_preserved") is not None for _, s in sized):
            rows.append(["sharing in RAM"] + [_preserved(s.get("memory_sharing_preserved")) for _, s in sized])
        mem = [memory_of(s) for _, s in sized]
        if all(m is not None for m in mem):
            measured = [(m, s) for m, (_, s) in zip(mem, sized) if m is not None]
            rows.append(["model RAM (load + run)"] + [mib(m.model_rss_bytes) for m, _ in measured])
            rows.append(["RAM / file"] + [f"{m.model_rss_bytes / s.get('bytes', 0):.2f}x" for m, s in measured])
            rows.append([PEAK_LABEL] + [mib(m.peak_rss_bytes, 0) for m, _ in measured])
        socs = sorted({c["soc"] for _, s in sized for c in s.get("precompiled", [])})
        for soc in socs:  # the NPU file compiled per SoC (--soc): its bytes, and whether the shared layer stayed once
            cells = [next((c for c in s.get("precompiled", []) if c["soc"] == soc), None) for _, s in sized]
            rows.append([f"precompiled for {soc}"] + ["" if c is None else f"{c['bytes']:,}" for c in cells])
        out.append(("Size (bytes)", ["part"] + [a.file for a, _ in sized], rows))
    return out


def short_weight(name: str) -> str:
    """A weight's name without the path every model of its family shares: ``layer 0.attention.query``."""
    if ".albert_layers." in name:
        group = name.split(".albert_layer_groups.", 1)[-1].split(".", 1)[0]
        return ("" if group == "0" else f"group {group} ") + "layer " + name.split(".albert_layers.", 1)[-1]
    for layers in ("encoder.layer.", "transformer.layer."):  # BERT, ELECTRA, RoBERTa, XLM-R; DistilBERT
        if layers in name:
            return "layer " + name.split(layers, 1)[1]
    for prefix in ("albert.", "bert.", "electra.", "distilbert.", "roberta."):  # XLM-R's prefix is roberta.
        name = name.removeprefix(prefix)
    return name.removeprefix("encoder.")


def _diagnosis_sections(d: dict, repair: dict, words: DepthWords) -> list[tuple[str, list[str], list[list[str]]]]:
    """The int8 diagnosis: each weight's input channels and error share, and the error by depth (emulated, and
    each artifact in its runtime, plain and repaired)."""
    if not d.get("inputs"):
        return []
    emulated = d.get("emulated") or {}
    shares = {g: {w["weight"]: w for w in e.get("weights", [])} for g, e in emulated.items()}
    head = ["weight", "runs", "input spread (max / median channel)", "outlier channels (x median)"]
    for g in emulated:
        head += [f"{granularity_label(g)}: alone dB", f"{granularity_label(g)}: all but it dB"]
    rows = []
    for i in d["inputs"]:
        named = ", ".join(f"{o['channel']} ({o['ratio']:.0f}x)" for o in i.get("outliers", [])) or "none"
        row = [short_weight(i["weight"]), str(i["calls"]), num(i["spread"], ".1f"), named]
        for g in emulated:
            w = shares[g].get(i["weight"], {})
            row += [num(w.get("alone_db"), ".1f"), num(w.get("without_db"), ".1f")]
        rows.append(row)
    totals = ", ".join(f"{granularity_label(g)} {num(e.get('sqnr_db'), '.1f')} dB" for g, e in emulated.items())
    out = [
        (
            f"int8 diagnosis: each weight's input and error (emulated on {d.get('texts')} texts, each weight's "
            f"share on the shortest {d.get('attribution_texts', d.get('texts'))}; {totals})",
            head,
            rows,
        )
    ]
    series = depth_series(d, repair)
    depth = max((len(s.sqnr_db) for s in series), default=0)
    if depth:
        drows = [
            [str(k + 1)] + [num(s.sqnr_db[k] if k < len(s.sqnr_db) else None, ".1f") for s in series]
            for k in range(depth)
        ]
        out.append(
            (
                f"{words.title} ({words.after}, SQNR dB; emulated in PyTorch, and each artifact in its runtime "
                "through its layer loop)",
                [words.step] + [s.label for s in series],
                drows,
            )
        )
    return out


def _npu_sections(d: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """A statically quantized file's diagnosis: the tensors with the largest own error, and the error by layer."""
    place = {0: "embeddings", None: "head"}
    rows = [
        [
            t["tensor"],
            t["op"],
            place.get(t["layer"], str(t["layer"])),
            num(t["sqnr_db"], ".1f"),
            num(t["own_db"], ".1f"),
            f"{t['clipped']:.3%}" if t["clipped"] else "0",
        ]
        for t in d.get("named", [])
    ]
    title = (
        f"{d['file']} diagnosis per tensor ({d['texts']} texts, {d['runtime']}; {d['tensors_compared']} activations, "
        f"{d['clipped_tensors']} clipped)"
    )
    head = ["tensor", "op", "layer", "SQNR so far dB", "its own rounding dB", "values clipped"]
    out = [(title, head, rows)]
    if d.get("layer_sqnr_db"):
        layers = [[str(k + 1), num(v, ".1f")] for k, v in enumerate(d["layer_sqnr_db"])]
        out.append(
            (
                f"{d['file']} by layer (each layer's output, SQNR dB against the float model)",
                ["layer", "SQNR dB"],
                layers,
            )
        )
    return out


def fold_outcome(f: dict) -> tuple[str, str]:
    """(whether the exact folds were taken, the emulated SQNR before -> after per granularity) of report.json's
    ``folds``."""
    gains = ", ".join(f"{g} {e['before']:.1f} -> {e['after']:.1f} dB" for g, e in f["emulated_sqnr_db"].items())
    return ("folded" if f["taken"] else "not folded (no gain)"), gains


def _repair_sections(r: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """What --repair tried: each method, what it changed, each artifact before and after."""
    if not r.get("attempts"):
        return []
    rows = []
    for a in r["attempts"]:
        changes = "; ".join(change_words(c) for c in a.get("changes", []))
        what = a.get("note") or changes or "n/a"
        for o in a.get("artifacts") or [{}]:
            rows.append(
                [
                    a["method"],
                    what,
                    o.get("file", "n/a"),
                    f"{num(o.get('before_sqnr_db'), '.1f')} -> {num(o.get('after_sqnr_db'), '.1f')}",
                    f"{num(o.get('before_min_example_db'), '.1f')} -> {num(o.get('after_min_example_db'), '.1f')}",
                    f"{o['bytes_before']:,} -> {o['bytes_after']:,}" if o else "n/a",
                    f"{num(o.get('parity_ms_before'), '.2f')} -> {num(o.get('parity_ms_after'), '.2f')}"
                    if o
                    else "n/a",
                    f"{num(o.get('latency_ms_before'), '.2f')} -> {num(o.get('latency_ms_after'), '.2f')}"
                    if o
                    else "n/a",
                    f"{mib(o['model_rss_before'])} -> {mib(o['model_rss_after'])}"
                    if o.get("model_rss_before") is not None
                    else "n/a",
                    ("pass" if o.get("passed") else "FAIL") if o else "not exported",
                ]
            )
    tokens = next(
        (o["cost_tokens"] for a in r["attempts"] for o in a.get("artifacts", []) if o.get("cost_tokens")), 128
    )
    head = ["method", "changed", "artifact", "SQNR dB", "lowest example dB", "bytes", "median ms (parity)"]
    head += [f"median ms at {tokens} tokens (bench)", "model RAM", "verdict"]
    return [(f"int8 repair (--repair {r.get('mode')}; kept: {r.get('applied') or 'none'})", head, rows)]


def change_words(c: dict) -> str:
    """One change a repair made: a fold (smooth), the weights one runtime keeps in fp32 (mixed), or the NPU file's
    activations given wider ranges (ranges)."""
    if "tensors" in c:
        factors = ", ".join(f"{f:g}x at {b}" for b, f in c["headroom"].items())
        return f"wider ranges for {len(c['tensors'])} clipped activations ({', '.join(c['tensors'][:6])}; {factors})"
    if "fp32_weights" in c:
        kept = ", ".join(short_weight(w) for w in c["fp32_weights"]) or "none"
        return (
            f"fp32 for {granularity_label(c['granularity'])}: {kept} (emulated "
            f"{num(c.get('emulated_before_db'), '.1f')} -> {num(c.get('emulated_after_db'), '.1f')} dB)"
        )
    if "readers" in c:  # an input scale (scales)
        readers = ", ".join(short_weight(w) for w in c["readers"])
        return (
            f"{readers} scale their input: {c['channels_rescaled']} channels, scale up to {c['largest_scale']:.3g} "
            f"({c.get('stored_bytes', 0):,} B)"
        )
    return (
        f"{short_weight(c['producer'])} -> {short_weight(c['consumer'])}: {c['channels_rescaled']} channels, "
        f"scale up to {c['largest_scale']:.3g}"
    )


def summary_lines(report: ReportRecord) -> list[str]:
    m = report.model
    t = report.artifacts[0].parity.thresholds if report.artifacts else Thresholds()
    data = report.parity_data
    lines = [
        f"- model: `{m.get('source')}` ({m.get('architecture')}, task {m.get('task')})",
        f"- parity data: {data.get('source')} ({data.get('examples')} examples, {data.get('labelled', 0)} labelled"
        + (f", {data['blank_lines_skipped']} blank lines skipped" if data.get("blank_lines_skipped") else "")
        + ")",
        f"- thresholds: max abs diff {num(t.max_abs_diff)}, decisive agreement {pct(t.min_agreement)}, "
        f"SQNR {num(t.min_sqnr_db, '.1f')} dB, per-example SQNR {num(t.min_example_sqnr_db, '.1f')} dB",
        f"- verdict: **{'PASS' if report.passed else 'FAIL'}**",
    ]
    if report.folds:
        verb, gains = fold_outcome(report.folds)
        pairs = "; ".join(f"{c['producer']} -> {c['consumer']}" for c in report.folds["changes"])
        lines.append(f"- exact folds ({verb}, +0 bytes; emulated int8 {gains}): {pairs}")
    if report.repair:
        lines.append(
            f"- int8 repair: {report.repair.get('applied') or 'none passed'} (--repair {report.repair.get('mode')})"
        )
        for a in report.repair.get("attempts", []):
            if a["method"] == "mixed" and a["method"] == report.repair.get("applied"):
                lines += [f"- kept in fp32 ({', '.join(c['artifacts'])}): {change_words(c)}" for c in a["changes"]]
    outliers = [i for i in (report.diagnosis or {}).get("inputs", []) if i.get("outliers")]
    if outliers:
        lines.append(
            "- outlier channels: "
            + "; ".join(
                f"{short_weight(i['weight'])} {', '.join(str(o['channel']) for o in i['outliers'])}" for i in outliers
            )
        )
    gates = sorted({g for a in report.artifacts for g in a.parity.thresholds.explain()})
    lines += [f"- gate: {g}" for g in gates]
    ungated = [a for a in report.artifacts if a.parity.thresholds.min_cosine is None and a.parity.min_cosine < 0.99]
    if ungated:
        lines.append(
            f"- min cosine ({', '.join(f'{a.file} {a.parity.min_cosine:.3f}' for a in ungated)}) is reported, not "
            "gated, for logits: an example whose few outputs (two logits) are all near zero turns its vector with a "
            "small error; the gates judge each example's error against the typical example's output power instead"
        )
    h = report.host
    if h:
        lines.append(
            f"- checked on: {h.get('cpu')} ({h.get('arch')}; int8 features: "
            f"{' '.join(h.get('int8_features') or []) or 'none'})"
        )
        lines += [f"- {name} int8 mode: {mode}" for name, mode in (h.get("precision") or {}).items()]
    for a in report.artifacts:
        sim = (a.result.stats or {}).get("simulated")
        if sim:
            lines.append(
                f"- {a.file} ran on {sim['simulator']} ({a.result.stats.get('runtime_version')}): {sim['texts']} of "
                f"{sim['of']} parity texts, {sim['chosen']}; {sim['note']}"
            )
    v = report.versions  # every package the run recorded (the registry's formats' included) that is installed
    lines.append("- versions: " + ", ".join(f"{k} {value}" for k, value in v.items() if value))
    return lines
