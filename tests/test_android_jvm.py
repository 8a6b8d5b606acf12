"""The Android app's ONNX Runtime path, run for real on the JVM (`make android-jvm`).

The app's own OrtRunner class, the core tokenizer, Classifier and SelfTest, compiled by
`make android-jvm` against ONNX Runtime's desktop Java library from Maven Central (the same
`ai.onnxruntime` API as the Android AAR), classify the demo model's 1,667 test reviews from its
export. Python's ONNX Runtime of the same version (installed beside it by the make target) must
give the same labels and probabilities within 1e-5. The pip build the project pins (1.32.0) is
compared too and its difference printed: Maven Central serves no 1.32.0 Java build here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from blocks import copy_alone, with_strings

pytestmark = pytest.mark.android_jvm

# Run in a child with the Java library's ONNX Runtime version on sys.path: probabilities per text.
_PYTHON_ORT = """
import json, sys
import numpy as np, onnxruntime as ort
model, feeds_path, out = sys.argv[1:4]
options = ort.SessionOptions()
options.add_session_config_entry("session.x64quantprecision", "1")  # as the app's OrtRunner sets it
session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
rows = []
inputs = {i.name for i in session.get_inputs()}  # RoBERTa's, XLM-R's and DistilBERT's take no token types
for ids, types in json.load(open(feeds_path)):
    feeds = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64),
             "token_type_ids": np.array([types], np.int64)}
    feeds = {k: v for k, v in feeds.items() if k in inputs}
    logits = session.run(None, feeds)[0][0].astype(np.float64)  # [classes], or [tokens, vocabulary] for fill-mask
    p = np.exp(logits - logits.max(-1, keepdims=True))
    rows.append((p / p.sum(-1, keepdims=True)).tolist())
json.dump({"version": ort.__version__, "probabilities": rows}, open(out, "w"))
"""


def _python_ort(pythonpath: str | None, model, feeds_path, out) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    subprocess.run([sys.executable, "-c", _PYTHON_ORT, str(model), str(feeds_path), str(out)], check=True, env=env,
                   timeout=1800)
    return json.loads(out.read_text())


def _refused_on_the_jvm(classpath: str, good, data, tmp_path) -> None:
    """JvmOrtCheck (the library's TextModel.open) on a lone .onnx whose data file changed after export, and on one
    whose block is not base64: a non-zero exit naming the problem, before anything is classified."""
    from mobile_export.assets.bundle import ASSETS_KEY

    changed = copy_alone(good, tmp_path / "changed")
    weights = bytearray(changed.with_name("model.onnx.data").read_bytes())
    weights[len(weights) // 2] ^= 0x01
    changed.with_name("model.onnx.data").write_bytes(bytes(weights))
    (tmp_path / "broken").mkdir()
    broken = with_strings(good, tmp_path / "broken" / "model.onnx", {ASSETS_KEY: "not base64!"})
    for path, words in ((changed, "changed or corrupted after export"), (broken, "broken bundle (not base64)")):
        proc = subprocess.run(["java", "-cp", classpath, "org.mobileexport.demo.JvmOrtCheck", str(path), str(data),
                               str(tmp_path / "refused.tsv")], capture_output=True, text=True, timeout=600)
        assert proc.returncode != 0 and words in proc.stderr and "model.onnx" in proc.stderr, proc.stderr[-1500:]
        assert "classified" not in proc.stdout, proc.stdout


def _jvm_env() -> tuple[str, str, str]:
    """(classpath, the Java library's Python onnxruntime on a path of its own, its version), from make."""
    classpath, ort_py, version = (os.environ.get(k, "") for k in ("ORT_JVM_CLASSPATH", "ORT_JVM_PYTHONPATH",
                                                                   "ORT_JVM_VERSION"))
    assert classpath and ort_py and version, "run through `make android-jvm`, which builds and sets these"
    return classpath, ort_py, version


@pytest.mark.parametrize("quant", ["int8", "int4"])
def test_app_ort_runner_on_the_jvm_matches_python(tmp_path, quant):
    classpath, ort_py, version = _jvm_env()
    from mobile_export import Backend, ExportOptions, Quant, export
    from mobile_export.demo import MODEL_DIR
    from mobile_export.demo.data import write_split
    from mobile_export.model.loading import load_checkpoint
    from mobile_export.model.reference import tokenize

    data = tmp_path / "test.tsv"
    n = write_split("test", data)
    out = tmp_path / "export"
    # int4: MatMulNBits and GatherBlockQuantized (com.microsoft ops, opset 21) through the app's own runner
    export(MODEL_DIR, out, ExportOptions(backends=(Backend.ONNX,), quant=Quant(quant), measure_memory=False))
    java_out = tmp_path / "java.tsv"
    # int8: the .onnx alone (with its data file), its tokenizer, labels and golden examples the ones it carries;
    # int4: the export folder, as the app ships it today
    given = copy_alone(out / "model.onnx", tmp_path / "alone") if quant == "int8" else out
    proc = subprocess.run(["java", "-cp", classpath, "org.mobileexport.demo.JvmOrtCheck", str(given), str(data),
                           str(java_out)], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "self-test: passed" in proc.stdout, proc.stdout
    assert ("assets: carried by model.onnx (identity checked)" in proc.stdout) == (quant == "int8"), proc.stdout
    assert ("fill-mask refused: a text-classification model fills no masks" in proc.stdout) == (quant == "int8")
    if quant == "int8":  # the Java reader refuses what Python's refuses: a changed weight, a broken block
        _refused_on_the_jvm(classpath, given, data, tmp_path)
    assert "session option session.x64quantprecision=1" in proc.stdout, proc.stdout  # the app's OrtRunner sets it
    java = [line.split("\t") for line in java_out.read_text(encoding="utf-8").splitlines()]
    assert len(java) == n >= 1667
    java_labels = np.array([int(r[0]) for r in java])
    java_p = np.array([[float(v) for v in r[1:]] for r in java])

    loaded = load_checkpoint(MODEL_DIR)
    texts = [line.split("\t", 1)[1] for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    examples = tokenize(loaded.tokenizer, texts, loaded.config.max_position_embeddings)
    feeds = tmp_path / "feeds.json"
    feeds.write_text(json.dumps([[ex.feeds["input_ids"][0].tolist(), ex.feeds["token_type_ids"][0].tolist()]
                                 for ex in examples]))
    same = _python_ort(ort_py, out / "model.onnx", feeds, tmp_path / "same.json")
    assert same["version"] == version
    p = np.array(same["probabilities"])
    assert np.array_equal(java_labels, p.argmax(-1)), np.nonzero(java_labels != p.argmax(-1))
    worst = float(np.max(np.abs(p - java_p)))
    assert worst <= 1e-5, worst
    pinned = _python_ort(None, out / "model.onnx", feeds, tmp_path / "pinned.json")
    q = np.array(pinned["probabilities"])
    print(f"\n{quant}: JVM OrtRunner (onnxruntime {version}) vs Python onnxruntime {version} on {n} reviews: labels "
          f"identical, max |p diff| {worst:.1e}; vs the pinned Python onnxruntime {pinned['version']}: "
          f"{int(np.sum(java_labels != q.argmax(-1)))} labels differ, max |p diff| {float(np.max(np.abs(q - java_p))):.1e}")


def _lone_onnx(tmp_path, tiny_checkpoint, shared_export, task: str, kind: str, **options):
    """(checkpoint, its int8 .onnx copied alone with its data file) for a tiny ``task`` model of tokenizer ``kind``
    (ALBERT's two kinds; RoBERTa for ``bpe``, XLM-R for ``xlmr``)."""
    from mobile_export import Backend, ExportOptions

    family = {"bpe": "roberta", "xlmr": "xlm-roberta"}.get(kind, "albert")
    ckpt = tiny_checkpoint(task, kind, family=family, max_position_embeddings=64)
    out = shared_export(ckpt, ExportOptions(backends=(Backend.ONNX,), measure_memory=False, **options)).out
    return ckpt, copy_alone(out / "model.onnx", tmp_path / "alone")


# fill-mask texts: one mask, two masks, a mask at the start, and one past the max length (truncated away)
_MASKED = ["the quick brown {m} jumps over the lazy dog.", "这家餐厅的{m}真好吃，服务也很{m}到。", "{m} me Ishmael.",
           "word " * 80 + "{m} at the end"]


@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece", "bpe"])
def test_library_fill_mask_from_the_lone_file_matches_python(tmp_path, tiny_checkpoint, shared_export, kind):
    """The library's TextModel.fillMask through the app's OrtRunner, from a lone int8 fill-mask .onnx: the same mask
    positions, top-5 ids and probabilities as Python's ONNX Runtime of the same version on transformers' ids, and
    every id's token text as transformers' decode([id])."""
    from mobile_export import load
    from mobile_export.model.loading import load_checkpoint

    (classpath, ort_py, version), (ckpt, lone) = _jvm_env(), _lone_onnx(tmp_path, tiny_checkpoint, shared_export,
                                                                         "fill-mask", kind)
    tokenizer = load_checkpoint(ckpt).tokenizer
    texts = [t.format(m=tokenizer.mask_token) for t in _MASKED]
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    k = 5
    proc = subprocess.run(["java", "-cp", classpath, "org.mobileexport.demo.JvmFillMask", str(lone),
                           str(tmp_path / "texts.txt"), str(k), str(tmp_path / "java.json")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    java = json.loads((tmp_path / "java.json").read_text(encoding="utf-8"))

    assert java["tokens"] == [tokenizer.decode([i]) for i in range(len(tokenizer))]
    ids = [tokenizer(t, truncation=True, max_length=64)["input_ids"] for t in texts]
    feeds = tmp_path / "feeds.json"
    feeds.write_text(json.dumps([[row, [0] * len(row)] for row in ids]))
    same = _python_ort(ort_py, lone, feeds, tmp_path / "same.json")
    assert same["version"] == version
    pinned = load(lone)
    worst = 0.0
    for row, fills, probs, text in zip(ids, java["fills"], same["probabilities"], texts):
        masks = [i for i, t in enumerate(row) if t == tokenizer.mask_token_id]
        assert [f["position"] for f in fills] == masks  # the last text's mask was truncated away: none
        for fill in fills:
            p = np.array(probs[fill["position"]])
            np.testing.assert_allclose(fill["scores"], np.sort(p)[::-1][:k], atol=1e-6)  # the top k, best first
            np.testing.assert_allclose(p[fill["ids"]], fill["scores"], atol=1e-6)  # ... and the ids they belong to
        python = pinned.fill_mask(text, k)  # the pinned Python runtime, through mobile_export.load(FILE)
        assert [m.position for m in python] == masks
        worst = max([worst, *(abs(a - f.score) for fill, m in zip(fills, python)
                               for a, f in zip(fill["scores"], m.fills))])
    assert sum(len(f) for f in java["fills"]) == 4  # 1 + 2 + 1 + 0 masks were filled
    assert java["refused"] == [f"fill-mask needs a {tokenizer.mask_token} in the text", "k 0: pass 1 or more"]
    print(f"\n{kind} fill-mask: JVM TextModel (onnxruntime {version}) equals Python onnxruntime {version} (1e-6); "
          f"vs the pinned Python onnxruntime through mobile_export.load: max |score diff| {worst:.1e}")


# Run with the Java library's ONNX Runtime first on sys.path: mobile_export.load(FILE).fill_mask on each text, its
# session made as the app's OrtRunner makes it (see _PYTHON_ANSWER below).
_PYTHON_FILLS = """
import json, sys
import onnxruntime
from mobile_export import load
model, texts, k, out = sys.argv[1:5]
predictor = load(model)
options = onnxruntime.SessionOptions()
options.add_session_config_entry("session.x64quantprecision", "1")
predictor._runner.session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
rows = [[m.to_json() for m in predictor.fill_mask(t, int(k))] for t in json.load(open(texts, encoding="utf-8"))]
json.dump({"version": onnxruntime.__version__, "fills": rows}, open(out, "w"))
"""


def test_library_fill_mask_of_a_topk_file_matches_python(tmp_path, tiny_checkpoint, shared_export):
    """A --head topk:5 fill-mask file (a RoBERTa: its int64 positions and ids through the app's OrtRunner): the
    library's fills, k 3 and k 5, are the file's own slots as mobile_export.load(FILE) reads them under Python's
    ONNX Runtime of the same version."""
    from mobile_export.model.loading import load_checkpoint

    (classpath, ort_py, version), (ckpt, lone) = _jvm_env(), _lone_onnx(tmp_path, tiny_checkpoint, shared_export,
                                                                         "fill-mask", "bpe", head="topk:5")
    tokenizer = load_checkpoint(ckpt).tokenizer
    texts = [t.format(m=tokenizer.mask_token) for t in _MASKED]
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    for k in (3, 5):
        proc = subprocess.run(["java", "-cp", classpath, "org.mobileexport.demo.JvmFillMask", str(lone),
                               str(tmp_path / "texts.txt"), str(k), str(tmp_path / f"java{k}.json")],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        java = json.loads((tmp_path / f"java{k}.json").read_text(encoding="utf-8"))
        subprocess.run([sys.executable, "-c", _PYTHON_FILLS, str(lone), str(tmp_path / "texts.json"), str(k),
                        str(tmp_path / f"python{k}.json")], check=True, env=dict(os.environ, PYTHONPATH=ort_py),
                       timeout=1800)
        python = json.loads((tmp_path / f"python{k}.json").read_text())
        assert python["version"] == version
        for fills, masks in zip(java["fills"], python["fills"]):
            assert [f["position"] for f in fills] == [m["position"] for m in masks]
            for fill, mask in zip(fills, masks):
                assert fill["ids"] == [f["token_id"] for f in mask["fills"]]
                np.testing.assert_allclose(fill["scores"], [f["score"] for f in mask["fills"]], atol=1e-6)
        assert sum(len(f) for f in java["fills"]) == 4 and all(len(c["ids"]) == k for f in java["fills"] for c in f)


# question-answering pairs: English, Chinese, accents and emoji (two UTF-16 chars each) in the context, and a
# context past the max length (cut, the question kept)
_QA = [("who jumps over the dog?", "the quick brown fox jumps over the lazy dog."),
       ("哪家餐厅好吃？", "这家餐厅的菜真好吃，服务也很周到。"),
       ("where is the café?", "the café naïve 😀 sits by the résumé 👍🏽 shop, near Ångström street."),
       ("what is at the end?", "word " * 80 + "and the answer at the end")]

# Run with the Java library's ONNX Runtime first on sys.path: mobile_export.load(FILE).answer on each pair, its
# session made as the app's OrtRunner makes it. On an x86 host without VNNI the two sessions differ on purpose:
# load() rewrites every int8 weight to u8 (precision.py) while ONNX Runtime's own option, all the app can set, leaves
# the shared layer's Loop-body weights s8, whose kernel saturates there (never on a phone's ARM64).
_PYTHON_ANSWER = """
import json, sys
import onnxruntime
from mobile_export import load
model, pairs, out = sys.argv[1:4]
predictor = load(model)
options = onnxruntime.SessionOptions()
options.add_session_config_entry("session.x64quantprecision", "1")  # as the app's OrtRunner sets it
predictor._runner.session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
rows = [predictor.answer(q, c).to_json() for q, c in json.load(open(pairs, encoding="utf-8"))]
json.dump({"version": onnxruntime.__version__, "answers": rows}, open(out, "w"))
"""


def _utf16_to_code_points(text: str, index: int) -> int:
    return len(text.encode("utf-16-le")[: 2 * index].decode("utf-16-le"))


@pytest.mark.parametrize("kind", ["wordpiece", "sentencepiece", "xlmr"])
def test_library_answer_from_the_lone_file_matches_python(tmp_path, tiny_checkpoint, shared_export, kind):
    """The library's TextModel.answer through the app's OrtRunner, from a lone int8 question-answering .onnx: the
    same answer text, span and score as mobile_export.load(FILE).answer under Python's ONNX Runtime of the same
    version, and the same refusals."""
    from mobile_export import load

    (classpath, ort_py, version), (_, lone) = _jvm_env(), _lone_onnx(tmp_path, tiny_checkpoint, shared_export,
                                                                      "question-answering", kind)
    (tmp_path / "pairs.tsv").write_text("".join(f"{q}\t{c}\n" for q, c in _QA), encoding="utf-8")
    (tmp_path / "pairs.json").write_text(json.dumps(_QA), encoding="utf-8")
    long_question = "why " * 70 + "?"
    proc = subprocess.run(["java", "-cp", classpath, "org.mobileexport.demo.JvmAnswer", str(lone),
                           str(tmp_path / "pairs.tsv"), long_question, str(tmp_path / "java.json")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    java = json.loads((tmp_path / "java.json").read_text(encoding="utf-8"))

    env = dict(os.environ, PYTHONPATH=ort_py)
    subprocess.run([sys.executable, "-c", _PYTHON_ANSWER, str(lone), str(tmp_path / "pairs.json"),
                    str(tmp_path / "same.json")], check=True, env=env, timeout=1800)
    same = json.loads((tmp_path / "same.json").read_text())
    assert same["version"] == version
    assert len(java["answers"]) == len(_QA)
    for (_, context), got, want in zip(_QA, java["answers"], same["answers"]):
        span = (_utf16_to_code_points(context, got["start"]), _utf16_to_code_points(context, got["end"]))
        assert (got["text"], span) == (want["answer"], (want["start"], want["end"]))
        assert got["text"] == context[span[0]:span[1]] != ""
        assert abs(got["score"] - want["score"]) <= 1e-6
    pinned = load(lone)
    worst = max(abs(a["score"] - pinned.answer(q, c).score) for (q, c), a in zip(_QA, java["answers"]))
    assert java["refused"] == [
        "the question is empty: pass a non-empty question",
        "the context is empty: pass a non-empty context",
        "the question is longer than this export's max length (64 tokens with its context); shorten it or export "
        "with a larger --max-seq-len",
    ]
    print(f"\n{kind} question answering: JVM TextModel (onnxruntime {version}) equals mobile_export.load under "
          f"Python onnxruntime {version}; vs the pinned Python onnxruntime: max |score diff| {worst:.1e}")


@pytest.mark.parametrize("task", ["text-classification", "token-classification"])
def test_app_npu_runner_pads_cuts_and_falls_back(tmp_path, tiny_checkpoint, shared_export, task):
    """The app's OrtRunner on the NPU file: onHtp is refused where ONNX Runtime has no QNN provider (the desktop
    build, as a phone without an HTP: the app runs model.onnx then); on the CPU provider the same runner pads to the
    file's length and cuts per-token outputs back, giving Python's padded run of the same session options; a text
    longer than the file's length is refused."""
    classpath, ort_py, version = _jvm_env()
    from mobile_export import Backend, ExportOptions, Thresholds

    ckpt = tiny_checkpoint(task, "wordpiece")
    # the app's calling convention is what is checked here, not parity (test_qnn and test_matrix gate that)
    gates_off = Thresholds(min_agreement=0.0, min_sqnr_db=-100.0, min_example_sqnr_db=-100.0)
    out = shared_export(ckpt, ExportOptions(backends=(Backend.QNN,), measure_memory=False, thresholds=gates_off)).out
    ids = [2, 17, 33, 41, 5, 3]
    proc = subprocess.run(["java", "-cp", classpath, "org.mobileexport.demo.JvmNpuCheck", str(out / "model.qnn.onnx"),
                           ",".join(map(str, ids))], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert any(line.startswith("htp: refused") for line in lines), proc.stdout
    assert "fixed 128" in lines and any(line.startswith("longer: refused (the NPU file takes at most 128") for line in lines)
    java = [np.array([float(v) for v in line.split(":", 1)[1].split()]) for line in lines if line.startswith("out ")]
    python = _padded_run(ort_py, out / "model.qnn.onnx", ids, 128)
    assert [a.size for a in java] == [b.size for b in python]  # per-token outputs cut to the text's 6 rows
    if task == "token-classification":
        assert java[0].size == len(ids) * python[0].size // len(ids) and python[0].size % len(ids) == 0
    for a, b in zip(java, python):
        assert float(np.max(np.abs(a - b))) <= 1e-4, float(np.max(np.abs(a - b)))


def test_app_npu_runner_sends_a_short_text_to_the_short_graph(tmp_path, tiny_checkpoint, shared_export):
    """A file with graphs for 16 and 128 tokens (--npu-lengths 16): the app's OrtRunner builds the 16-token model
    from the file's weights and its stored graph (core/LengthGraphs), runs a 6-token text there, and gives what
    Python's model of that length (backends.qnn.graphs.model_for) gives on the same CPU provider."""
    classpath, ort_py, version = _jvm_env()
    from mobile_export import Backend, ExportOptions, Thresholds

    ckpt = tiny_checkpoint("text-classification", "wordpiece")
    gates_off = Thresholds(min_agreement=0.0, min_sqnr_db=-100.0, min_example_sqnr_db=-100.0)
    out = shared_export(ckpt, ExportOptions(backends=(Backend.QNN,), measure_memory=False, thresholds=gates_off,
                                            format_options={"npu_lengths": "16"})).out
    ids = [2, 17, 33, 41, 5, 3]
    proc = subprocess.run(["java", "-cp", classpath, "org.mobileexport.demo.JvmNpuCheck", str(out / "model.qnn.onnx"),
                           ",".join(map(str, ids))], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert "fixed 128" in lines and "ran at 16" in lines, proc.stdout
    java = [np.array([float(v) for v in line.split(":", 1)[1].split()]) for line in lines if line.startswith("out ")]
    python = _padded_run(ort_py, out / "model.qnn.onnx", ids, 16)
    assert [a.size for a in java] == [b.size for b in python]
    for a, b in zip(java, python):
        assert float(np.max(np.abs(a - b))) <= 1e-4, float(np.max(np.abs(a - b)))


def _padded_run(ort_py: str, path: Path, ids: list[int], length: int) -> list[np.ndarray]:
    """The NPU file's model of ``length`` tokens (the file's own graph, or a shorter one it stores:
    ``backends.qnn.graphs.model_for``) on the Java library's Python onnxruntime, CPU provider, the app's session
    options: ``ids`` right-padded to ``length``, per-token outputs cut to the text's rows."""
    script = (
        "import json, sys, numpy as np, onnx, onnxruntime as ort\n"
        "from mobile_export.backends.qnn.graphs import model_for\n"
        "length = int(sys.argv[3]); model = onnx.load(sys.argv[1])\n"
        "facts = json.loads({p.key: p.value for p in model.metadata_props}['mobile_export.qnn'])\n"
        "own = facts['sequence_length'] == length\n"
        "source = sys.argv[1] if own else model_for(model, length, 'model.qnn.onnx')\n"
        "o = ort.SessionOptions(); o.add_session_config_entry('session.x64quantprecision', '1')\n"
        "o.intra_op_num_threads = 1; o.inter_op_num_threads = 1\n"
        "s = ort.InferenceSession(source, o, providers=['CPUExecutionProvider'])\n"
        "ids = json.loads(sys.argv[2]); n = len(ids); row = np.zeros((1, length), np.int64); row[0, :n] = ids\n"
        "mask = np.zeros((1, length), np.int64); mask[0, :n] = 1\n"
        "feeds = {'input_ids': row, 'attention_mask': mask, 'token_type_ids': np.zeros((1, length), np.int64)}\n"
        "feeds = {i.name: feeds[i.name] for i in s.get_inputs()}\n"
        "outs = s.run(None, feeds)\n"
        "print(json.dumps([(o[:, :n] if o.ndim == 3 else o).ravel().tolist() for o in outs]))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ort_py, str(Path(__file__).resolve().parents[1])]))
    py = subprocess.run([sys.executable, "-c", script, str(path), json.dumps(ids), str(length)],
                        capture_output=True, text=True, timeout=600, env=env)
    assert py.returncode == 0, py.stderr[-2000:]
    return [np.array(v) for v in json.loads(py.stdout)]
