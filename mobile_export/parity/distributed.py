"""Parity over a Ray cluster, for validation sets one machine cannot get through: the texts go out in
batches, each worker loads the checkpoint and the artifacts once, and the per-batch tallies are merged
in batch order into the tally of the whole set (counts exactly as in one process; sums within float
rounding, since they are added in another order).

The checkpoint and the artifacts must be at the same paths on every node (one machine, or a shared
file system). Ray is an optional extra: ``pip install 'mobile-export[ray]'``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..core.errors import BadInputError, MobileExportError, first_line
from ..core.progress import Progress
from ..model.loading import LoadedModel
from ..parity.checker import PARITY_BATCH_TEXTS
from .checker import ArtifactCheck, Checker, RateLine, Sample, Tally
from .source import ParitySource

QUEUED_PER_WORKER = 2  # batches given to a worker ahead, so it never waits for the driver


class _Worker:
    """One Ray actor: the checkpoint and every artifact's runtime, loaded once, one thread each."""

    def __init__(
        self, checkpoint: str, task: str, checks: Sequence[ArtifactCheck], max_len: int, head: dict | None = None
    ) -> None:
        import torch

        from ..core.quiet import quiet_libraries
        from ..core.heads import HeadSpec
        from ..model.heads import with_head
        from ..model.loading import load_checkpoint

        quiet_libraries()
        torch.set_num_threads(1)
        loaded = with_head(load_checkpoint(checkpoint, task), HeadSpec.from_manifest(head))
        # every text on a simulated format too: a worker's own sample would depend on which batches it got
        self.checker = Checker(loaded, checks, max_len, threads=1, sample=Sample(per_bucket=0))

    def run(self, index: int, items: list[tuple[str, int | None]]) -> Tally:
        tally = self.checker.new_tally(seed=index)
        self.checker.run(items, tally)
        return tally


def require_ray():
    """The ray module, or a one-line error naming the extra that installs it."""
    try:
        import ray
    except ImportError:
        raise BadInputError("--ray needs Ray, an optional extra: pip install 'mobile-export[ray]'") from None
    return ray


def _connect(ray, address: str, workers: int | None) -> bool:
    """Join (or, for ``local``, start) the cluster; True when this call did it (so it also shuts it down)."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report leaves the machine
    try:
        if address == "local":
            ray.init(
                num_cpus=workers or os.cpu_count(),
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
                _node_ip_address="127.0.0.1",
            )
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise BadInputError(
            f"cannot reach the Ray cluster at --ray {address} ({first_line(exc, 160)}); start one "
            "with `ray start --head`, or pass --ray local for one on this machine"
        ) from None
    return True


def _unwrap(exc: BaseException) -> BaseException:
    """The project's own error a worker raised, if that is what a Ray error carries."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, MobileExportError):
        return cause
    return MobileExportError(f"a Ray worker failed: {first_line(exc, 200)}; rerun with --debug")


def run_on_ray(
    address: str,
    checkpoint: str,
    loaded: LoadedModel,
    checks: Sequence[ArtifactCheck],
    max_len: int,
    source: ParitySource,
    progress: Progress,
    workers: int | None = None,
) -> Tally:
    """Every text of ``source`` through workers on the Ray cluster at ``address``; the merged tally.

    At most ``QUEUED_PER_WORKER`` batches per worker are out at once, and finished batches wait only
    for the ones before them, so the driver's memory stays bounded whatever the size of ``source``.
    """
    ray = require_ray()
    started = _connect(ray, address, workers)
    try:
        n = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        actor = ray.remote(num_cpus=1)(_Worker)
        actors = [actor.remote(checkpoint, loaded.task.name, list(checks), max_len, loaded.task.head) for _ in range(n)]
        progress.say(f"parity: {n} Ray workers at {address}, {PARITY_BATCH_TEXTS} texts a batch")
        tally = Tally.empty(loaded.task, checks)
        line = RateLine(progress, len(source), checks)
        batches = enumerate(source.batches(PARITY_BATCH_TEXTS))
        free = [a for a in actors for _ in range(QUEUED_PER_WORKER)]
        running: dict = {}
        done: dict[int, Tally] = {}
        next_index, exhausted = 0, False
        while True:
            while free and not exhausted and len(running) + len(done) < QUEUED_PER_WORKER * n:
                item = next(batches, None)
                if item is None:
                    exhausted = True
                    break
                worker = free.pop()
                running[worker.run.remote(*item)] = (item[0], worker)
            if not running:
                break
            ready, _ = ray.wait(list(running), num_returns=1)
            index, worker = running.pop(ready[0])
            try:
                done[index] = ray.get(ready[0])
            except Exception as exc:
                raise _unwrap(exc) from exc
            free.append(worker)
            while next_index in done:
                tally.merge(done.pop(next_index))
                next_index += 1
                line.update(tally)
        line.update(tally, final=True)
        return tally
    finally:
        if started:
            ray.shutdown()
