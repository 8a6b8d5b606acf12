"""A .pte run in the ExecuTorch runtime through its calling convention."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ...core.native_stderr import caught_stderr
from .convention import EMBED_METHOD, GROUP_METHOD, HEAD_INPUTS_METHOD, HEAD_METHOD, SCHEDULE_METHOD

_NOISE = ("[cpuinfo_utils.cpp:", "[threadpool.cpp:")  # the runtime's probing and threadpool notices


class PteRunner:
    """A .pte loaded by the ExecuTorch runtime, run through its calling convention.

    The layer-loop program (``embed``, ``layer_group_G``, ``head``, ``layer_schedule``) is what
    ``export`` writes by default and runs when present, unless ``entry="forward"``; a single ``forward``
    method (``--pte-entry forward``, other tools' exports) is run as it is. Only the methods used load.
    """

    def __init__(
        self, path: Path, threads: int | None = None, verification: str = "internal", entry: str | None = None
    ) -> None:
        # the runtime's cpuinfo probing and threadpool notices, printed when it first loads, are not the user's
        with caught_stderr(lambda line: line.startswith(_NOISE)):
            self._load(path, threads, verification, entry)

    def _load(self, path: Path, threads: int | None, verification: str, entry: str | None) -> None:
        from ...core.threads import runtime_threads
        from .runtime_libs import Runtime, Verification, portable_lib

        threads = runtime_threads(threads)
        if threads:
            portable_lib._unsafe_reset_threadpool(threads)
        level = Verification.InternalConsistency if verification == "internal" else Verification.Minimal
        self.program = Runtime.get().load_program(str(path), verification=level)
        names = self.program.method_names
        if entry == "forward" and "forward" not in names:
            from ...core.errors import ArtifactLoadError

            raise ArtifactLoadError(f"{path.name} has no forward method; export it with --pte-entry forward or both")
        if EMBED_METHOD in names and entry != "forward":
            schedule = [int(v) for v in self.program.load_method(SCHEDULE_METHOD).execute([])]
            self.embed = self.program.load_method(EMBED_METHOD)
            self.groups = {g: self.program.load_method(GROUP_METHOD.format(g)) for g in sorted(set(schedule))}
            self.schedule = schedule
            self.head = self.program.load_method(HEAD_METHOD)
            self.head_inputs = (
                [int(v) for v in self.program.load_method(HEAD_INPUTS_METHOD).execute([])]
                if HEAD_INPUTS_METHOD in names
                else []
            )
            self.forward = None
        else:
            self.forward = self.program.load_method("forward")
        self.inputs = int((self.forward or self.embed).metadata.num_inputs())  # the model inputs it takes

    @property
    def loops(self) -> bool:
        """The program is run through its layer loop (each depth's hidden state passes through the caller)."""
        return self.forward is None

    def run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self._run(feeds, None)

    def run_states(self, feeds: dict[str, np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The outputs and the hidden state after each depth of the layer loop, each ``[tokens, hidden]``."""
        if not self.loops:
            raise ValueError("a single-method program has no layer loop to observe")
        states: list[np.ndarray] = []
        outputs = self._run(feeds, states)
        return outputs, states

    def _run(self, feeds: dict[str, np.ndarray], states: list[np.ndarray] | None) -> list[np.ndarray]:
        from ...core.signature import INPUT_NAMES

        names = INPUT_NAMES[: self.inputs]  # the program's family's (DistilBERT: no token_type_ids)
        inputs = [torch.from_numpy(np.ascontiguousarray(feeds[n], dtype=np.int64)) for n in names]
        if self.forward is not None:
            outputs = self.forward.execute(inputs)
        else:
            hidden, mask = self.embed.execute(inputs)
            for g in self.schedule:
                (hidden,) = self.groups[g].execute([hidden, mask])
                if states is not None:  # [1, S, 1, H] -> [S, H]; copied: the method's memory is reused
                    states.append(hidden.detach().numpy().reshape(hidden.shape[1], -1).copy())
            outputs = self.head.execute([hidden, *[inputs[i] for i in self.head_inputs]])
        return [o.detach().numpy().copy() for o in outputs]


def depth_runner(path: Path) -> PteRunner | None:
    """``path`` loaded for ``run_states``, or None when the program has no layer loop (``--pte-entry forward``)."""
    runner = PteRunner(path, threads=None, verification="minimal")
    return runner if runner.loops else None
