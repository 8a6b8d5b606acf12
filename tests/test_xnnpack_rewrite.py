"""The batch-1 rewrite for XNNPACK (attention as 3D bmm, LayerNorm via 4D means, gelu) computes the model."""

from __future__ import annotations

import pytest
import torch

from mobile_export.backends.executorch.rewrites import GELU_NEW_VS_ERF_MAX_DIFF, SigmoidGelu, xnnpack_friendly
from mobile_export.core.choices import Quant
from mobile_export.model.loading import load_checkpoint
from mobile_export.model.reference import ExportWrapper


def test_sigmoid_gelu_is_gelu_new():
    from transformers.activations import NewGELUActivation

    x = torch.linspace(-12, 12, 100_001, dtype=torch.float64)
    assert torch.allclose(SigmoidGelu()(x), NewGELUActivation()(x), atol=1e-12, rtol=0)
    assert (torch.nn.functional.gelu(x) - NewGELUActivation()(x)).abs().max() <= GELU_NEW_VS_ERF_MAX_DIFF


@pytest.mark.parametrize("task", ["text-classification", "feature-extraction", "question-answering"])
@pytest.mark.parametrize("quant", [Quant.FP32, Quant.INT8], ids=str)
def test_rewrite_matches_eager(tiny_checkpoint, task, quant):
    loaded = load_checkpoint(tiny_checkpoint(task, "wordpiece", num_hidden_layers=3, num_hidden_groups=1))
    wrapper = ExportWrapper(loaded.model, loaded.task).eval()
    rewritten, counts = xnnpack_friendly(wrapper, quant)
    assert counts["attention"] == 1 and counts["encoder"] == 1 and counts["layer_norm"] == 3, counts
    # the original is untouched (query weights carry the folded scaling in the copy only)
    def query(model):
        albert = getattr(model, "albert", model)
        return albert.encoder.albert_layer_groups[0].albert_layers[0].attention.query.weight

    q0, q1 = query(loaded.model), query(rewritten.model)
    assert not torch.equal(q0, q1) and q0.data_ptr() != q1.data_ptr()
    torch.manual_seed(0)
    for length, pad in ((2, 0), (9, 3), (40, 17)):
        ids = torch.randint(5, loaded.config.vocab_size, (1, length))
        mask = torch.ones_like(ids)
        if pad:
            mask[0, -pad:] = 0
        types = torch.zeros_like(ids)
        with torch.no_grad():
            want, got = wrapper(ids, mask, types), rewritten(ids, mask, types)
        for w, g in zip(want, got):
            tol = 1e-5 if quant is Quant.FP32 else 1e-2  # int8 path: exact GELU for gelu_new
            assert torch.allclose(w, g, atol=tol, rtol=tol), (task, length, (w - g).abs().max())
