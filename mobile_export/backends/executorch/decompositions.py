"""ExecuTorch's decomposition re-runs, each made only when its table holds an operator of the graph.

ExecuTorch 1.5.1 prepares each method for a partitioner that checks operators (XNNPACK's does) with three
``ExportedProgram.run_decompositions`` calls: functionalization with an empty table, the default table without the
operators the partitioner keeps, and the default table again after the kept operators were renamed out of its
reach. Each call re-traces the whole graph, even when no operator of the graph is in its table; then it returns
the same operators (an encoder's layer and head methods: both calls after functionalization, the attention calling
core ATen's ``_softmax`` itself). ExecuTorch itself skips such a call on its path for partitioners that check
nothing (``_program.py``: "safe to skip when none of those targets occur in the graph", once the first call has
functionalized the graph); this does the same on the other path. The written file is the same
(``tests/test_decompositions.py`` compares the bytes), and a tiny encoder's .pte lowering takes 10-24% less, a
bert-base-sized one 5% (BENCHMARKS.md).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator


def can_act(program, table) -> bool:
    """Whether ``run_decompositions(table)`` can change ``program``'s operators: some call in its graph (nested
    graphs included) is of an operator the table decomposes."""
    from executorch.exir.graph_module import contains_any_call_fn_target_op

    return contains_any_call_fn_target_op(program.graph_module, table)


@contextlib.contextmanager
def only_decompositions_that_can_act() -> Iterator[list[bool]]:
    """While lowering, a ``run_decompositions`` call on a program that an earlier call in this block returned
    (so already functional) returns that program unchanged when no operator of its graph is in the table; any
    other call runs. Yields a list that records each call: True when it ran, False when it was skipped."""
    from torch.export import ExportedProgram

    real = ExportedProgram.run_decompositions
    functional: weakref.WeakSet = weakref.WeakSet()  # what a call returned: functionalized, its operators final
    calls: list[bool] = []

    def run_decompositions(self, decomp_table=None, *args, **kwargs):
        # an empty table functionalizes, None is every core ATen decomposition: only a table's operators are looked for
        if decomp_table and self in functional and not can_act(self, decomp_table):
            calls.append(False)
            return self
        calls.append(True)
        program = real(self, decomp_table, *args, **kwargs)
        functional.add(program)
        return program

    ExportedProgram.run_decompositions = run_decompositions  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        ExportedProgram.run_decompositions = real  # type: ignore[method-assign]
