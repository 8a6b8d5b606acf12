"""``mobile-export run`` and ``mobile_export.load``: an export used without its checkpoint, every task, both
runtimes, against transformers' pipelines on the fp32 checkpoint."""

from __future__ import annotations

import io
import json
import shutil

import numpy as np
import pytest
from pipelines import assert_fills_equal_pipeline, pipeline_for

from mobile_export import Backend, ExportOptions, Quant, load
from mobile_export.cli.main import main
from mobile_export.core.errors import BadInputError
from mobile_export.parity.texts import CHINESE, ENGLISH

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

NER_LABELS = {0: "O", 1: "B-PER", 2: "I-PER", 3: "B-LOC", 4: "I-LOC"}
TEXTS = ENGLISH[:6] + CHINESE[:4]
BOTH = (Backend.EXECUTORCH, Backend.ONNX)


@pytest.fixture(scope="module")
def exported(tiny_checkpoint, shared_export):
    """exported(task, quant=FP32) -> (checkpoint, export folder), both runtimes, built once per module."""
    cache: dict = {}

    def make(task: str, quant: Quant = Quant.FP32):
        if (task, quant) not in cache:
            extra = dict(num_labels=5, id2label=NER_LABELS, label2id={v: k for k, v in NER_LABELS.items()}) \
                if task == "token-classification" else {}
            ckpt = tiny_checkpoint(task, **extra)
            out = shared_export(ckpt, ExportOptions(backends=BOTH, quant=quant, measure_memory=False)).out
            cache[(task, quant)] = (ckpt, out)
        return cache[(task, quant)]

    return make


def _scores(pipe, text) -> list[dict]:
    out = pipe(text)
    return out[0] if isinstance(out[0], list) else out


_pipeline = pipeline_for


@pytest.mark.parametrize("backend", BOTH)
def test_text_classification_equals_pipeline(exported, backend):
    ckpt, out = exported("text-classification")
    pipe = _pipeline("text-classification", ckpt, top_k=None)
    predictor = load(out, backend=backend)
    for text in TEXTS:
        expected = {d["label"]: d["score"] for d in _scores(pipe, text)}
        got = predictor.classify(text)
        assert got.label == max(expected, key=expected.get)
        assert got.scores == pytest.approx(expected, abs=1e-4)


def test_predictor_is_called_as_a_pipeline(exported):
    """One text gives one result, a list gives a list in order (transformers' pipelines do the same)."""
    _, out = exported("text-classification")
    predictor = load(out, backend="onnx")
    many = predictor(list(TEXTS[:3]))
    assert isinstance(many, list) and len(many) == 3
    assert [r.to_json() for r in many] == [predictor(t).to_json() for t in TEXTS[:3]]
    with pytest.raises(BadInputError, match="a list of texts"):
        predictor([TEXTS[0], 3])


def test_int8_classification_agrees_where_decisive(exported):
    """int8: the label equals fp32's wherever fp32's top two labels are apart (what parity's agreement
    counts), scores within int8's error."""
    ckpt, out = exported("text-classification", Quant.INT8)
    pipe = _pipeline("text-classification", ckpt, top_k=None)
    decisive = 0
    for backend in BOTH:
        predictor = load(out, backend=backend)
        for text in TEXTS:
            expected = sorted(_scores(pipe, text), key=lambda d: -d["score"])
            got = predictor.classify(text)
            assert got.scores[expected[0]["label"]] == pytest.approx(expected[0]["score"], abs=0.05)
            if expected[0]["score"] - expected[1]["score"] > 0.05:
                decisive += 1
                assert got.label == expected[0]["label"]
    assert decisive >= 4


@pytest.mark.parametrize("backend", BOTH)
def test_token_classification_entities_equal_pipeline(exported, backend):
    ckpt, out = exported("token-classification")
    pipe = _pipeline("token-classification", ckpt, aggregation_strategy="simple")
    predictor = load(out, backend=backend)
    total = 0
    for text in TEXTS:
        expected = [(e["entity_group"], e["word"], e["start"], e["end"]) for e in pipe(text)]
        got = predictor.entities(text)
        assert [(e.label, e.word, e.start, e.end) for e in got] == expected, text
        assert [e.score for e in got] == pytest.approx([e["score"] for e in pipe(text)], abs=1e-4)
        total += len(got)
    assert total > 0  # the random head finds entities: grouping and spans were exercised


@pytest.mark.parametrize("backend", BOTH)
def test_question_answering_equals_transformers_decoding(exported, backend):
    """transformers 5 has no question-answering pipeline; its span decoding (select_starts_ends, which the
    document-QA pipeline runs) on the fp32 model's logits is the reference."""
    import torch
    from transformers import AutoTokenizer
    from transformers.pipelines.document_question_answering import select_starts_ends

    from mobile_export.core.tasks import model_class_for

    ckpt, out = exported("question-answering")
    tok = AutoTokenizer.from_pretrained(str(ckpt))
    model = model_class_for("question-answering").from_pretrained(str(ckpt)).eval()
    predictor = load(out, backend=backend)
    questions = ["Who paid for the coffees?", "这本书怎么样？", "What lasts two days?"]
    contexts = [ENGLISH[10], CHINESE[7] + CHINESE[2], ENGLISH[4] + " " + ENGLISH[5]]
    for q, c in zip(questions, contexts):
        enc = tok(q, c, truncation="only_second", return_offsets_mapping=True, return_tensors="pt")
        offsets = enc.pop("offset_mapping")[0].tolist()
        with torch.no_grad():
            o = model(**enc)
        p_mask = np.array([[s != 1 for s in enc.sequence_ids(0)]])
        p_mask[0, 0] = False  # the pipelines keep [CLS]
        starts, ends, scores, _ = select_starts_ends(
            o.start_logits.numpy(), o.end_logits.numpy(), p_mask, enc["attention_mask"].numpy()
        )
        first, last = offsets[starts[0]][0], offsets[ends[0]][1]
        got = predictor.answer(q, c)
        assert (got.text, got.start, got.end) == (c[first:last], first, last)
        assert got.score == pytest.approx(float(scores[0]), abs=1e-4)


@pytest.mark.parametrize("backend", BOTH)
def test_fill_mask_equals_pipeline(exported, backend):
    ckpt, out = exported("fill-mask")
    pipe = _pipeline("fill-mask", ckpt, top_k=5)
    texts = ["the quick brown [MASK] jumps over the lazy dog.", "这家餐厅的[MASK]真好吃，服务也很[MASK]到。"]
    assert_fills_equal_pipeline(load(out, backend=backend), pipe, texts)


@pytest.mark.parametrize("backend", BOTH)
def test_feature_extraction_equals_pipeline(exported, backend):
    ckpt, out = exported("feature-extraction")
    pipe = _pipeline("feature-extraction", ckpt)
    predictor = load(out, backend=backend)
    for text in TEXTS[:4]:
        expected = np.asarray(pipe(text))[0]
        got = predictor.encode(text)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got.vector, expected, atol=1e-4)


def test_cli_run_prints_each_artifact(exported, capsys):
    _, out = exported("text-classification")
    assert main(["run", str(out), "这个手机很好用", "Call me Ishmael."]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "这个手机很好用"
    assert lines[1].startswith("  model.pte (executorch, fp32): ") and lines[2].startswith("  model.onnx (onnx, fp32): ")
    assert lines[3] == "Call me Ishmael."
    labels = {"negative", "neutral", "positive"}
    assert all(line.split(": ")[1].split()[0] in labels for line in (lines[1], lines[2], lines[4], lines[5]))


def test_cli_run_json_lines_from_stdin(exported, capsys, monkeypatch):
    _, out = exported("question-answering")
    monkeypatch.setattr("sys.stdin", io.StringIO("Who paid?\tMs. O'Neill paid $12.50.\nWhere?\tIn the sun.\n"))
    assert main(["run", str(out), "--json", "--backend", "onnx"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in rows] == ["Who paid?", "Where?"]
    assert rows[0]["context"] == "Ms. O'Neill paid $12.50." and rows[0]["backend"] == "onnx"
    assert rows[0]["result"]["answer"] in rows[0]["context"] and rows[0]["result"]["answer"]


def test_cli_run_fill_mask_top_k_and_text_after_options(exported, capsys):
    _, out = exported("fill-mask")
    assert main(["run", str(out), "--backend", "executorch", "--json", "--top-k", "3", "the [MASK] dog"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(row["result"]) == 1 and len(row["result"][0]["fills"]) == 3


def _error(argv, capsys) -> tuple[int, str]:
    """(exit code, the one line that says what is wrong); a text that cannot run is followed by the count line."""
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and (len(lines) == 1 or len(lines) == 2 and "could not be run" in lines[1]), err
    return code, lines[0]


def test_manifest_is_written_and_read_by_one_record(exported, tmp_path):
    """manifest.json reads back into the record it was written from (the same JSON); one that is not a manifest
    is refused with one line naming the file."""
    from mobile_export.assets.manifest import Manifest

    _, folder = exported("text-classification")
    written = json.loads((folder / "manifest.json").read_text())
    manifest = Manifest.read(folder)
    assert json.loads(json.dumps(manifest.to_json())) == written
    assert manifest.file("model.onnx") is not None and manifest.file("model.onnx").sha256 == next(
        f["sha256"] for f in written["files"] if f["path"] == "model.onnx")
    (tmp_path / "manifest.json").write_text(json.dumps({"task": "text-classification", "artifacts": [],
                                                        "files": [{"path": "x"}]}))
    with pytest.raises(BadInputError, match="manifest.json has a malformed file or artifact entry"):
        Manifest.read(tmp_path)


def test_a_closed_pipe_is_a_normal_end(exported):
    """``mobile-export run OUT ... | head -1``: the reader goes away, the command ends quietly with exit 0."""
    import subprocess
    import sys

    _, folder = exported("text-classification")
    proc = subprocess.Popen([sys.executable, "-m", "mobile_export", "run", str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdin.write("a good phone\n" * 400)
    proc.stdin.close()
    assert proc.stdout.readline().strip() == "a good phone"
    proc.stdout.close()  # as head does after its line
    assert proc.wait(timeout=300) == 0
    assert proc.stderr.read() == ""


def test_run_refuses_a_folder_that_is_not_an_export(tmp_path, capsys):
    code, line = _error(["run", str(tmp_path), "text"], capsys)
    assert code == 2 and "is not an export folder (no manifest.json)" in line
    code, line = _error(["run", str(tmp_path / "missing"), "text"], capsys)
    assert code == 2 and "is neither a folder nor a file" in line
    (tmp_path / "notes.txt").write_text("hello")
    code, line = _error(["run", str(tmp_path / "notes.txt"), "text"], capsys)
    assert code == 2 and "notes.txt: mobile-export reads .pte, .onnx, .ort, .qnn.onnx and .tflite files" in line


def test_run_refuses_a_changed_artifact(exported, tmp_path, capsys):
    _, out = exported("text-classification")
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    data = bytearray((copy / "model.pte").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / "model.pte").write_bytes(bytes(data))
    code, line = _error(["run", str(copy), "--backend", "executorch", "text"], capsys)
    assert code == 2 and "model.pte's sha256 is not the one manifest.json records" in line
    assert main(["run", str(copy), "--backend", "onnx", "text"]) == 0  # the untouched artifact still runs
    capsys.readouterr()


def test_input_that_is_not_text_is_refused_and_a_stream_goes_on(exported, capsys, monkeypatch):
    """An empty or blank text is a bad line, not a score; a stream names each bad line on stderr, runs the rest
    and ends with exit 2; a text cut to the max length says so; options a task cannot use are refused."""
    _, tc = exported("text-classification")
    code, line = _error(["run", str(tc), ""], capsys)
    assert code == 2 and "the text is empty" in line
    monkeypatch.setattr("sys.stdin", io.StringIO("a good phone\n\n   \nbad battery\n"))
    assert main(["run", str(tc), "--backend", "onnx", "--json"]) == 2
    out, err = capsys.readouterr()
    assert [json.loads(row)["text"] for row in out.splitlines()] == ["a good phone", "bad battery"]
    assert "text 2 (''): the text is empty" in err and "text 3" in err and "2 of 4 texts could not be run" in err
    _, fm = exported("fill-mask")
    monkeypatch.setattr("sys.stdin", io.StringIO("no mask here\nthe [MASK] dog\n"))
    assert main(["run", str(fm), "--backend", "onnx", "--json"]) == 2
    out, err = capsys.readouterr()
    assert [json.loads(row)["text"] for row in out.splitlines()] == ["the [MASK] dog"] and "needs a [MASK]" in err
    long = "a good phone " * 100
    assert main(["run", str(tc), "--backend", "onnx", "--json", long]) == 0
    (row,) = [json.loads(r) for r in capsys.readouterr().out.splitlines()]
    seen = load(tc, backend="onnx").max_length
    assert row["truncated"]["tokens_seen"] == seen < row["truncated"]["tokens"]
    assert main(["run", str(tc), "--backend", "onnx", long]) == 0
    assert f"(cut to the export's max length: {seen} of" in capsys.readouterr().out
    assert main(["run", str(tc), "--backend", "onnx", "--json", "short"]) == 0
    assert "truncated" not in json.loads(capsys.readouterr().out)
    code, line = _error(["run", str(tc), "--top-k", "3", "a good phone"], capsys)
    assert code == 2 and "--top-k is for fill-mask" in line
    code, line = _error(["run", str(tc), "--threads", "0", "a good phone"], capsys)
    assert code == 2 and "--threads must be >= 1" in line


def test_the_python_api_refuses_what_is_not_text(exported):
    clf = load(exported("text-classification")[1], backend="onnx")
    for bad, says in ((None, "pass a text \\(str\\) or a list of texts, not NoneType"), ("", "is empty"), (42, "not int")):
        with pytest.raises(BadInputError, match=says):
            clf(bad)
    with pytest.raises(BadInputError, match="a context is for question-answering"):
        clf.predict("a good phone", "a context")
    qa = load(exported("question-answering")[1], backend="onnx")
    with pytest.raises(BadInputError, match="the context must be a str") as exc:
        qa.answer("Who paid?", None)  # type: ignore[arg-type]
    assert "--context" not in str(exc.value)
    with pytest.raises(BadInputError, match="threads 0"):
        load(exported("text-classification")[1], backend="onnx", threads=0)


def test_run_needs_the_task_inputs(exported, capsys):
    _, qa = exported("question-answering")
    code, line = _error(["run", str(qa), "Who paid?"], capsys)
    assert code == 2 and "--context" in line
    code, line = _error(["run", str(qa), "--backend", "onnx", "--context", "Ms. O'Neill paid.", "who " * 200], capsys)
    assert code == 2 and "the question is longer than this export's max length" in line
    _, fm = exported("fill-mask")
    code, line = _error(["run", str(fm), "no mask here"], capsys)
    assert code == 2 and "needs a [MASK]" in line
    _, tc = exported("text-classification")
    code, line = _error(["run", str(tc), "--context", "c", "q"], capsys)
    assert code == 2 and "--context is for question-answering" in line
