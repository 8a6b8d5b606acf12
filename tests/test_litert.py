"""LiteRT: the .tflite at one fixed length, checked in LiteRT's interpreter, and loaded by MediaPipe Tasks Text
(``TextClassifier``, ``TextEmbedder``: the same C++ core as Android, iOS and the web) with nothing from us but the
file; the two upstream defects worked around; ALBERT's shared layer stored once; hostile files refused."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from mobile_export import Backend, ExportOptions, backends
from mobile_export.backends.litert import flatbuffer, mediapipe
from mobile_export.backends.litert.metadata import META_KEY, facts
from mobile_export.backends.litert.unfold import column_factors
from mobile_export.cli.main import main
from mobile_export.model.loading import load_checkpoint
from mobile_export.model.reference import EagerRunner, tokenize
from mobile_export.parity.texts import builtin_texts
from hostile_commands import assert_refused_by_every_command

LITERT = ExportOptions(backends=(Backend.LITERT,), measure_memory=False)
EXTRA = ["The Movie WAS Great!", "``Quoted'' text,   spaced\tout", "naïve café déjà vu", "", "a " * 300]


def _accented(text: str) -> bool:
    """Whether stripping accents changes the text (MediaPipe's WordPiece keeps them where BERT uncased strips)."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn") != text


def _mediapipe(path: Path, texts: list[str], embedder: bool = False) -> list[np.ndarray]:
    """MediaPipe's answer for each text, from the file alone: a classifier's scores in class order, or the vector."""
    from mediapipe.tasks.python import text as mp_text
    from mediapipe.tasks.python.core.base_options import BaseOptions

    base = BaseOptions(model_asset_path=str(path))
    if embedder:
        task = mp_text.TextEmbedder.create_from_options(mp_text.TextEmbedderOptions(base_options=base))
    else:
        task = mp_text.TextClassifier.create_from_options(
            mp_text.TextClassifierOptions(base_options=base, max_results=-1)
        )
    found = []
    try:
        for text in texts:
            if embedder:
                found.append(np.asarray(task.embed(text).embeddings[0].embedding))
            else:
                cats = sorted(task.classify(text).classifications[0].categories, key=lambda c: c.index)
                found.append(np.array([c.score for c in cats]))
    finally:
        task.close()
    return found


def _ours_and_fp32(
    ckpt: Path, path: Path, texts: list[str], pooling: str | None = None
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Our runtime's first output on transformers' tokens (truncated to the file's length), and fp32's (the export's
    pooling head on it where ``pooling`` says)."""
    from mobile_export.core.heads import parse_head
    from mobile_export.model.heads import with_head

    runner = backends.load(Backend.LITERT).Runner(path)
    loaded = load_checkpoint(str(ckpt))
    if pooling is not None:
        loaded = with_head(loaded, parse_head(loaded.task.name, None, pooling, False))
    fp32 = EagerRunner(loaded)
    examples = tokenize(loaded.tokenizer, texts, runner.length)
    return [runner.run(e.feeds)[0][0] for e in examples], [fp32.run(e.feeds)[0][0] for e in examples]


def _decisive_agreement(answers: list[np.ndarray], fp32: list[np.ndarray], margin: float = 0.1) -> float:
    ref = np.stack(fp32)
    top2 = np.sort(ref, axis=1)[:, -2:]
    decisive = top2[:, 1] - top2[:, 0] >= margin
    assert decisive.sum() >= 10, decisive.sum()
    return float((np.stack(answers).argmax(1) == ref.argmax(1))[decisive].mean())


@pytest.mark.full  # exports of their own: left out of make check
@pytest.mark.parametrize("family,tokenizer", [("albert", "sentencepiece"), ("bert", "wordpiece")])
def test_classifier_loads_in_mediapipe_and_answers_as_our_runtime(tiny_checkpoint, shared_export, family, tokenizer):
    ckpt = tiny_checkpoint("text-classification", tokenizer, family=family)
    result = shared_export(ckpt, LITERT)
    [art] = result.artifacts
    assert art.parity.passed, art.parity.failures
    written = dict(art.stats["task_metadata"])
    # an uncased WordPiece (accents stripped by transformers) is written with the note of what MediaPipe keeps
    assert ("accents" in written.pop("differs", "")) == (tokenizer == "wordpiece")
    assert written == {"written": True, "task": "TextClassifier", "tokenizer": tokenizer}
    path = result.out / "model.tflite"
    texts = builtin_texts() + EXTRA
    mp = _mediapipe(path, texts)
    ours, fp32 = _ours_and_fp32(ckpt, path, texts)
    # the same file in MediaPipe's runtime and ours: equal wherever the tokenizers agree; ALBERT's SentencePiece
    # normalized as transformers does (accents, quotes, case, spaces) agrees on every text, MediaPipe's WordPiece
    # keeps accents where BERT uncased strips them (docs/formats/litert.md: what MediaPipe reproduces)
    differ = [t for t, a, b in zip(texts, mp, ours) if np.abs(a - b).max() > 2e-3 * (1 + np.abs(b).max())]
    if family == "albert":
        assert differ == [], differ
    else:
        assert differ and all(_accented(t) for t in differ), differ
    assert _decisive_agreement(mp, fp32) >= 0.99


@pytest.mark.full
def test_sentence_encoder_loads_in_mediapipe_text_embedder(tiny_checkpoint, shared_export):
    ckpt = tiny_checkpoint("feature-extraction", "wordpiece", family="bert")
    result = shared_export(ckpt, ExportOptions(**{**LITERT.__dict__, "pooling": "mean"}))
    [art] = result.artifacts
    assert art.parity.passed, art.parity.failures
    assert art.stats["task_metadata"]["task"] == "TextEmbedder"
    texts = [t for t in builtin_texts() + EXTRA if not _accented(t)]
    got = _mediapipe(result.out / "model.tflite", texts, embedder=True)
    _, fp32 = _ours_and_fp32(ckpt, result.out / "model.tflite", texts, pooling="mean")
    cosines = [float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))) for a, b in zip(got, fp32)]
    assert min(cosines) >= 0.99, min(cosines)


@pytest.mark.full
def test_tokenizers_mediapipe_cannot_reproduce_get_no_metadata_but_the_file(tiny_checkpoint, shared_export):
    ckpt = tiny_checkpoint("text-classification", "bpe", family="roberta")
    result = shared_export(ckpt, LITERT)
    [art] = result.artifacts
    assert art.parity.passed, art.parity.failures  # the file itself runs in LiteRT with our tokenizer
    why = art.stats["task_metadata"]
    assert why["written"] is False and "cannot reproduce this model's bpe tokenizer" in why["why"]
    entries = flatbuffer.entries(flatbuffer.read((result.out / "model.tflite").read_bytes(), "model.tflite"))
    assert "TFLITE_METADATA" not in entries and META_KEY in entries


@pytest.mark.full
def test_albert_shared_layer_stored_once_on_trained_weights(tiny_checkpoint, shared_export):
    """On the trained demo model the converter folds each LayerNorm's scale into the Linears reading it (a second
    copy of query/key/value for layers 2..4; on random weights it does not); the lowering points every fully-
    connected op back at the checkpoint's own weight, stored once, with the scale as a Mul on its input, and asks
    each to quantize its input per row with a zero point (as XNNPACK does). BERT's random weights: nothing."""
    import torch

    from mobile_export.demo import MODEL_DIR

    result = shared_export(MODEL_DIR, LITERT)
    [art] = result.artifacts
    assert art.parity.passed, art.parity.failures
    layers = json.loads((Path(MODEL_DIR) / "config.json").read_text())["num_hidden_layers"]
    unfolded = art.stats["litert"]["unfolded"]
    assert unfolded["copies"] == 3 and unfolded["muls"] >= layers - 1, unfolded  # query/key/value once
    assert unfolded["rescaled"] >= 3 * (layers - 1), unfolded
    size = next(a for a in result.report["artifacts"] if a["file"] == "model.tflite")["size"]
    assert size["sharing_preserved"] and not size["extra_copies_bytes"], size
    assert art.stats["task_metadata"]["task"] == "TextClassifier"  # the demo's Chinese WordPiece: MediaPipe's too
    linears = [
        m.weight.detach().numpy()
        for m in load_checkpoint(str(MODEL_DIR)).model.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    stored = _fully_connected(result.out / "model.tflite")
    assert art.stats["litert"]["asymmetric_input_ops"] == len(stored) > 0
    for weight, asymmetric in stored:  # each one the checkpoint's Linear to int8 rounding, none a scaled copy
        assert asymmetric
        errors = [np.abs(weight - w).max() / np.abs(w).max() for w in linears if w.shape == weight.shape]
        assert errors and min(errors) < 0.01, min(errors, default=None)

    bert = shared_export(tiny_checkpoint("text-classification", "wordpiece", family="bert"), LITERT)
    assert bert.artifacts[0].stats["litert"]["unfolded"]["rescaled"] == 0


def _fully_connected(path: Path) -> list[tuple[np.ndarray, bool]]:
    """Each fully-connected op's int8 weight of the .tflite at ``path``, dequantized, and its asymmetric-input flag."""
    from ai_edge_litert import schema_py_generated as schema

    model = flatbuffer.read(path.read_bytes(), path.name)
    graph = model.subgraphs[0]
    found = []
    for op in graph.operators:
        code = model.operatorCodes[op.opcodeIndex]
        if max(code.builtinCode, code.deprecatedBuiltinCode) != schema.BuiltinOperator.FULLY_CONNECTED:
            continue
        tensor = graph.tensors[op.inputs[1]]
        codes = np.frombuffer(model.buffers[tensor.buffer].data.tobytes(), np.int8).reshape(tuple(tensor.shape))
        scales = np.asarray(tensor.quantization.scale, np.float32).reshape(-1, 1)
        found.append((codes * scales, bool(op.builtinOptions.asymmetricQuantizeInputs)))
    return found


def test_column_factors_find_a_scaled_copy_and_nothing_else():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    gamma = (1 + 0.3 * rng.standard_normal(32)).astype(np.float32)
    found = column_factors(w, w * gamma)
    assert found is not None and np.allclose(found, gamma, rtol=1e-5)
    assert column_factors(w, w) is None  # the same weight: nothing to unfold
    assert column_factors(w, rng.standard_normal((64, 32)).astype(np.float32)) is None
    off = w * gamma
    off[3, 5] += 0.01  # one value off: not a scaled copy
    assert column_factors(w, off) is None


def test_mediapipe_metadata_version_stand_in_is_still_needed_and_right():
    """mediapipe 1.2.2's wheel lacks the compiled module its metadata writers import; when an upgrade brings it
    back, this fails: remove the stand-in (``mediapipe._with_version_stand_in``)."""
    assert mediapipe.needs_version_stand_in(), "mediapipe ships its metadata version module again: drop the stand-in"
    from mediapipe.tasks.metadata import metadata_schema_py_generated as fb

    def version(process_units: bool, vocabulary: bool) -> str:
        import flatbuffers

        meta = fb.ModelMetadataT()
        graph = fb.SubGraphMetadataT()
        tensor = fb.TensorMetadataT()
        if vocabulary:
            f = fb.AssociatedFileT()
            f.name, f.type = "vocab.txt", fb.AssociatedFileType.VOCABULARY
            tensor.associatedFiles = [f]
        graph.inputTensorMetadata = [tensor]
        if process_units:
            unit = fb.ProcessUnitT()
            unit.optionsType = fb.ProcessUnitOptions.BertTokenizerOptions
            unit.options = fb.BertTokenizerOptionsT()
            graph.inputProcessUnits = [unit]
        meta.subgraphMetadata = [graph]
        b = flatbuffers.Builder(0)
        b.Finish(meta.Pack(b), b"M001")
        return mediapipe.minimum_parser_version(bytes(b.Output()))

    assert version(True, False) == "1.1.0"  # a tokenizer: metadata_schema.fbs 1.1.0
    assert version(False, True) == "1.0.1"  # a vocabulary file: 1.0.1
    assert version(False, False) == "1.0.0"


@pytest.mark.full
def test_quantizer_writes_weights_after_the_flatbuffer_which_mediapipe_drops(tmp_path):
    """litert-quantizer stores buffers of >= 256 KiB after the flatbuffer, and MediaPipe's writer re-packs the
    flatbuffer alone: the weights are lost. Our lowering reads them back in first. When either upstream changes,
    this fails: the workaround may go (``flatbuffer.read`` before ``mediapipe.attach``)."""
    import torch

    from mobile_export.backends.litert.lowering import _quantized, _quiet

    class Wide(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(768, 768)  # 576 KiB at int8: stored after the flatbuffer

        def forward(self, ids, mask, segment_ids):
            return (self.fc(ids.float().unsqueeze(-1).expand(-1, -1, 768)).mean(1),)

    import litert_torch

    example = {n: torch.ones(1, 8, dtype=torch.int32) for n in ("ids", "mask", "segment_ids")}
    fp32 = tmp_path / "fp32.tflite"
    with _quiet():
        litert_torch.convert(Wide().eval(), sample_kwargs=example).export(str(fp32))
    raw = _quantized(fp32, "dynamic_wi8_afp32")
    assert mediapipe.external_buffers(raw) >= 1, "the quantizer keeps every buffer inside: the read-back may go"
    settings = {"kind": "wordpiece", "vocab_file": "vocab.txt"}
    files = {"vocab.txt": "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a"]).encode()}
    lost = mediapipe.attach(raw, files, settings, None, 1)
    inside = flatbuffer.write(flatbuffer.read(raw, "raw"))
    assert mediapipe.external_buffers(inside) == 0
    kept = mediapipe.attach(inside, files, settings, None, 1)
    # the writer's output of the raw file lacks the 576 KiB of weights; of ours, holds them
    assert len(lost) < len(raw) - 500_000, "MediaPipe's writer keeps external buffers now: the read-back may go"
    assert len(kept) > len(inside)


def _tampered(data: bytes) -> bytes:
    """The good file with one operator's code index pointing far outside the model."""
    model = flatbuffer.read(data, "good")
    model.subgraphs[0].operators[0].opcodeIndex = 10**6
    return flatbuffer.write(model)


def _foreign(data: bytes) -> bytes:
    """The good file without the metadata entry that makes it an export (a .tflite of some other tool)."""
    model = flatbuffer.read(data, "good")
    model.metadata = [m for m in model.metadata if (m.name.decode() if isinstance(m.name, bytes) else m.name) != META_KEY]
    return flatbuffer.write(model)


HOSTILE = {
    "random": (lambda b: os.urandom(4096), "not a LiteRT model"),
    "truncated": (lambda b: b[:2000], "not a readable LiteRT model"),
    "tampered-index": (_tampered, "damaged LiteRT model"),
    "foreign": (_foreign, "records no fixed sequence length"),
    "onnx-renamed": (None, "not a LiteRT model"),
}


@pytest.mark.full
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_tflite_is_refused_by_every_command(tiny_checkpoint, shared_export, case, tmp_path, capsys):
    ckpt = tiny_checkpoint("text-classification", "wordpiece")
    good = shared_export(ckpt, LITERT).out / "model.tflite"
    build, words = HOSTILE[case]
    path = tmp_path / "case" / "model.tflite"
    path.parent.mkdir()
    if build is None:
        path.write_bytes(b"\x08\x07\x12\x04" + os.urandom(64))  # an ONNX protobuf's first bytes, named .tflite
    else:
        path.write_bytes(build(good.read_bytes()))
    assert_refused_by_every_command(ckpt, path, tmp_path, capsys, words)
    assert sorted(p.name for p in path.parent.iterdir()) == ["model.tflite"]


@pytest.mark.full
def test_run_and_size_read_the_tflite(tiny_checkpoint, shared_export, capsys):
    ckpt = tiny_checkpoint("text-classification", "sentencepiece")
    result = shared_export(ckpt, LITERT)
    path = result.out / "model.tflite"
    recorded = facts(flatbuffer.entries(flatbuffer.read(path.read_bytes(), path.name)))
    assert recorded["sequence_length"] == 128 and recorded["inputs"] == ["ids", "mask", "segment_ids"]
    assert main(["size", str(path), "--checkpoint", str(ckpt), "--no-memory"]) == 0
    out = capsys.readouterr().out
    assert "sharing: preserved" in out and "memory sharing: each of the" in out, out
    assert main(["run", str(result.out), "--backend", "litert", "a fine film"]) == 0
    assert capsys.readouterr().out.strip()


@pytest.mark.full
def test_a_repair_keeps_its_linears_fp32_in_the_tflite(tiny_checkpoint, tmp_path):
    """The mixed repair's Linears (by name in the model) stay float in the .tflite, every reader of a shared one;
    the others stay int8, and the coverage counts them as kept, not as a problem."""
    import torch

    from mobile_export.backends.base import Plan
    from mobile_export.backends.litert import Options, coverage, export
    from mobile_export.core.choices import Quant
    from mobile_export.core.progress import Progress
    from mobile_export.model.reference import ExportWrapper

    loaded = load_checkpoint(str(tiny_checkpoint("text-classification", "sentencepiece")))
    wrapper = ExportWrapper(loaded.model, loaded.task).eval()
    linears = [n for n, m in loaded.model.named_modules() if isinstance(m, torch.nn.Linear)]
    ffn = next(n for n in linears if n.endswith(".ffn"))
    layers = int(loaded.config.num_hidden_layers)
    counts = {}
    for keep in ((), (ffn,)):
        plan = Plan(Quant.INT8, 16, int(loaded.config.vocab_size), False, Options(), keep=keep,
                    signature=loaded.family.signature)
        dest = tmp_path / f"keep{len(keep)}" / "model.tflite"
        dest.parent.mkdir()
        with torch.no_grad():
            stats = export(wrapper, plan, dest, Progress(enabled=False))
        counts[keep] = coverage(dest, Quant.INT8)
        assert counts[keep].problems == ()
    assert counts[()].kept_fp32_weight_matmuls == 0 and counts[()].fp32_weight_matmuls == 0
    kept = counts[(ffn,)]
    assert kept.kept_fp32_weight_matmuls == layers and stats["litert"]["kept_fp32_ops"] == layers
    assert kept.quantized_weight_matmuls == counts[()].quantized_weight_matmuls - layers


@pytest.mark.full
def test_demo_int4_tflite_passes_default_thresholds(shared_export, tmp_path_factory):
    """The trained demo at 4 bits (litert-quantizer's blocks where a width allows, else a scale per row) passes
    int4's default limits in LiteRT on its 1,667 test reviews (random tiny models do not: tests/test_matrix.py;
    on the built-in mixed texts its 65-128-token bucket measured 13.4 dB, below the limit: the gate refuses it)."""
    from mobile_export.core.choices import Quant
    from mobile_export.core.thresholds import INT4_MIN_SQNR_DB
    from mobile_export.demo import MODEL_DIR
    from mobile_export.demo.data import write_split

    data = tmp_path_factory.mktemp("demo-split") / "test.tsv"
    write_split("test", data)
    options = ExportOptions(**{**LITERT.__dict__, "quant": Quant.INT4, "data": str(data)})
    result = shared_export(MODEL_DIR, options)
    [art] = result.artifacts
    assert art.parity.passed and art.parity.sqnr_db > INT4_MIN_SQNR_DB + 5, art.parity.failures
    assert art.stats["litert"]["weights"] == "blockwise_32" and art.stats["litert"]["per_channel_ops"] > 0
    assert backends.detect_quant(result.out / "model.tflite") is Quant.INT4
