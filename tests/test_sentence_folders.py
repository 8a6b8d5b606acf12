"""A sentence-transformers folder read as its library reads it: ``modules.json``'s pooling and normalization, the
trained length and the prompts become the export's defaults (flags still win); what the export does not take yet is
refused in one line naming it."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from mobile_export import Backend, BadInputError, ExportOptions, export, load
from mobile_export.core.progress import Progress, Silent
from mobile_export.exporter.context import ExportRun
from mobile_export.model.sentence import POOLING_MODES, read_sentence_modules

TEXTS = ["a phone that works well", "the battery died after a day", "fast delivery, good price", "quite bad"]


def _st_folder(src: Path, dest: Path, pooling: str = "pooling_mode_mean_tokens", normalize: bool = True,
               extra: list[dict] | None = None) -> Path:
    """``src`` (a transformers checkpoint) copied to ``dest`` as a sentence-transformers folder."""
    shutil.copytree(src, dest)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    modules += extra or []
    (dest / "modules.json").write_text(json.dumps(modules))
    (dest / "1_Pooling").mkdir()
    (dest / "1_Pooling" / "config.json").write_text(json.dumps({m: m == pooling for m in POOLING_MODES}))
    (dest / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 64, "do_lower_case": False}))
    (dest / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": None}))
    return dest


def test_what_the_folder_says_becomes_the_export_default_and_flags_win(tiny_checkpoint, tmp_path):
    """No flags: pooling mean + normalize, the trained length, the prompts in the head's record, said in one line;
    --pooling cls: the user's choice, and the folder's modules are not read."""
    folder = _st_folder(tiny_checkpoint("feature-extraction", "wordpiece", family="bert"), tmp_path / "st")
    said = io.StringIO()
    run = ExportRun.start(folder, tmp_path / "a", ExportOptions(backends=(Backend.ONNX,)), Progress(stream=said))
    head = run.loaded.task.head
    assert (head["pooling"], head["normalize"], head["from"]) == ("mean", True, "modules.json")
    assert head["prompts"] == {"query": "query: ", "passage": "passage: "} and run.max_len == 64
    assert "read pooling mean + normalize, from modules.json" in said.getvalue()
    mine = ExportRun.start(folder, tmp_path / "b", ExportOptions(backends=(Backend.ONNX,), pooling="cls"), Silent())
    assert mine.loaded.task.head["pooling"] == "cls" and "from" not in mine.loaded.task.head
    assert mine.max_len != 64


@pytest.mark.parametrize(("change", "named"), [
    ({"pooling": "pooling_mode_max_tokens"}, "max_tokens pooling is not exported yet"),
    ({"pooling": "pooling_mode_lasttoken"}, "lasttoken pooling is not exported yet"),
    ({"extra": [{"idx": 3, "path": "3_Dense", "type": "sentence_transformers.models.Dense"}]}, "Dense projection"),
    ({"extra": [{"idx": 3, "path": "3_X", "type": "sentence_transformers.models.LayerNorm"}]}, "a LayerNorm module"),
])
def test_what_the_export_does_not_take_is_refused_naming_it(tiny_checkpoint, tmp_path, change, named):
    folder = _st_folder(tiny_checkpoint("feature-extraction", "wordpiece", family="bert"), tmp_path / "st", **change)
    with pytest.raises(BadInputError, match=named) as caught:
        ExportRun.start(folder, tmp_path / "out", ExportOptions(backends=(Backend.ONNX,)), Silent())
    assert "\n" not in str(caught.value)
    # the user's own pooling exports the transformer anyway: the folder's modules are not read
    ExportRun.start(folder, tmp_path / "mine", ExportOptions(backends=(Backend.ONNX,), pooling="mean"), Silent())


def test_a_folder_without_modules_or_pooling_is_a_plain_checkpoint(tiny_checkpoint, tmp_path):
    plain = tiny_checkpoint("feature-extraction", "wordpiece", family="bert")
    assert read_sentence_modules(Path(plain)) is None
    folder = _st_folder(plain, tmp_path / "st")
    (folder / "modules.json").write_text(json.dumps(json.loads((folder / "modules.json").read_text())[:1]))
    assert read_sentence_modules(folder) is None  # token embeddings: the transformer's own output


@pytest.mark.full
def test_a_sentence_folder_exports_its_sentence_embedding_with_no_flags(tiny_checkpoint, tmp_path):
    """The export of the folder alone gives, in each CPU format, the vector transformers' model gives once mean
    pooled over the real tokens and L2-normalized (what SentenceTransformer.encode computes for these modules)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = _st_folder(tiny_checkpoint("feature-extraction", "wordpiece", family="bert"), tmp_path / "st")
    result = export(folder, tmp_path / "out", ExportOptions(backends=(Backend.EXECUTORCH, Backend.ONNX),
                                                           measure_memory=False))
    assert result.passed
    manifest = json.loads((result.out / "manifest.json").read_text())
    assert manifest["head"]["from"] == "modules.json" and manifest["head"]["pooling"] == "mean"
    model, tok = AutoModel.from_pretrained(str(folder)).eval(), AutoTokenizer.from_pretrained(str(folder))
    for backend in ("executorch", "onnx"):
        predictor = load(result.out, backend=backend)
        for text in TEXTS:
            enc = tok(text, return_tensors="pt")
            with torch.no_grad():
                hidden = model(**enc).last_hidden_state[0]
            mask = enc["attention_mask"][0].unsqueeze(-1).float()
            want = ((hidden * mask).sum(0) / mask.sum()).numpy()
            want = want / np.linalg.norm(want)
            got = predictor.encode(text).vector.reshape(-1)
            assert abs(np.linalg.norm(got) - 1.0) < 1e-3
            assert float(got @ want) >= 0.99, (backend, text)
