"""The .onnx export: the torch exporter, ALBERT's shared layer as a Loop body, int8/int4 weights."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.choices import DEFAULT_INT4_GROUP_SIZE, Quant
from ..base import ExportStats, Plan
from .layout import externalize

if TYPE_CHECKING:  # imported where an export runs: the format's runner is used without torch
    import torch

OPSET = 18


def onnx_program(module, args, dynamic_shapes, input_names: list[str], output_names: list[str]) -> Any:
    """``module`` through the torch exporter (dynamo, opset ``OPSET``, optimized, weights inline)."""
    import torch

    prog = torch.onnx.export(
        module,
        args,
        dynamo=True,
        dynamic_shapes=dynamic_shapes,
        opset_version=OPSET,
        input_names=input_names,
        output_names=output_names,
        external_data=False,
        optimize=True,
        verbose=False,
    )
    if prog is None:
        raise RuntimeError("torch.onnx.export returned no program")
    return prog


def _to_onnx(module, args, dynamic_shapes, input_names, output_names):
    from quantize.onnx_dynamic import dedupe_initializers

    model = onnx_program(module, args, dynamic_shapes, input_names, output_names).model_proto
    dedupe_initializers(model)
    if model.functions:
        raise RuntimeError(f"the exporter left local functions {[f.name for f in model.functions]}")
    return model


def _prefixed(graph, prefix: str, keep: dict[str, str]):
    """Rename every node, value and initializer of ``graph`` with ``prefix``, except the names in ``keep``."""

    def name(n: str) -> str:
        return n if not n else keep.get(n, prefix + n)

    for node in graph.node:
        node.name = prefix + node.name
        node.input[:] = [name(n) for n in node.input]
        node.output[:] = [name(n) for n in node.output]
    for t in graph.initializer:
        t.name = name(t.name)
    for v in [*graph.input, *graph.output, *graph.value_info]:
        v.name = name(v.name)
    return graph


LOOP_NODE = "encoder/shared_layer_loop"


def _layer_loop_model(wrapper, plan: Plan, layers: int):
    """One ONNX graph: embed -> Loop(layers) over ALBERT's shared layer group -> head. The layer's
    weights are stored once (in the main graph, see ``layout.hoist_loop_weights``) and read by the Loop
    body, so ONNX Runtime builds and prepacks that layer once."""
    import torch
    from onnx import TensorProto, helper

    from ...model.stages import cut, head_inputs, stage_dynamic_shapes

    embed, groups, head = cut(wrapper.model, tuple(wrapper.output_names), batch_one=False)
    layer = groups[0]
    example, dynamic_shapes, inputs = plan.example(), plan.dynamic_shapes(), plan.signature.inputs
    dims = dynamic_shapes[inputs[0]]
    stage = stage_dynamic_shapes(dims[0], dims[1], batch_one=False)
    with torch.no_grad():
        hidden, mask = embed(*example)
    outputs = list(wrapper.output_names)
    e = _to_onnx(embed, example, dynamic_shapes, list(inputs), ["hidden", "mask"])
    m = _to_onnx(
        layer, (hidden, mask), {"hidden": stage["hidden"], "mask": stage["mask"]}, ["hidden", "mask"], ["hidden_out"]
    )
    extra = head_inputs(head)  # a phone head may read model inputs: wired to the graph's own inputs
    h = _to_onnx(
        head,
        (hidden, *[example[i] for i in extra]),
        {"hidden": stage["hidden"], **({"extra": stage["input"]} if extra else {})},
        ["hidden", *[inputs[i] for i in extra]],
        outputs,
    )
    ge = _prefixed(e.graph, "embed/", {n: n for n in inputs})
    gl = _prefixed(
        m.graph, "layer/", {"hidden": "layer/hidden_in", "mask": "embed/mask", "hidden_out": "layer/hidden_out"}
    )
    keep = {n: n for n in [*outputs, *[inputs[i] for i in extra]]}
    gh = _prefixed(h.graph, "head/", {"hidden": "encoder/hidden", **keep})
    body = helper.make_graph(
        [*gl.node, helper.make_node("Identity", ["layer/cond_in"], ["layer/cond_out"], name="layer/cond")],
        "albert_shared_layer",
        [
            helper.make_tensor_value_info("layer/iteration", TensorProto.INT64, []),
            helper.make_tensor_value_info("layer/cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("layer/hidden_in", TensorProto.FLOAT, None),
        ],
        [
            helper.make_tensor_value_info("layer/cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("layer/hidden_out", TensorProto.FLOAT, None),
        ],
        initializer=list(gl.initializer),
    )
    loop = helper.make_node(
        "Loop", ["encoder/layers", "encoder/true", "embed/hidden"], ["encoder/hidden"], name=LOOP_NODE, body=body
    )
    graph = helper.make_graph(
        [*ge.node, loop, *gh.node],
        "albert",
        list(ge.input),
        list(gh.output),
        initializer=[
            *ge.initializer,
            *gh.initializer,
            helper.make_tensor("encoder/layers", TensorProto.INT64, [], [layers]),
            helper.make_tensor("encoder/true", TensorProto.BOOL, [], [True]),
        ],
    )
    model = helper.make_model(graph, opset_imports=list(e.opset_import), producer_name="mobile-export")
    model.ir_version = e.ir_version
    return model


def export(wrapper: torch.nn.Module, plan: Plan, dest: Path, progress) -> ExportStats:
    """Export ``wrapper`` to ``dest`` (.onnx with its weights in ``dest`` + ``.data``) as ``plan`` says; returns
    stats.

    ALBERT with one layer group (every released checkpoint) is written as a Loop over the shared layer; several
    layer groups, and a family of distinct layers (BERT, ELECTRA, DistilBERT), unrolled. ``plan.keep``: the
    Linears (names in ``wrapper.model``) an int8 export leaves fp32, recorded in the file's metadata. int4:
    ``plan.options.int4_kernel`` decides how ONNX Runtime computes.
    """
    import onnx

    from quantize.onnx_dynamic import prepare_file, quantize_file

    fp32_path = dest.with_name(dest.name + ".fp32.tmp")
    model: Any = getattr(wrapper, "model")
    config = model.config
    output_names: tuple[str, ...] = getattr(wrapper, "output_names")
    from ...model.families import family_of

    loop = family_of(config.model_type).shared and config.num_hidden_groups == 1
    try:
        with progress.step("onnx: torch.onnx.export (dynamo)" + (", layer loop" if loop else "")):
            if loop:
                onnx.save(_layer_loop_model(wrapper, plan, config.num_hidden_layers), str(fp32_path))
            else:
                from ...model.stages import with_inputs

                inputs = list(plan.signature.inputs)
                module = with_inputs(wrapper, plan.signature.inputs)
                prog = onnx_program(module, plan.example(), plan.dynamic_shapes(), inputs, list(output_names))
                prog.save(str(fp32_path), external_data=False)
        int4: dict = {}
        if plan.quant is Quant.INT8:
            with progress.step("onnx: int8 dynamic quantization (ONNX Runtime)"):
                kept = [model.get_submodule(n).weight.detach().numpy() for n in plan.keep]
                q = quantize_file(fp32_path, dest, keep=kept)
        elif plan.quant is Quant.INT4:
            from quantize.onnx_nbits import quantize_file_int4

            group, kernel = plan.group_size or DEFAULT_INT4_GROUP_SIZE, plan.options.int4_kernel
            with progress.step(f"onnx: int4 block-wise weights, groups of {group}, {kernel} kernel"):
                q, int4 = quantize_file_int4(fp32_path, dest, group, kernel)
        else:
            q = prepare_file(fp32_path, dest)
        # weight MatMuls quantized / left fp32 are read from the written file (inspection.coverage)
        stats: ExportStats = {
            "activation_matmuls": q.activation_matmuls,
            "deduplicated": q.deduplicated_initializers,
            "layer_loop": loop,
            **({"int4": int4} if int4 else {}),
        }
    finally:
        if fp32_path.exists():
            os.unlink(fp32_path)
    stats["shared_table_bytes"], stats["opset"] = externalize(dest, OPSET)
    onnx.checker.check_model(str(dest), full_check=True)
    return stats
