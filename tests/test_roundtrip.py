"""ALBERT's layer groups beyond the test matrix's (``test_matrix``: every task, format and precision, pairwise with
the other factors): ``num_hidden_groups`` and ``inner_group_num`` other than 1, exported and checked in each runtime.
"""

from __future__ import annotations

import pytest

from mobile_export import Backend, ExportOptions, Quant, export

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full


@pytest.mark.parametrize("backend", [Backend.ONNX, Backend.EXECUTORCH], ids=str)
def test_layer_groups_and_inner_groups(tiny_checkpoint, tmp_path, backend):
    """num_hidden_groups / inner_group_num other than 1 (two groups of two layers, 4 layers)."""
    ckpt = tiny_checkpoint("text-classification", "wordpiece", num_hidden_layers=4, num_hidden_groups=2,
                           inner_group_num=2)
    result = export(ckpt, tmp_path / "o", ExportOptions(backends=(backend,), quant=Quant.INT8, measure_memory=False))
    [art] = result.artifacts
    assert art.parity.passed and art.parity.sqnr_db >= 20
    assert result.report["model"]["config"]["num_hidden_groups"] == 2
    if backend is Backend.ONNX:
        # 4 group applications x 2 inner layers x 6 weight MatMuls, + projection, pooler, classifier
        cov = art.parity.coverage
        assert cov.quantized_weight_matmuls == 4 * 2 * 6 + 3 and cov.fp32_weight_matmuls == 0
