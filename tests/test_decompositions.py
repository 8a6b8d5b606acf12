"""ExecuTorch's decomposition re-runs are made only when they can act (``backends.executorch.decompositions``): a
table that holds an operator of the graph still decomposes it, the lowered file is ExecuTorch's own, and a gate that
skipped a table with work to do would break the lowering (so the comparison can fail)."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch.export import ExportedProgram

from mobile_export.backends.executorch import decompositions


class _Softmax(torch.nn.Module):
    """A Linear and a softmax: ExecuTorch's default table decomposes ``aten.softmax.int`` (not core ATen)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.softmax(self.linear(x), dim=-1) + x


def _exported() -> ExportedProgram:
    torch.manual_seed(0)
    return torch.export.export(_Softmax().eval(), (torch.randn(2, 8),))


def _ops(program: ExportedProgram) -> set[str]:
    return {str(n.target) for n in program.graph_module.graph.nodes if n.op == "call_function"}


def _lowered(gate) -> tuple[bytes, list[bool] | None]:
    """_Softmax (seeded) lowered to XNNPACK under ``gate``; the file and the calls the gate recorded."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    with gate() as calls:
        edge = to_edge_transform_and_lower(_exported(), partitioner=[XnnpackPartitioner()])
    return edge.to_executorch().buffer, calls


def test_a_table_runs_when_it_holds_an_operator_of_the_graph_and_is_skipped_when_not():
    from executorch.exir.tracer import _default_decomposition_table

    table = _default_decomposition_table()
    exported = _exported()
    unrelated = {op: table[op] for op in table.keys() if "batch_norm" in str(op)}  # none in the graph
    assert unrelated
    real = ExportedProgram.run_decompositions
    with decompositions.only_decompositions_that_can_act() as calls:
        # a program no call of the block returned (not known to be functional) is never skipped
        assert exported.run_decompositions(unrelated) is not exported
        functional = exported.run_decompositions({})
        assert "aten.softmax.int" in _ops(functional) and decompositions.can_act(functional, table)
        decomposed = functional.run_decompositions(table)
        assert "aten.softmax.int" not in _ops(decomposed) and "aten._softmax.default" in _ops(decomposed)
        assert not decompositions.can_act(decomposed, unrelated)
        assert decomposed.run_decompositions(unrelated) is decomposed
        assert decomposed.run_decompositions({}) is not decomposed  # functionalization always runs
    assert calls == [True, True, True, False, True]
    assert ExportedProgram.run_decompositions is real  # restored after the block


def test_the_gated_lowering_writes_executorchs_bytes_and_a_gate_that_skipped_work_would_fail(monkeypatch):
    full, _ = _lowered(contextlib.nullcontext)
    gated, calls = _lowered(decompositions.only_decompositions_that_can_act)
    assert calls is not None and False in calls and True in calls  # something was skipped, something ran
    assert gated == full
    monkeypatch.setattr(decompositions, "can_act", lambda program, table: False)
    with pytest.raises(Exception, match="softmax"):  # the softmax left undecomposed: not in the edge opset
        _lowered(decompositions.only_decompositions_that_can_act)
