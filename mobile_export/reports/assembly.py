"""report.json assembled from a run: the model summary, the options, the parity texts, each artifact, the
agreement across runtimes, the versions and the checking host, in one ``ReportRecord``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..measure.budgets import Budget
from ..measure.size import SizeEntry
from ..model.summary import model_summary
from .records import Artifact, ReportRecord

if TYPE_CHECKING:
    from ..model.loading import LoadedModel
    from ..parity.checker import Checked


def versions() -> dict[str, str | None]:
    """Versions of the packages that wrote and checked the artifacts."""
    from importlib.metadata import PackageNotFoundError, version

    from .. import backends

    out: dict[str, str | None] = {}
    # the model's side, then every format's runtime and converters (the registry's)
    for name in dict.fromkeys(
        (
            "mobile-export",
            "torch",
            "transformers",
            "optimum",
            "numpy",
            "sentencepiece",
            "tokenizers",
            *backends.packages(),
        )
    ):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def checking_host() -> dict:
    """The machine that ran the artifacts: CPU, int8 features, and each runtime's int8 mode there."""
    from .. import backends
    from ..core.host import this_host

    host = this_host()
    precision: dict[str, str | None] = {}
    for b, info in backends.BACKENDS.items():  # one line per runtime on this CPU: its int8 mode here
        fmt = backends.host_precision(b)
        if info.library not in precision and not info.simulated:
            precision[info.library] = fmt.describe_precision(None, host) if fmt is not None else info.int8_mode
    return {**host.describe(), "precision": precision}


def build_report(
    tool: str,
    loaded: LoadedModel,
    checked: Checked,
    options: dict,
    *,
    sizes: Sequence[SizeEntry] | None = None,
    paths: Sequence[str] | None = None,
    budget: Budget | None = None,
    within_budget: bool | None = None,
    timings: dict[str, float] | None = None,
    diagnosis: dict | None = None,
    repair: dict | None = None,
    folds: dict | None = None,
) -> ReportRecord:
    """The one report both commands write: model, options, parity data, each artifact (with its size section,
    ``export``, or its path as given, ``parity``), cross-runtime agreement, versions and the checking host; the
    export's budget and verdict, stage timings (rounded to 0.01 s), int8 diagnosis, the exact folds and repair."""
    size_of: list[SizeEntry | None] = [None] * len(checked.results) if sizes is None else list(sizes)
    path_of: list[str | None] = [None] * len(checked.results) if paths is None else list(paths)
    return ReportRecord(
        tool=tool,
        versions=versions(),
        host=checking_host(),
        model=model_summary(loaded),
        options=options,
        parity_data=checked.parity_data,
        artifacts=tuple(Artifact(r, s, p) for r, s, p in zip(checked.results, size_of, path_of)),
        cross_runtime=tuple(checked.tally.cross.rows()),
        budget=budget,
        within_budget=within_budget,
        timings_seconds={k: round(v, 2) for k, v in (timings or {}).items()},
        diagnosis=diagnosis,
        repair=repair,
        folds=folds,
    )
