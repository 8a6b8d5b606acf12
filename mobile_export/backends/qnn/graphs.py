"""Several sequence lengths in one NPU file over one set of stored weights (``--npu-lengths``). ONNX Runtime runs
every node of a session's graph whatever outputs are asked for (measured: a two-branch graph costs both branches
for either output), so each length is a graph of its own, run in a session of its own. The file's graph is the
longest; each shorter one (its nodes and the few initializers it does not share: activation scales calibrated at
its length, its position and mask constants) is stored compressed in a metadata entry, and reads the main graph's
weights when its session is built. The weights are quantized from the same float values with the same per-channel
recipe at every length, so they are byte-equal and stored once (``attach`` checks it, name by name)."""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

from ...core.errors import ArtifactLoadError
from .metadata import META_KEY

GRAPHS_KEY = "mobile_export.qnn.graphs"  # {length: base64 of the zlib-compressed GraphProto}
MAX_GRAPH_BYTES = 256 << 20  # one length's graph, inflated: far above a real graph without its weights


def _digest(tensor: Any) -> str:
    from onnx import numpy_helper

    return hashlib.sha256(numpy_helper.to_array(tensor).tobytes()).hexdigest() + str(tensor.data_type)


def attach(main: Path, shorter: dict[int, Path]) -> dict[str, Any]:
    """Store in the NPU file at ``main`` the graph of each of ``shorter`` (length -> the QDQ model lowered at that
    length) without the initializers equal to the main graph's (name and bytes); returns the facts it recorded."""
    import onnx

    model = onnx.load(str(main))
    stored = {t.name: _digest(t) for t in model.graph.initializer}
    graphs, own_bytes, shared = {}, {}, 0
    for length, path in sorted(shorter.items()):
        graph = onnx.load(str(path)).graph
        own = [t for t in graph.initializer if stored.get(t.name) != _digest(t)]
        shared = len(graph.initializer) - len(own)
        del graph.initializer[:]
        graph.initializer.extend(own)
        packed = zlib.compress(graph.SerializeToString(), 9)
        graphs[str(length)] = base64.b64encode(packed).decode("ascii")
        own_bytes[str(length)] = len(packed)
    entry = model.metadata_props.add()
    entry.key, entry.value = GRAPHS_KEY, json.dumps(graphs)
    facts = next(p for p in model.metadata_props if p.key == META_KEY)
    recorded = json.loads(facts.value)
    recorded["lengths"] = sorted([*map(int, graphs), int(recorded["sequence_length"])])
    recorded["graph_bytes"] = own_bytes
    facts.value = json.dumps(recorded)
    tmp = main.with_name(main.name + ".tmp")
    onnx.save(model, str(tmp))
    tmp.replace(main)
    return {"lengths": recorded["lengths"], "graph_bytes": own_bytes, "shared_initializers": shared}


def stored_bytes(strings: dict[str, str], shown: str) -> dict[int, int]:
    """The bytes of the metadata entry that holds each shorter length's graph, by length, from the file's metadata
    ``strings`` (empty: one length)."""
    try:
        graphs = json.loads(strings.get(GRAPHS_KEY) or "{}")
        return {int(n): len(packed) for n, packed in sorted(graphs.items(), key=lambda kv: int(kv[0]))}
    except (ValueError, TypeError, AttributeError):
        raise ArtifactLoadError(f"{shown}: its graphs for other lengths are unreadable; export it again") from None


def model_for(model: Any, length: int, shown: str) -> bytes:
    """The serialized model of the file's graph for ``length`` (``model``: the whole file as a ModelProto):
    its stored graph, completed with the main graph's initializers it reads."""
    import onnx
    from google.protobuf.message import DecodeError

    entry = next((p.value for p in model.metadata_props if p.key == GRAPHS_KEY), None)
    try:
        packed = base64.b64decode(json.loads(entry or "{}")[str(length)], validate=True)
        inflate = zlib.decompressobj()
        raw = inflate.decompress(packed, MAX_GRAPH_BYTES)
        if inflate.unconsumed_tail:
            raise ValueError(f"over {MAX_GRAPH_BYTES:,} bytes inflated")
        graph = onnx.GraphProto.FromString(raw)
    except (KeyError, ValueError, TypeError, zlib.error, DecodeError) as exc:
        raise ArtifactLoadError(
            f"{shown}: its graph for {length} tokens is unreadable ({type(exc).__name__}); export it again"
        ) from None
    own = {t.name for t in graph.initializer}
    read = {name for node in graph.node for name in node.input}
    graph.initializer.extend(t for t in model.graph.initializer if t.name in read and t.name not in own)
    out = onnx.ModelProto()
    out.ir_version, out.producer_name = model.ir_version, model.producer_name
    out.opset_import.extend(model.opset_import)
    out.metadata_props.extend(p for p in model.metadata_props if p.key == META_KEY)
    out.graph.CopyFrom(graph)
    return out.SerializeToString()
