"""The report's plots (matplotlib, embedded as PNG): error by length, per-example SQNR, size breakdown."""

from __future__ import annotations

import base64
import io

from .records import DepthSeries, ReportRecord, depth_series, depth_words


def _figure_png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


SAME_DB = 0.1  # a real series this close to an emulated one at every depth is drawn as one line


def _distinct(series: list[DepthSeries]) -> list[DepthSeries]:
    """The series to draw: an emulated one that a real one matches at every depth (the emulation is that exact)
    is not drawn again; the real one says so in its label."""
    out, shown = [], list(series)
    for s in series:
        twin = next(
            (
                m
                for m in series
                if m.measured
                and not s.measured
                and len(m.sqnr_db) == len(s.sqnr_db)
                and all(a is not None and b is not None and abs(a - b) <= SAME_DB for a, b in zip(m.sqnr_db, s.sqnr_db))
            ),
            None,
        )
        if twin is not None:
            shown[series.index(twin)] = DepthSeries(
                f"{twin.label} = {s.label} (within {SAME_DB} dB)", True, twin.sqnr_db
            )
            continue
        out.append(s)
    return [shown[series.index(s)] for s in out]


def plots(report: ReportRecord) -> list[tuple[str, str]]:
    """(caption, data URI) for each plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    out = []
    for a in report.artifacts:
        pd = a.plot
        if pd is not None and pd.reference:
            fig, ax = plt.subplots(figsize=(4.2, 4))
            ax.scatter(pd.reference, pd.artifact, s=4, alpha=0.5)
            lo = min(min(pd.reference), min(pd.artifact))
            hi = max(max(pd.reference), max(pd.artifact))
            ax.plot([lo, hi], [lo, hi], color="grey", linewidth=0.8)
            ax.set_xlabel("fp32 PyTorch output")
            ax.set_ylabel(f"{a.file} output")
            ax.set_title(f"{a.file}: outputs vs fp32")
            out.append((f"{a.file}: artifact vs fp32 output values (sample of {len(pd.reference)})", _figure_png(fig)))
            diffs = [abs(x - y) for x, y in zip(pd.reference, pd.artifact)]
            fig, ax = plt.subplots(figsize=(4.2, 3.2))
            ax.hist(diffs, bins=40)
            ax.set_xlabel("|artifact - fp32|")
            ax.set_ylabel("values")
            ax.set_title(f"{a.file}: error histogram")
            out.append((f"{a.file}: distribution of absolute errors", _figure_png(fig)))
        if pd is not None and pd.per_example:
            fig, ax = plt.subplots(figsize=(4.2, 3.2))
            xs, ys = zip(*pd.per_example)
            ax.scatter(xs, ys, s=6, alpha=0.6)
            ax.set_xlabel("sequence length (tokens)")
            ax.set_ylabel("max |diff| in the example")
            ax.set_title(f"{a.file}: error by length")
            out.append((f"{a.file}: per-example max error by sequence length", _figure_png(fig)))
    series = depth_series(report.diagnosis or {}, report.repair or {})
    if series:
        fig, ax = plt.subplots(figsize=(5.2, 3.4))
        for s in _distinct(series):
            depths = [k + 1 for k, v in enumerate(s.sqnr_db) if v is not None]
            ax.plot(
                depths,
                [v for v in s.sqnr_db if v is not None],
                linestyle="-" if s.measured else "--",
                marker="o" if s.measured else None,
                markersize=3,
                label=s.label,
            )
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        words = depth_words(report.model)
        ax.set_xlabel(words.axis)
        ax.set_ylabel("hidden state SQNR vs fp32 (dB)")
        ax.set_title(words.title)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=1, frameon=False)
        out.append((f"{words.title}: {words.after}", _figure_png(fig)))
    sized = [(a.file, a.size) for a in report.artifacts if a.size is not None and a.size.get("groups")]
    if sized:
        fig, ax = plt.subplots(figsize=(6, 0.6 + 0.5 * len(sized)))
        for i, (_, size) in enumerate(sized):
            left = 0.0
            groups = size.get("groups") or {}
            parts = [*groups.items(), ("format overhead", size.get("overhead_bytes", 0))]
            for j, (g, v) in enumerate(parts):
                ax.barh(i, v / 2**20, left=left, color=f"C{j}", label=g if i == 0 else None)
                left += v / 2**20
        ax.set_yticks(range(len(sized)), [name for name, _ in sized])
        ax.set_xlabel("MiB")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=3)
        ax.set_title("size breakdown")
        out.append(("size breakdown by part of the model", _figure_png(fig)))
    return out
