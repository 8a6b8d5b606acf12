"""MediaPipe Tasks Text's metadata written into the .tflite (its tokenizer, its labels, its input tensors), so that
``TextClassifier`` / ``TextEmbedder`` load the file with no code from us; through MediaPipe's own metadata writers,
with the two upstream defects of mediapipe 1.2.2 worked around here (``needs_version_stand_in``,
``external_buffers``)."""

from __future__ import annotations

import io
import json
import sys
import types
from pathlib import Path
from typing import Any

from ...core.fsutil import write_bytes

from .metadata import INPUTS, tensor_name

# the tokenizer kinds (``tokenizer_settings.json``) MediaPipe's own tokenizers reproduce, with the settings that must
# hold; RoBERTa's byte-level BPE and XLM-R's / CamemBERT's SentencePiece with fairseq's ids are not among them
TOKENIZERS = ("wordpiece", "sentencepiece")
TASKS = {"text-classification": "TextClassifier", "feature-extraction": "TextEmbedder"}  # ours -> MediaPipe's
_VERSION_MODULE = "mediapipe.tasks.cc.metadata.python._pywrap_metadata_version"
# the schema version each metadata feature we write needs (metadata_schema.fbs' history)
_VOCABULARY, _TOKENIZER, _BASE = "1.0.1", "1.1.0", "1.0.0"


def refusal(settings: dict[str, Any]) -> str | None:
    """Why MediaPipe's tokenizers cannot reproduce the export's (None: they can)."""
    kind = settings.get("kind")
    if kind not in TOKENIZERS:
        return (
            f"MediaPipe's tokenizers (WordPiece, SentencePiece) cannot reproduce this model's {kind} tokenizer; the "
            ".tflite carries no MediaPipe metadata (run it with LiteRT's interpreter and our tokenizer)"
        )
    if kind == "wordpiece" and not settings.get("do_lower_case", True):
        return (
            "MediaPipe's WordPiece tokenizer lower-cases every text and this model's vocabulary is cased; the .tflite "
            "carries no MediaPipe metadata (run it with LiteRT's interpreter and our tokenizer)"
        )
    return None


def needs_version_stand_in() -> bool:
    """Whether the installed mediapipe lacks the compiled module its metadata writers import for the metadata
    parser's version (true of the 1.2.2 wheel; the test fails when an upgrade brings it back)."""
    import importlib.util

    if getattr(sys.modules.get(_VERSION_MODULE), "stand_in", False):  # ours, from an earlier call
        return True
    try:
        return importlib.util.find_spec(_VERSION_MODULE) is None
    except ModuleNotFoundError:
        return True


def minimum_parser_version(buffer: bytes) -> str:
    """The lowest metadata parser version that reads every field we write in ``buffer`` (a ModelMetadata
    flatbuffer): 1.1.0 with a tokenizer, 1.0.1 with a vocabulary file, else 1.0.0 (the C++ rule, for our fields)."""
    from mediapipe.tasks.metadata import metadata_schema_py_generated as fb

    meta = fb.ModelMetadataT.InitFromObj(fb.ModelMetadata.GetRootAsModelMetadata(buffer, 0))
    version = _BASE
    for graph in meta.subgraphMetadata or []:
        if graph.inputProcessUnits or graph.outputProcessUnits:
            return _TOKENIZER
        for tensor in [*(graph.inputTensorMetadata or []), *(graph.outputTensorMetadata or [])]:
            if any(f.type == fb.AssociatedFileType.VOCABULARY for f in tensor.associatedFiles or []):
                version = _VOCABULARY
    return version


def _with_version_stand_in() -> None:
    """Give mediapipe's metadata module the version function its wheel lacks (``minimum_parser_version``)."""
    if not needs_version_stand_in():
        return
    parts = _VERSION_MODULE.split(".")
    for k in range(3, len(parts)):
        sys.modules.setdefault(".".join(parts[:k]), types.ModuleType(".".join(parts[:k])))
    stand_in = types.ModuleType(_VERSION_MODULE)
    setattr(stand_in, "GetMinimumMetadataParserVersion", minimum_parser_version)
    setattr(stand_in, "stand_in", True)
    sys.modules[_VERSION_MODULE] = stand_in


_PAIRS = ("``", "''")  # the two-character sequences ALBERT's normalizer rewrites (to a double quote)
_LAST_CODE_POINT = 0x2FFFF  # the planes with assigned letters (above: private use and unassigned)


def normalized_like(spiece: bytes, tokenizer_json: bytes) -> bytes:
    """ALBERT's SentencePiece model whose own normalizer does what transformers does before and inside it (quotes,
    NFKD, accents stripped, lower case, the model's NFKC map): MediaPipe hands the raw text to SentencePiece, so
    the rule is a character map, each code point (and each of ``_PAIRS``) to what transformers' normalizer makes
    of it, compiled by SentencePiece's trainer."""
    import tempfile

    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb
    from tokenizers import Tokenizer

    normalizer = Tokenizer.from_str(tokenizer_json.decode("utf-8")).normalizer
    if normalizer is None:
        return spiece
    rows = []
    for source in [*(chr(c) for c in range(1, _LAST_CODE_POINT + 1) if not 0xD800 <= c < 0xE000), *_PAIRS]:
        target = normalizer.normalize_str(source)
        if target != source:
            rows.append(f"{' '.join(f'{ord(c):X}' for c in source)}\t{' '.join(f'{ord(c):X}' for c in target)}")
    model: Any = getattr(pb, "ModelProto")()
    model.ParseFromString(spiece)
    with tempfile.TemporaryDirectory() as tmp:
        rule = Path(tmp) / "rule.tsv"
        rule.write_text("\n".join(rows) + "\n", encoding="utf-8")
        out = io.BytesIO()
        # trained on one line only for its compiled map of the rule (the vocabulary is thrown away)
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(["a b c d e f g h"]),
            model_writer=out,
            vocab_size=12,
            normalization_rule_tsv=str(rule),
            hard_vocab_limit=False,
            minloglevel=2,
        )
    compiled: Any = getattr(pb, "ModelProto")()
    compiled.ParseFromString(out.getvalue())
    model.normalizer_spec.name = "mobile_export_transformers"
    model.normalizer_spec.precompiled_charsmap = compiled.normalizer_spec.precompiled_charsmap
    return model.SerializeToString()


def attach(
    model_bytes: bytes, files: dict[str, bytes], settings: dict[str, Any], labels: list[str] | None, outputs: int
) -> bytes:
    """``model_bytes`` (a .tflite with every buffer inside it, ``external_buffers`` == 0) with MediaPipe's metadata:
    the tokenizer of ``settings`` from ``files`` (name -> bytes), ``labels`` for a classifier's one output's scores
    (None: each of the ``outputs`` a feature, as ``TextEmbedder`` reads them)."""
    import tempfile

    _with_version_stand_in()
    from mediapipe.tasks.python.metadata.metadata_writers import metadata_writer

    with tempfile.TemporaryDirectory() as tmp:
        if settings["kind"] == "wordpiece":
            vocab = Path(tmp) / "vocab.txt"
            vocab.write_bytes(files[settings["vocab_file"]])
            tokenizer: Any = metadata_writer.BertTokenizer(str(vocab))
        else:
            spiece = Path(tmp) / "spiece.model"
            data = files[settings["vocab_file"]]
            spiece.write_bytes(normalized_like(data, files[settings["files"]["tokenizer"]]))
            tokenizer = metadata_writer.SentencePieceTokenizer(str(spiece))
        writer = metadata_writer.MetadataWriter.create(bytearray(model_bytes))
        writer.add_general_info("mobile-export", "An encoder exported by mobile-export (card: mobile_export_assets)")
        names = [tensor_name(n) for n in INPUTS]
        writer.add_bert_text_input(tokenizer, *names)
        if labels is not None:
            writer.add_classification_output(metadata_writer.Labels().add(labels))
        else:
            for k in range(outputs):
                writer.add_feature_output(name=f"output_{k}", description="the text's vector(s)")
        populated, _ = writer.populate()
        del writer  # its __del__ removes its temporary folder while ours still exists
    return bytes(populated)


def external_buffers(model_bytes: bytes) -> int:
    """How many buffers of a .tflite are stored after its flatbuffer (litert-quantizer writes those of 256 KiB and
    more there; MediaPipe's writer re-packs the flatbuffer alone and loses them)."""
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAs(model_bytes, 0)
    return sum(1 for k in range(model.BuffersLength()) if model.Buffers(k).Offset() > 1)


def task_metadata(path: Path, task: str, tokenizer: dict[str, bytes], labels: list[str] | None) -> dict[str, Any]:
    """Write MediaPipe Tasks Text's metadata into the .tflite at ``path`` (``base.TaskMetadata``): a
    text-classification export for ``TextClassifier`` (``labels``), a feature-extraction one for ``TextEmbedder``;
    nothing, and why, for other tasks and where MediaPipe's tokenizers cannot reproduce the export's."""
    from . import flatbuffer
    from .metadata import facts

    mediapipe_task = TASKS.get(task)
    if mediapipe_task is None:
        return {"written": False, "why": f"MediaPipe Tasks Text has no task for {task} (it classifies and embeds)"}
    raw = tokenizer.get("tokenizer_settings.json")
    settings = json.loads(raw) if raw else {"kind": "unknown"}
    why = refusal(settings)
    if why is not None:
        return {"written": False, "why": why}
    data = path.read_bytes()
    if external_buffers(data):
        raise ValueError(f"{path.name} stores buffers after its flatbuffer, which MediaPipe's writer would drop")
    outputs = facts(flatbuffer.stored_entries(data, path.name)).get("outputs") or []
    classifier = mediapipe_task == "TextClassifier"
    if classifier and (labels is None or len(outputs) != 1):
        return {"written": False, "why": "a TextClassifier's file has one output and its labels"}
    write_bytes(path, attach(data, tokenizer, settings, labels if classifier else None, len(outputs)))
    written: dict[str, Any] = {"written": True, "task": mediapipe_task, "tokenizer": settings["kind"]}
    if settings["kind"] == "wordpiece" and settings.get("strip_accents") is not False:
        # measured on all-MiniLM-L6-v2 (BENCHMARKS "LiteRT"): 3 of 300 texts, each with accented letters, 0.73-0.90
        written["differs"] = (
            "MediaPipe's WordPiece keeps the accents this model's uncased normalizer strips: a text with accented "
            "letters tokenizes otherwise in MediaPipe (our runtime and app tokenize as transformers does)"
        )
    return written
