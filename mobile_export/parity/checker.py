"""The runtime check of artifacts: parity texts streamed through the fp32 reference and every artifact's
real runtime, compared as they arrive and dropped, so memory is bounded by a window of texts.

The reference runs in length-sorted, right-padded batches; the artifacts run one text at a time, batch 1,
as an app calls them. A batch of texts adds to a ``Tally``; tallies of consecutive batches merge, which
is how ``distributed`` spreads a validation set over a Ray cluster.
"""

from __future__ import annotations

import os
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import backends
from ..core.choices import Quant
from ..backends import Backend
from ..core.errors import ArtifactLoadError, first_line
from ..core.progress import Progress
from ..core.tasks import OutputKind, TaskSpec
from ..core.thresholds import Thresholds
from ..model.families import longest_input
from ..model.loading import LoadedModel
from ..model.reference import Example, output_width, reference_batch, tokenize
from .accumulate import ParityAccumulator
from .artifact import ArtifactResult
from .metrics import bucket_of
from .plots import CrossRuntimeTally, PlotSampler
from .source import ParitySource

# Parity batches: texts per batch a runtime (or a Ray worker) is handed, and the most texts in one padded
# fp32 reference batch (within its token and value limits below).
PARITY_BATCH_TEXTS = 64
REFERENCE_BATCH_TEXTS = 32
WINDOW_VALUES = 16_000_000  # fp32 reference output values held at once (64 MB)
WINDOW_TEXTS = 256
BATCH_VALUES = 8_000_000  # padded output values of one reference batch (32 MB)
BATCH_TOKENS = 256  # padded tokens of one reference batch: more is slower on CPU (BENCHMARKS.md "Parity at scale")
GOLDEN = 3  # short examples with their ids and fp32 outputs, for on-device self-tests
GOLDEN_MAX_VALUES = 4096
PROGRESS_SECONDS = 10.0
MAX_SIMULATORS = 8  # each simulator process holds its own compiled graph: bounded, whatever the host


@dataclass(frozen=True)
class Sample:
    """How a check runs a simulated runtime (the NPU's simulator, about a second per text): ``per_bucket`` texts of
    each length bucket (None: the format's default; 0: every text), on ``processes`` simulators side by side."""

    per_bucket: int | None = None
    processes: int = 1

    def quota(self, info: backends.BackendInfo) -> int | None:
        """The texts per length bucket a format of ``info`` runs; None: every text."""
        if not info.simulated or self.per_bucket == 0:
            return None
        return self.per_bucket or info.parity_per_bucket

    @staticmethod
    def for_host(per_bucket: int | None = None) -> "Sample":
        """One simulator per core this process may use (at most ``MAX_SIMULATORS``)."""
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return Sample(per_bucket, max(1, min(cores, MAX_SIMULATORS)))


@dataclass(frozen=True)
class ArtifactCheck:
    """One artifact to run: its name in the report, its file and format, and the limits it is held to;
    with ``cpu``, on that ARM64 CPU model under emulation, compared also with the run named ``host``."""

    name: str
    backend: Backend
    path: Path
    quant: Quant
    thresholds: Thresholds
    cpu: str | None = None
    host: str | None = None


@dataclass
class Tally:
    """What a run of texts adds up to, per artifact and across them; a tally of the texts that follow
    merges in (``merge``)."""

    parity: list[ParityAccumulator]
    plots: list[PlotSampler]
    seconds: list[array]  # per artifact, each example's run time
    cross: CrossRuntimeTally  # between the artifacts run on this machine
    vs_host: dict[int, ParityAccumulator] = field(default_factory=dict)  # emulated run k against its host run
    lengths: set[int] = field(default_factory=set)
    labelled: int = 0
    reference_seconds: float = 0.0
    golden: list[dict] = field(default_factory=list)
    cpu_features: dict[str, tuple[str, ...]] = field(default_factory=dict)  # per emulated CPU model
    texts: int = 0  # through the reference (a sampled artifact runs fewer)
    fixed_lengths: dict[int, int] = field(default_factory=dict)  # per check of one sequence length: that length

    @staticmethod
    def empty(task: TaskSpec, checks: Sequence[ArtifactCheck], seed: int = 0) -> "Tally":
        """A tally of no texts for these checks (``seed`` draws its plot samples)."""
        return Tally(
            [ParityAccumulator(task) for _ in checks],
            [PlotSampler(seed) for _ in checks],
            [array("d") for _ in checks],
            CrossRuntimeTally(task, [c.name for c in checks if c.cpu is None]),
            vs_host={k: ParityAccumulator(task) for k, c in enumerate(checks) if c.cpu is not None},
        )

    @property
    def n_examples(self) -> int:
        """Texts run through the reference."""
        return self.texts

    def merge(self, other: "Tally") -> None:
        """Fold in the tally of the texts that follow these."""
        for mine, theirs in zip(self.parity, other.parity):
            mine.merge(theirs)
        for mine_p, theirs_p in zip(self.plots, other.plots):
            mine_p.merge(theirs_p)
        for mine_s, theirs_s in zip(self.seconds, other.seconds):
            mine_s.extend(theirs_s)
        self.cross.merge(other.cross)
        for k, acc in self.vs_host.items():
            acc.merge(other.vs_host[k])
        self.lengths |= other.lengths
        self.labelled += other.labelled
        self.reference_seconds += other.reference_seconds
        self.golden += other.golden[: GOLDEN - len(self.golden)]
        self.cpu_features.update(other.cpu_features)
        self.texts += other.texts
        self.fixed_lengths.update(other.fixed_lengths)


@dataclass
class Checked:
    """Artifacts run in their real runtimes against the fp32 reference: each one's result, what the run added up
    to (cross-runtime agreement, golden examples) and what the parity texts were."""

    results: list[ArtifactResult]
    tally: Tally
    parity_data: dict


def _load_runner(check: ArtifactCheck, threads: int | None, simulators: int):
    """The artifact's runtime; a simulated one on ``simulators`` processes side by side when more than one."""
    info = backends.get_info(check.backend)
    module = backends.load(check.backend)
    pool = backends.simulator_pool(check.backend) if simulators > 1 else None
    try:
        return pool(check.path, simulators) if pool is not None else module.Runner(check.path, threads)
    except ArtifactLoadError:  # the format's own refusal says why already
        raise
    except Exception as exc:
        raise ArtifactLoadError(f"{check.path.name} does not load in {info.runtime}: {first_line(exc, 200)}") from exc


class Checker:
    """The fp32 model and every artifact's runtime, each loaded once; ``run`` adds a batch of texts to a tally.
    Checks on an ARM64 CPU model run in one emulated process per model (``arm64``: the prepared
    environment); ``close`` ends them."""

    def __init__(
        self,
        loaded: LoadedModel,
        checks: Sequence[ArtifactCheck],
        max_len: int,
        threads: int | None = None,
        arm64=None,
        sample: Sample | None = None,
    ) -> None:
        self.loaded, self.checks, self.max_len = loaded, list(checks), max_len
        sample = sample or Sample()
        self.emulators: dict = {}
        self.cpu_features: dict[str, tuple[str, ...]] = {}
        self.runners: list = []
        try:
            for c in self.checks:
                self.runners.append(self._emulated(c, arm64) if c.cpu else _load_runner(c, threads, sample.processes))
            for check, runner in zip(self.checks, self.runners):
                if check.cpu:
                    runner.ready()
            # asked once every process has loaded, so that the emulated processes still start side by side
            self.cpu_features = {cpu: emulator.features() for cpu, emulator in self.emulators.items()}
        except BaseException:
            self.close()
            raise
        self.width = output_width(loaded.config, loaded.task)
        self.per_token = loaded.task.per_token
        # a runtime too slow for every text (the NPU simulator) runs the first few of each length bucket
        self.quota = [None if c.cpu else sample.quota(backends.get_info(c.backend)) for c in self.checks]
        # runners that take a window's texts ahead (emulated CPUs, simulator pools) and give them back in order
        self.ahead = [hasattr(r, "submit") for r in self.runners]
        self.taken: list[dict[int, int]] = [{} for _ in self.checks]
        self.pad_id = int(getattr(loaded.config, "pad_token_id", None) or 0)

    def _emulated(self, check: ArtifactCheck, arm64):
        from .arm64.emulator import EmulatedRunner, Emulator

        cpu = str(check.cpu)
        if cpu not in self.emulators:
            self.emulators[cpu] = Emulator(arm64, cpu)
        return EmulatedRunner(self.emulators[cpu], check.name, check.backend.value, check.path)

    def close(self) -> None:
        """End the emulated processes and the simulator pools."""
        for emulator in self.emulators.values():
            emulator.close()
        self.emulators = {}
        for check, runner in zip(self.checks, self.runners):
            if check.cpu is None and hasattr(runner, "close"):
                runner.close()
        self.runners = []

    def new_tally(self, seed: int = 0) -> Tally:
        tally = Tally.empty(self.loaded.task, self.checks, seed)
        tally.cpu_features.update(self.cpu_features)
        tally.fixed_lengths.update({j: r.length for j, r in enumerate(self.runners) if getattr(r, "length", None)})
        return tally

    def _values(self, length: int) -> int:
        """Output values of one example of ``length`` tokens."""
        return self.width * (length if self.per_token else 1)

    def windows(self, examples: list[Example]) -> Iterator[range]:
        """Consecutive runs of examples whose reference outputs fit ``WINDOW_VALUES`` together."""
        start, values = 0, 0
        for k, ex in enumerate(examples):
            v = self._values(ex.length)
            if k > start and (values + v > WINDOW_VALUES or k - start >= WINDOW_TEXTS):
                yield range(start, k)
                start, values = k, 0
            values += v
        if start < len(examples):
            yield range(start, len(examples))

    def reference(self, examples: list[Example], window: range) -> dict[int, list[np.ndarray]]:
        """fp32 outputs of a window's examples: sorted by length, in padded batches within the limits."""
        order = sorted(window, key=lambda k: examples[k].length)
        out: dict[int, list[np.ndarray]] = {}
        while order:
            n = 1
            while n < min(len(order), REFERENCE_BATCH_TEXTS):
                longest = examples[order[n]].length
                if (n + 1) * longest > BATCH_TOKENS or (n + 1) * self._values(longest) > BATCH_VALUES:
                    break
                n += 1
            batch, order = order[:n], order[n:]
            for k, outs in zip(
                batch, reference_batch(self.loaded.model, self.loaded.task, [examples[k] for k in batch], self.pad_id)
            ):
                out[k] = outs
        return out

    def run(self, items: Sequence[tuple[str, int | None]], tally: Tally) -> None:
        """Run ``items`` (text, label) through the reference and every artifact, adding them to ``tally``."""
        loaded = self.loaded
        examples = tokenize(loaded.tokenizer, [text for text, _ in items], self.max_len)
        if loaded.task.kind is OutputKind.TOP_K:  # the head answers at masks: give every text some
            from ..core.signature import MASK_SLOTS
            from .topk import masked

            examples = masked(examples, int(loaded.tokenizer.mask_token_id), MASK_SLOTS)
        for window in self.windows(examples):
            runs = {k: [j for j in range(len(self.checks)) if self._sampled(j, examples[k])] for k in window}
            for k in window:  # emulated CPUs and simulator pools compute the window while this process runs its own
                for j in runs[k]:
                    if self.ahead[j]:
                        self._run_one(self.checks[j], self.runners[j].submit, examples[k], feed=True)
            t0 = time.perf_counter()
            refs = self.reference(examples, window)
            tally.reference_seconds += time.perf_counter() - t0
            for k in window:
                ex, label, full = examples[k], items[k][1], refs.pop(k)
                ref = full[: len(loaded.task.outputs)]  # full: + what only the reference gives (top-k heads)
                outputs = {}
                for j in runs[k]:  # host checks come first
                    check, runner = self.checks[j], self.runners[j]
                    t = time.perf_counter()
                    act = (
                        self._run_one(check, runner.result, ex, feed=False)
                        if self.ahead[j]
                        else self._run_one(check, runner.run, ex, feed=True)
                    )
                    # a pool times each text in its simulator; waiting for the pool is not the runtime's time
                    tally.seconds[j].append(getattr(runner, "took", None) or time.perf_counter() - t)
                    _same_outputs(_shown(check), loaded, ref, act)
                    tally.parity[j].add(full, act, ex.length, label, plot=tally.plots[j])
                    outputs[check.name] = act
                    if check.cpu and check.host is not None:
                        tally.vs_host[j].add(outputs[check.host], act, ex.length)
                tally.cross.add({c.name: outputs[c.name] for c in self.checks if c.cpu is None and c.name in outputs})
                tally.lengths.add(ex.length)
                tally.texts += 1
                tally.labelled += label is not None
                if len(tally.golden) < GOLDEN and ex.text and sum(o.size for o in ref) <= GOLDEN_MAX_VALUES:
                    tally.golden.append(_golden(loaded.task, ex, ref))

    def _sampled(self, j: int, ex: Example) -> bool:
        """Whether check ``j`` runs ``ex``: always, or while its length bucket's quota lasts; never a text longer
        than an artifact of one fixed length takes (the app cuts the NPU file's texts there)."""
        quota, length = self.quota[j], ex.length
        fixed = getattr(self.runners[j], "length", None)
        if fixed is not None and length > fixed:
            return False
        if quota is None:
            return True
        bucket = bucket_of(length)
        if self.taken[j].get(bucket, 0) >= quota:
            return False
        self.taken[j][bucket] = self.taken[j].get(bucket, 0) + 1
        return True

    def _run_one(self, check: ArtifactCheck, call, ex: Example, feed: bool):
        try:
            return call(ex.feeds) if feed else call()
        except Exception as exc:  # e.g. token ids beyond a smaller vocabulary
            config = self.loaded.config
            raise ArtifactLoadError(
                f"{_shown(check)} fails on a {ex.length}-token parity text ({first_line(exc, 160)}): it is not an "
                f"export of this checkpoint ({config.vocab_size} words, max length "
                f"{longest_input(config)}); pass the checkpoint it was exported from"
            ) from exc


def _shown(check: ArtifactCheck) -> str:
    """The artifact as an error names it: its file, and the CPU model when emulated."""
    return f"{check.path.name} on arm64 {check.cpu}" if check.cpu else check.path.name


def _same_outputs(name: str, loaded: LoadedModel, reference: list, actual: list) -> None:
    """An artifact of another model (other labels, other task) has other outputs: exit 2, one line."""
    want = [tuple(r.shape) for r in reference]
    got = [tuple(np.shape(a)) for a in actual]
    if want != got:
        labels = f", {loaded.config.num_labels} labels" if loaded.task.has_labels else ""
        raise ArtifactLoadError(
            f"{name} outputs shapes {got}, the checkpoint ({loaded.task.name}{labels}) "
            f"{want}: it is an export of a different model; pass the checkpoint it was exported from"
        )


def _golden(task: TaskSpec, ex: Example, reference: list[np.ndarray]) -> dict:
    """One short input with its expected ids and fp32 outputs."""
    return {
        "text": ex.text,
        "input_ids": ex.feeds["input_ids"][0].tolist(),
        "token_type_ids": ex.feeds["token_type_ids"][0].tolist(),
        "outputs": {
            name: {"shape": list(o.shape), "values": [round(float(v), 6) for v in o.ravel()]}
            for name, o in zip(task.outputs, reference)
        },
    }


class RateLine:
    """Progress a person can read on a long run: texts done of the total, texts per second overall, of
    the reference and of each runtime, and the time left; at most every ``PROGRESS_SECONDS``."""

    def __init__(self, progress: Progress, total: int, checks: Sequence[ArtifactCheck]) -> None:
        self.progress, self.total = progress, total
        self.names = [c.name for c in checks]
        self.timed = {c.name for c in checks if c.cpu is None}  # emulation says nothing about speed
        self.start = self.last = time.monotonic()

    def update(self, tally: Tally, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < PROGRESS_SECONDS:
            return
        self.last = now
        done, elapsed = tally.n_examples, max(now - self.start, 1e-9)
        rate = done / elapsed
        parts = [f"fp32 reference {_per_second(done, tally.reference_seconds)}"]
        parts += [f"{n} {_per_second(done, sum(s))}" for n, s in zip(self.names, tally.seconds) if n in self.timed]
        left = f", about {_duration((self.total - done) / rate)} left" if rate > 0 and done < self.total else ""
        self.progress.say(f"parity: {done:,}/{self.total:,} texts, {rate:.1f} texts/s ({'; '.join(parts)}){left}")


def _per_second(n: int, seconds: float) -> str:
    return f"{n / seconds:.1f}/s" if seconds > 0 else "-"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def run_local(
    checker: Checker, source: ParitySource, progress: Progress, batch_texts: int = PARITY_BATCH_TEXTS
) -> Tally:
    """Every text of ``source`` through ``checker`` in this process, with a rate line on long runs."""
    tally = checker.new_tally()
    line = RateLine(progress, len(source), checker.checks)
    try:
        for batch in source.batches(batch_texts):
            checker.run(batch, tally)
            line.update(tally)
    finally:
        checker.close()
    line.update(tally, final=True)
    return tally
