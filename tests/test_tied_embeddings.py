"""Fill-mask keeps ALBERT's tied word embeddings: one stored table for the lookup and the decoder."""

from __future__ import annotations

import json

import onnx
import pytest

from mobile_export import Backend, ExportOptions, Quant, export
from mobile_export.backends import executorch as et_backend
from mobile_export.measure.size import artifact_blobs, breakdown

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

EMBEDDING = 64  # wide enough that the table (vocab x 64) is the largest tensor of the tiny model
BOTH = (Backend.EXECUTORCH, Backend.ONNX)


def _export(tiny_checkpoint, dest, quant: Quant, tied: bool):
    ckpt = tiny_checkpoint("fill-mask", embedding_size=EMBEDDING, tie_word_embeddings=tied)
    result = export(ckpt, dest, ExportOptions(backends=BOTH, quant=quant, measure_memory=False))
    vocab = result.report["model"]["config"]["vocab_size"]
    return result, vocab * EMBEDDING * (1 if quant is Quant.INT8 else 4)


@pytest.fixture(scope="module")
def exported(tiny_checkpoint, tmp_path_factory):
    """(result, table bytes) of a tiny fill-mask export, made once per (quant, tied) for the module."""
    done: dict = {}

    def get(quant: Quant, tied: bool):
        if (quant, tied) not in done:
            dest = tmp_path_factory.mktemp(f"{quant.value}-{'tied' if tied else 'untied'}")
            done[quant, tied] = _export(tiny_checkpoint, dest / "o", quant, tied)
        return done[quant, tied]

    return get


def _tables(path, table_bytes: int) -> int:
    """How many stored blobs are the size of the word-embedding table."""
    blobs, _ = artifact_blobs(path)
    return sum(1 for b in blobs if len(b) == table_bytes)


@pytest.mark.parametrize("quant", [Quant.INT8, Quant.FP32], ids=str)
def test_tied_table_stored_once_untied_twice(exported, quant):
    tied, table = exported(quant, True)
    untied, _ = exported(quant, False)
    for t, u in zip(tied.artifacts, untied.artifacts):
        assert t.file == u.file
        t_path, u_path = tied.out / t.file, untied.out / u.file
        # parity ran with the default thresholds in the real runtime (export raises otherwise)
        assert t.parity.passed and u.parity.passed
        t_size = next(a["size"] for a in tied.report["artifacts"] if a["file"] == t.file)
        u_size = next(a["size"] for a in untied.report["artifacts"] if a["file"] == u.file)
        assert t_size["tied_embeddings"] is True and u_size["tied_embeddings"] is False
        assert t_size["sharing_preserved"], t_size["sharing_verdict"]
        assert "tied word-embedding table is stored once" in t_size["sharing_verdict"]
        assert u_size["sharing_preserved"], u_size["sharing_verdict"]  # judged as two tables
        assert _tables(t_path, table) == 1, t.file
        assert _tables(u_path, table) == 2, u.file
        # the untied model has one more table of its own; the tied one does not pay for it
        assert t.bytes + 0.9 * table < u.bytes, (t.file, t.bytes, u.bytes)
        assert t_size["groups"]["word embeddings"] < 1.1 * table + 16 * table // EMBEDDING
    onnx_model = onnx.load(str(tied.out / "model.onnx"), load_external_data=False)
    [decoder_weight] = [n for n in onnx_model.graph.node if n.op_type == "Transpose"]
    assert "word_embeddings" in decoder_weight.input[0]
    if quant is Quant.INT8:  # the decoder stays an int8 kernel reading the shared codes
        readers = [n for n in onnx_model.graph.node if decoder_weight.output[0] in n.input]
        # the Concat stacking it under its zero-point rows and the Cast that starts their sums, folded at load
        assert sorted(n.op_type for n in readers) == ["Cast", "Concat"]
        [stack] = [n for n in readers if n.op_type == "Concat"]
        assert [n.op_type for n in onnx_model.graph.node if stack.output[0] in n.input] == ["MatMulIntegerToFloat"]


def test_rows_below_the_int8_scale_floor_are_shared_too(tiny_checkpoint, shared_export):
    """A table of small values (initializer_range 0.02, width 32: a few rows whose largest value is below 127
    times the smallest row scale) is still stored once in both formats: the .onnx decoder is given the table's
    own int8 codes and scales, where ONNX Runtime's quantizer, quantizing the dequantized rows again, would
    spread such a row over the whole int8 range and store a second table."""
    ckpt = tiny_checkpoint("fill-mask", "sentencepiece", embedding_size=32, hidden_size=64, intermediate_size=96,
                           initializer_range=0.02)
    result = shared_export(ckpt, ExportOptions(backends=BOTH, measure_memory=False))
    vocab = result.report["model"]["config"]["vocab_size"]
    from mobile_export.model.loading import load_checkpoint
    from quantize.embedding import ZERO_ROW_SCALE

    table = load_checkpoint(str(ckpt)).model.get_input_embeddings().weight
    assert (table.abs().amax(dim=1) < 127 * ZERO_ROW_SCALE).any()  # the rows this is about exist
    for a in result.report["artifacts"]:
        assert a["size"]["sharing_preserved"], (a["file"], a["size"]["sharing_verdict"])
        assert _tables(result.out / a["file"], vocab * 32) == 1, a["file"]


def test_verdict_flags_a_tied_table_stored_twice(tiny_checkpoint, tmp_path, monkeypatch):
    """Without the sharing passes the tied table is stored twice, and the size verdict says so."""
    import quantize.onnx_dynamic
    from mobile_export.backends.executorch import lowering

    monkeypatch.setattr(lowering, "share_stored_bytes", lambda data: (data, 0))
    monkeypatch.setattr(quantize.onnx_dynamic, "share_transposed_tables", lambda model: 0)
    result, table = _export(tiny_checkpoint, tmp_path / "twice", Quant.INT8, tied=True)
    for artifact in result.artifacts:
        size = next(a["size"] for a in result.report["artifacts"] if a["file"] == artifact.file)
        assert size["sharing_preserved"] is False
        assert "NOT preserved (tied embeddings stored twice" in size["sharing_verdict"], size["sharing_verdict"]
        assert size["extra_copies_bytes"]["word embeddings"] >= table
        assert _tables(result.out / artifact.file, table) == 2


def test_untied_artifact_judged_against_a_tied_claim(exported):
    """The verdict reads the stored blobs, not the file name: an untied export's two tables, judged
    as a tied model's, are one copy too many."""
    result, table = exported(Quant.INT8, False)
    claimed = json.loads(json.dumps(result.report["model"]))
    claimed["config"]["tie_word_embeddings"] = True
    for artifact in result.artifacts:
        verdict = breakdown(result.out / artifact.file, claimed, "int8", True)
        assert verdict["tied_embeddings"] is True
        assert verdict["sharing_preserved"] is False
        assert "tied embeddings stored twice" in verdict["sharing_verdict"]


def test_pte_sharing_keeps_every_segment_readable(exported):
    """After share_stored_bytes the decoder's int8 codes, read through their own XNNPACK key, are the
    embedding constant's bytes; a second pass finds nothing left to share and changes nothing."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    result, _ = exported(Quant.INT8, True)
    [artifact] = [a for a in result.artifacts if a.file.endswith(".pte")]
    shared = (result.out / artifact.file).read_bytes()
    again, dropped = et_backend.share_stored_bytes(shared)
    assert dropped == 0 and again == shared  # idempotent: nothing left to share
    assert artifact.stats["shared_stored_bytes"] > 0
    program = deserialize_pte_binary(shared)
    named = {k: bytes(program.named_data.buffers[e.buffer_index]) for k, e in program.named_data.pte_data.items()}
    constants = {bytes(c.storage) for c in program.program.constant_buffer}
    assert len(named) > 0 and len(constants) > 1
    # the decoder's int8 codes, read through its own key, are the embedding constant's bytes
    assert any(blob in {c[:len(blob)] for c in constants} for blob in named.values() if len(blob) > 1024)


def test_tied_decoder_stack_is_u8_in_the_exact_session(exported):
    """On a host whose u8 x s8 GEMM saturates, the session's model makes the decoder's stacked weight u8 (the
    table's u8 twin transposed under rows moved by 128): the same integers, so on this host's exact GEMM the
    project's exact session and the file as it is give the same logits."""
    import numpy as np

    from mobile_export.backends.onnx import Runner
    from mobile_export.backends.onnx.precision import Precision, exact_model, saturates
    from mobile_export.core.host import this_host
    from quantize.onnx_per_token import stacks

    result, _ = exported(Quant.INT8, True)
    path = result.out / "model.onnx"
    model = exact_model(path, everywhere=True)
    assert model is not None
    producer = {o: n for n in model.graph.node for o in n.output}
    [decoder] = [
        c for c in stacks(model.graph).values() if c.input[1] in producer and producer[c.input[1]].op_type == "Transpose"
    ]
    table = producer[decoder.input[1]].input[0]
    assert table.endswith("_s8_2_u8")
    assert producer[decoder.input[0]].attribute[0].i == onnx.TensorProto.UINT8  # the rows cast to u8
    if saturates(this_host()):  # the native session saturates here: nothing to compare it with
        return
    ids = np.array([[2, 17, 4, 29, 3]], np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    native = Runner(path, precision=Precision.NATIVE).run(feeds)[0]
    exact = Runner(path, precision=Precision.EXACT).run(feeds)[0]
    np.testing.assert_allclose(exact, native, atol=1e-4)
