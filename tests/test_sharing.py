"""ALBERT's cross-layer sharing must survive export: file size must not grow with num_hidden_layers."""

from __future__ import annotations

import json

import onnx
import pytest
from conftest import WIDE_LAYER_PARAMS as LAYER_PARAMS
from onnx import numpy_helper

from mobile_export import Backend, ExportOptions, Quant, export, load_checkpoint

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full


# ExecuTorch fp32 is left out: the .pte stores weights by content hash for both precisions, and
# two more lowerings would cost a minute of the default run.
@pytest.mark.parametrize("backend,quant", [(Backend.ONNX, Quant.INT8), (Backend.ONNX, Quant.FP32),
                                           (Backend.ONNX, Quant.INT4), (Backend.EXECUTORCH, Quant.INT8),
                                           (Backend.EXECUTORCH, Quant.INT4)], ids=str)
def test_size_does_not_grow_with_layers(wide_export, backend, quant):
    sizes, partitions = {}, {}
    for layers in (1, 4):
        result = wide_export(backend, quant, layers)
        sizes[layers] = result.artifacts[0].bytes
        partitions[layers] = getattr(result.artifacts[0].parity.coverage, "xnnpack_calls", None)
        size = result.report["artifacts"][0]["size"]
        assert size["sharing_preserved"], size["sharing_verdict"]
        # every byte is attributed: parts + overhead (incl. unmatched constants) = the file
        assert sum(size["groups"].values()) + size["overhead_bytes"] == size["bytes"]
        bytes_per_weight = {Quant.INT8: 1, Quant.FP32: 4, Quant.INT4: 0.5}[quant]
        assert size["groups"]["shared encoder layer"] >= LAYER_PARAMS * bytes_per_weight
    one_layer = LAYER_PARAMS * bytes_per_weight
    per_layer = (sizes[4] - sizes[1]) / 3
    # Unshared, each extra layer would add one_layer bytes; shared, only graph nodes (and, in the
    # .pte, per-layer copies of the int8 scales) are added. 5% of a layer is less than its smallest
    # matrix (256 x 256), so one duplicated weight fails this.
    assert per_layer < 0.05 * one_layer, f"{backend} {quant}: {sizes}: {per_layer:.0f} B per extra layer"
    if backend is Backend.EXECUTORCH:
        # The layer-loop program holds the shared layer as one method whatever the depth: no XNNPACK
        # call and no graph is added per layer, only one more int in the layer_schedule (~85 B).
        assert partitions[4] == partitions[1], partitions
        assert per_layer < 256, f"{sizes}: {per_layer:.0f} B per extra layer"


def _graphs(graph):
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)


def test_onnx_int8_quantizes_every_weight_matmul_once(tiny_checkpoint, tmp_path):
    ckpt = tiny_checkpoint("text-classification", "wordpiece", num_hidden_layers=4)
    result = export(ckpt, tmp_path / "o", ExportOptions(backends=(Backend.ONNX,), quant=Quant.INT8, measure_memory=False))
    stats = result.artifacts[0].stats
    # The shared layer is the body of one Loop run 4 times: its (q, k, v, dense, ffn, ffn_output) MatMuls
    # appear once, + embedding projection, pooler and classifier in the main graph
    assert stats["layer_loop"] is True
    cov = result.artifacts[0].parity.coverage
    assert cov.quantized_weight_matmuls == 6 + 3 and cov.fp32_weight_matmuls == 0
    assert stats["activation_matmuls"] == 2  # Q.K^T and P.V stay fp32
    model = onnx.load(str(tmp_path / "o" / "model.onnx"))
    graph_only = onnx.load(str(tmp_path / "o" / "model.onnx"), load_external_data=False)
    [loop] = [n for n in model.graph.node if n.op_type == "Loop"]
    trip = next(i for i in model.graph.initializer if i.name == loop.input[0])
    assert numpy_helper.to_array(trip) == 4
    initializers = [i for g in _graphs(model.graph) for i in g.initializer]
    int8 = [i for i in initializers if i.data_type == onnx.TensorProto.INT8 and i.name.endswith("_quantized")]
    # one int8 tensor per distinct weight: 6 shared layer weights + projection + pooler + classifier
    assert len(int8) == 9, [i.name for i in int8]
    # per-channel: each weight has one scale per output column
    scales = {i.name: list(i.dims) for i in initializers if i.name.endswith("_scale")}
    assert any(d and d[0] > 1 for d in scales.values()), scales
    # the weights live in model.onnx.data, page-aligned, inside the export's folder
    external = [i for g in _graphs(graph_only.graph) for i in g.initializer
                if i.data_location == onnx.TensorProto.EXTERNAL]
    assert external and all({e.key: e.value for e in i.external_data}["location"] == "model.onnx.data"
                             and int({e.key: e.value for e in i.external_data}["offset"]) % 4096 == 0
                             for i in external)


@pytest.mark.parametrize("backend", [Backend.ONNX, Backend.EXECUTORCH], ids=str)
def test_int8_word_embeddings_shrink_the_artifact(tiny_checkpoint, tmp_path, backend):
    """A vocabulary-heavy model: the int8 table saves ~3/4 of its bytes and parity still passes."""
    ckpt = tiny_checkpoint("text-classification", "wordpiece", embedding_size=128)
    vocab = load_checkpoint(ckpt).config.vocab_size
    sizes = {}
    for keep in (True, False):
        result = export(ckpt, tmp_path / f"keep{keep}",
                        ExportOptions(backends=(backend,), quant=Quant.INT8, quantize_embeddings=not keep, measure_memory=False))
        [art] = result.artifacts
        assert art.parity.passed and art.parity.sqnr_db >= 20
        assert result.report["options"]["int8_embeddings"] == ([] if keep else ["albert.embeddings.word_embeddings"])
        sizes[keep] = art.bytes
    table = vocab * 128
    saved = sizes[True] - sizes[False]
    # fp32 -> int8 codes + one fp32 scale per row: saves 3 bytes per weight minus 4 bytes per row
    assert saved >= 0.9 * (3 * table - 4 * vocab), (sizes, table)


def _layer_stored_twice(src, dest) -> None:
    """``src`` (.onnx with its Loop over the shared layer) with a second Loop whose body reads its own copy of
    every weight the first reads: identical bytes, stored twice, each copy packed by its own MatMuls."""
    model = onnx.load(str(src))
    [loop] = [n for n in model.graph.node if n.op_type == "Loop"]
    body = next(a.g for a in loop.attribute if a.name == "body")
    read = {i for node in body.node for i in node.input}
    rename = {t.name: t.name + "/again" for t in model.graph.initializer if t.name in read}
    copies = []
    for t in model.graph.initializer:
        if t.name in rename:
            copy = onnx.TensorProto()
            copy.CopyFrom(t)
            copy.name = rename[t.name]
            copies.append(copy)
    second = onnx.NodeProto()
    second.CopyFrom(loop)
    second.name = loop.name + "/again"
    first_out = loop.output[0]
    second.input[2], second.output[0] = first_out, first_out + "/again"
    for node in next(a.g for a in second.attribute if a.name == "body").node:
        node.input[:] = [rename.get(i, i) for i in node.input]
    for node in model.graph.node:
        node.input[:] = [first_out + "/again" if i == first_out else i for i in node.input]
    nodes = list(model.graph.node)
    del model.graph.node[:]
    for node in nodes:
        model.graph.node.append(node)
        if node is loop:
            model.graph.node.append(second)
    model.graph.initializer.extend(copies)
    onnx.save(model, str(dest))


def test_onnx_ram_verdict_follows_what_the_file_stores(wide_export, tmp_path):
    """One stored layer read by one Loop: shared on disk and in RAM. The same layer stored twice for two Loops:
    the size breakdown and the RAM verdict both say NOT, from the same file (the model still loads)."""
    import onnxruntime

    from mobile_export.backends import onnx as onnx_format
    from mobile_export.measure.size import breakdown

    result = wide_export(Backend.ONNX, Quant.INT8)
    good = result.out / "model.onnx"
    shared, why = onnx_format.memory_sharing(good)
    assert shared and "Loop body" in why
    twice = tmp_path / "twice.onnx"
    _layer_stored_twice(good, twice)
    onnxruntime.InferenceSession(str(twice), providers=["CPUExecutionProvider"])
    shared, why = onnx_format.memory_sharing(twice)
    assert not shared and why.startswith("NOT shared in RAM"), why
    summary = json.loads((result.out / "report.json").read_text())["model"]
    size = breakdown(twice, summary, "int8", True)
    assert size["sharing_preserved"] is False and size["memory_sharing_preserved"] is False, size
