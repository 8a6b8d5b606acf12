"""``export --pte-entry loop|forward|both``: the .pte's methods, run in ExecuTorch's runtime."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mobile_export import Backend, BadInputError, ExportOptions, Quant, export, load
from mobile_export.assets.bundle import ASSETS_KEY, IDENTITY_KEY
from mobile_export.backends import executorch as et
from mobile_export.model.reference import tokenize
from mobile_export.parity.texts import CHINESE, ENGLISH

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full


@pytest.fixture(scope="module")
def entries(tiny_checkpoint, tmp_path_factory):
    """entry -> export folder of the same tiny classifier (the suite's default: 2 layers, one shared group, so its loop
    runs the group twice; the loop's lowering is other tests' too), int8 .pte only."""
    ckpt = tiny_checkpoint("text-classification")
    out = {}
    for entry in ("loop", "forward", "both"):
        dest = tmp_path_factory.mktemp(f"entry-{entry}") / "o"
        export(ckpt, dest, ExportOptions(backends=(Backend.EXECUTORCH,), quant=Quant.INT8, measure_memory=False,
                                         format_options={"pte_entry": entry}))
        out[entry] = dest
    return ckpt, out


def _stored(path) -> int:
    from mobile_export.backends.executorch.serializer import read_program

    named = read_program(path).named_data
    return sum(len(b) for b in named.buffers)


def test_methods_of_each_entry(entries):
    _, out = entries
    carried = {ASSETS_KEY, IDENTITY_KEY}  # every export's .pte carries its assets as two constant methods
    every = {e: set(et.Runner(out[e] / "model.pte").program.method_names) for e in out}
    assert all(carried <= names for names in every.values())
    names = {e: every[e] - carried for e in every}
    assert {"embed", "layer_group_0", "head", "layer_schedule"} <= names["loop"] and "forward" not in names["loop"]
    assert names["forward"] == {"forward"}
    assert names["both"] == names["loop"] | {"forward"}


def test_both_runs_forward_with_the_loops_outputs_and_stores_the_weights_once(entries):
    ckpt, out = entries
    from mobile_export.model.loading import load_checkpoint

    tok = load_checkpoint(ckpt).tokenizer
    pte = out["both"] / "model.pte"
    loop, forward = et.Runner(pte), et.Runner(pte, entry="forward")
    assert loop.forward is None and forward.forward is not None  # each ran its own methods
    for ex in tokenize(tok, ENGLISH[:4] + CHINESE[:4], 160):
        (a,), (b,) = loop.run(ex.feeds), forward.run(ex.feeds)
        np.testing.assert_allclose(a, b, atol=1e-5)
    # forward's weights are the loop's bytes: the named-data store holds them once
    assert _stored(pte) == _stored(out["loop"] / "model.pte")
    assert _stored(out["forward"] / "model.pte") == _stored(out["loop"] / "model.pte")


def test_forward_only_file_refuses_the_loop_and_loop_only_refuses_forward(entries):
    from mobile_export.core.errors import ArtifactLoadError

    _, out = entries
    assert et.Runner(out["forward"] / "model.pte").forward is not None  # runs forward when it is all there is
    with pytest.raises(ArtifactLoadError, match="has no forward method"):
        et.Runner(out["loop"] / "model.pte", entry="forward")


def test_error_by_depth_is_read_through_the_loop_and_not_invented_without_one(entries):
    """The int8 diagnosis reads each depth's hidden state through the layer loop; a forward-only program
    has no loop to read, and its report says nothing rather than something emulated."""
    _, out = entries
    for entry, dest in out.items():
        depths = json.loads((dest / "report.json").read_text())["diagnosis"]["runtime_depth_sqnr_db"]
        assert depths == {} if entry == "forward" else len(depths["model.pte"]) == 2, (entry, depths)
    assert et.depth_runner(out["forward"] / "model.pte") is None
    assert et.depth_runner(out["both"] / "model.pte") is not None


def test_memory_verdict_both_ways(entries):
    """forward packs the shared layer once per layer (the Python wheel has no weights cache): NOT shared;
    both is judged by the loop the app runs: shared."""
    _, out = entries
    assert et.memory_sharing(out["loop"] / "model.pte")[0]
    assert et.memory_sharing(out["both"] / "model.pte")[0]
    shared, verdict = et.memory_sharing(out["forward"] / "model.pte")
    assert not shared and "weights cache" in verdict


def test_manifest_and_predictor_for_each_entry(entries):
    _, out = entries
    labels = None
    for entry, folder in out.items():
        manifest = json.loads((folder / "manifest.json").read_text())
        (art,) = manifest["artifacts"]
        assert art["entry"] == entry
        name = art["calling_convention"]["name"]
        assert name == ("single-method/1" if entry == "forward" else "albert-layer-loop/1")
        assert ("also" in art) == (entry == "both")
        predictor = load(folder)  # one load: each checks the file in a verifying child process
        got = [predictor.classify(t).label for t in ENGLISH[:5]]
        labels = labels or got
        assert got == labels  # the same model, whichever method runs it


def test_pte_entry_needs_the_pte():
    with pytest.raises(BadInputError, match="--pte-entry forward shapes the .pte"):
        ExportOptions(backends=(Backend.ONNX,), format_options={"pte_entry": "forward"})
    with pytest.raises(BadInputError, match="is not one of"):
        ExportOptions(format_options={"pte_entry": "unrolled"})
