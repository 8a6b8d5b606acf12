"""A sentence-transformers folder read as its library reads it: ``modules.json``'s pooling and normalization, the
trained length and the prompts become the export's defaults (flags still win); what the export does not take yet is
refused in one line naming it. The folders are written by sentence-transformers itself, from tiny checkpoints."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from mobile_export import Backend, BadInputError, ExportOptions, export, load, parity_check
from mobile_export.cli.run import run as run_texts
from mobile_export.core.choices import POOLINGS
from mobile_export.core.progress import Progress, Silent
from mobile_export.exporter.context import ExportRun
from mobile_export.model.sentence import read_sentence_modules

TEXTS = ["a phone that works well", "the battery died after a day", "fast delivery, good price", "quite bad"]
PROMPTS = {"query": "query: ", "document": "passage: "}


def _st_folder(src: Path, dest: Path, pooling: str | tuple[str, ...] = "mean", normalize: bool = True,
               dense: bool = False, length: int = 64) -> Path:
    """``src`` (a transformers checkpoint) saved by sentence-transformers as its folder of modules."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Dense, Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformer = Transformer(str(src), max_seq_length=length)
    width = transformer.get_embedding_dimension()
    modules = [transformer, Pooling(width, pooling_mode=pooling)]
    pooled = width * (1 if isinstance(pooling, str) else len(pooling))
    modules += [Dense(pooled, width // 2)] if dense else []
    modules += [Normalize()] if normalize else []
    SentenceTransformer(modules=modules, device="cpu", prompts=PROMPTS).save(str(dest))
    assert not (dest / "vocab.txt").exists()  # the library 6 saves the tokenizer as tokenizer.json alone
    return dest


@pytest.fixture(scope="module")
def bert(tiny_checkpoint):
    return Path(tiny_checkpoint("feature-extraction", "wordpiece", family="bert"))


def test_what_the_folder_says_becomes_the_export_default_and_flags_win(bert, tmp_path):
    """No flags: pooling mean + normalize, the trained length, the prompts in the head's record, said in one line;
    --pooling cls: the user's choice, and the folder's modules are not read."""
    folder = _st_folder(bert, tmp_path / "st")
    said = io.StringIO()
    run = ExportRun.start(folder, tmp_path / "a", ExportOptions(backends=(Backend.ONNX,)), Progress(stream=said))
    head = run.loaded.task.head
    assert (head["pooling"], head["normalize"], head["from"]) == ("mean", True, "modules.json")
    assert head["prompts"] == PROMPTS and run.max_len == 64
    assert "read pooling mean + normalize, from modules.json" in said.getvalue()
    mine = ExportRun.start(folder, tmp_path / "b", ExportOptions(backends=(Backend.ONNX,), pooling="cls"), Silent())
    assert mine.loaded.task.head["pooling"] == "cls" and "from" not in mine.loaded.task.head
    assert mine.max_len != 64


def test_the_earlier_layout_is_read_too(bert, tmp_path):
    """sentence-transformers before 6: a flag per pooling mode, the length in sentence_bert_config.json."""
    folder = _st_folder(bert, tmp_path / "st", pooling="cls", normalize=False)
    flags = {f"pooling_mode_{m}": m == "cls_token" for m in ("cls_token", "mean_tokens", "max_tokens", "lasttoken")}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, **flags}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 48, "do_lower_case": False}))
    found = read_sentence_modules(folder)
    assert found is not None and (found.pooling, found.normalize, found.max_seq_length) == ("cls", False, 48)


@pytest.mark.parametrize("pooling", [*POOLINGS, ("cls", "max")])
def test_every_pooling_read_from_its_folder_computes_what_the_library_encodes(bert, tmp_path, pooling):
    """Each pooling mode the library has (and two at once), read from the folder it saved, with a Dense projection
    after the max: the export's model (fp32, before any format) gives the library's vectors, on texts of mixed
    lengths padded in one batch, and the progress line says what was read."""
    from sentence_transformers import SentenceTransformer

    dense = pooling == "max"
    folder = _st_folder(bert, tmp_path / "st", pooling=pooling, dense=dense)
    said = io.StringIO()
    run = ExportRun.start(folder, tmp_path / "out", ExportOptions(backends=(Backend.ONNX,)), Progress(stream=said))
    name = pooling if isinstance(pooling, str) else "+".join(pooling)
    assert run.loaded.task.head["pooling"] == name
    assert f"read pooling {name}{' + dense 32->16' if dense else ''} + normalize, from modules.json" in said.getvalue()
    want = SentenceTransformer(str(folder), device="cpu").encode(TEXTS, convert_to_numpy=True)
    batch = run.loaded.tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        got = run.loaded.model(batch["input_ids"], batch["attention_mask"])["sentence_embedding"].numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=2e-5)


@pytest.mark.parametrize(("change", "named"), [
    ({"pooling_mode": "median"}, "median pooling is not one the export knows"),
    ({"include_prompt": False}, "leaves the prompt's tokens out"),
])
def test_a_pooling_the_export_does_not_take_is_refused_naming_it(bert, tmp_path, change, named):
    folder = _st_folder(bert, tmp_path / "st")
    config = json.loads((folder / "1_Pooling" / "config.json").read_text())
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(BadInputError, match=named) as caught:
        ExportRun.start(folder, tmp_path / "out", ExportOptions(backends=(Backend.ONNX,)), Silent())
    assert "\n" not in str(caught.value)
    # the user's own pooling exports the transformer anyway: the folder's modules are not read
    ExportRun.start(folder, tmp_path / "mine", ExportOptions(backends=(Backend.ONNX,), pooling="mean"), Silent())


def test_a_dense_module_is_built_from_an_allowlist_and_its_order_checked(bert, tmp_path):
    """An activation a config names outside torch's few is refused (the export never imports what a config names);
    Normalize before a Dense, or weights that do not fit the config, are refused in one line."""
    folder = _st_folder(bert, tmp_path / "st", dense=True)
    where = folder / "2_Dense" / "config.json"
    config = json.loads(where.read_text())
    where.write_text(json.dumps({**config, "activation_function": "evil.module.Run"}))
    with pytest.raises(BadInputError, match="activation evil.module.Run is not one the export builds"):
        read_sentence_modules(folder)
    where.write_text(json.dumps({**config, "out_features": 8}))
    with pytest.raises(BadInputError, match="its weights do not fit its config.json") as caught:
        ExportRun.start(folder, tmp_path / "out", ExportOptions(backends=(Backend.ONNX,)), Silent())
    assert "\n" not in str(caught.value)
    where.write_text(json.dumps(config))
    modules = json.loads((folder / "modules.json").read_text())
    (folder / "modules.json").write_text(json.dumps([modules[0], modules[1], modules[3], modules[2]]))
    with pytest.raises(BadInputError, match="lists Dense where the export does not take it"):
        read_sentence_modules(folder)


def test_an_unknown_module_is_refused_and_a_plain_checkpoint_is_not_a_sentence_folder(bert, tmp_path):
    assert read_sentence_modules(bert) is None
    folder = _st_folder(bert, tmp_path / "st")
    modules = json.loads((folder / "modules.json").read_text())
    (folder / "modules.json").write_text(json.dumps(
        [*modules, {"idx": 9, "name": "9", "path": "9_X", "type": "somebody.modules.Whitening"}]))
    with pytest.raises(BadInputError, match="a Whitening module"):
        read_sentence_modules(folder)
    (folder / "modules.json").write_text(json.dumps(modules[:1]))
    assert read_sentence_modules(folder) is None  # token embeddings: the transformer's own output


def _cosines(got, want):
    return (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)


@pytest.mark.full
def test_a_sentence_folder_exports_what_its_library_encodes_in_every_format(bert, tmp_path):
    """A folder whose pooling concatenates every mode but cls (each lowers to its own operators: the sums, the
    maximum, the position weights, the last token, the square root), then a Dense projection and Normalize, with
    prompts, exported with no flags to every format: each file gives the library's ``encode`` (cosine >= 0.99 on
    every text) through ``load``; the projection is stored quantized; the prompts reach the manifest, the file's own
    card, ``Predictor.encode(prompt=)`` and ``run --prompt``; a later parity check reads the head again."""
    from sentence_transformers import SentenceTransformer

    pooling = ("mean", "max", "weightedmean", "lasttoken", "mean_sqrt_len_tokens")
    folder = _st_folder(bert, tmp_path / "st", pooling=pooling, dense=True)
    library = SentenceTransformer(str(folder), device="cpu")
    want = library.encode(TEXTS)
    queries = library.encode(TEXTS, prompt_name="query")  # the prompt's text put before each text
    formats = (Backend.EXECUTORCH, Backend.ONNX, Backend.QNN, Backend.LITERT)
    result = export(folder, tmp_path / "out", ExportOptions(backends=formats, measure_memory=False))
    assert result.passed
    manifest = json.loads((result.out / "manifest.json").read_text())
    assert manifest["head"]["from"] == "modules.json" and manifest["head"]["prompts"] == PROMPTS
    assert manifest["head"]["pooling"] == "+".join(pooling) and len(manifest["head"]["projections"]) == 1
    for artifact in result.report["artifacts"]:  # the projection is stored quantized: far below its fp32 bytes
        assert 0 < artifact["size"]["groups"]["task head"] < 160 * 16 * 4 // 2, artifact["backend"]
    for backend in formats:
        predictor = load(result.out, backend=backend.value)
        got = np.stack([predictor.encode(text).vector.reshape(-1) for text in TEXTS])
        assert got.shape == want.shape
        assert _cosines(got, want).min() >= 0.99, (backend, _cosines(got, want))
        assert predictor.prompts == PROMPTS
    for backend in ("executorch", "onnx"):
        predictor = load(result.out, backend=backend)
        got = np.stack([predictor.encode(text, prompt="query").vector.reshape(-1) for text in TEXTS])
        assert _cosines(got, queries).min() >= 0.99, (backend, "query", _cosines(got, queries))
    with pytest.raises(BadInputError, match="prompt 'search' is not one this export names") as caught:
        predictor.encode(TEXTS[0], prompt="search")
    assert "query" in str(caught.value) and "document" in str(caught.value)
    alone = load(result.out / "model.onnx")  # the file alone: its bundle's card carries the head and its prompts
    assert alone.prompts == PROMPTS
    # `run --prompt query`: the same vectors as the library's with the prompt; a prompt it does not name is refused
    printed = io.StringIO()
    run_texts(str(result.out), TEXTS, "onnx", as_json=True, stdout=printed, prompt="query")
    got = np.array([json.loads(line)["result"]["embedding"] for line in printed.getvalue().splitlines()])
    assert _cosines(got, queries).min() >= 0.99, ("run --prompt", _cosines(got, queries))
    with pytest.raises(BadInputError, match="--prompt search: not one this export names; it names: ") as caught:
        run_texts(str(result.out), TEXTS, "onnx", prompt="search")
    assert "query" in str(caught.value) and "document" in str(caught.value)
    # a later parity check reads the head from the manifest, its projection's weights from the folder again
    checked = parity_check(folder, [result.out / "model.onnx"])
    assert checked["artifacts"][0]["parity"]["passed"]
