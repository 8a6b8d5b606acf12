"""The NPU file: the model at one fixed sequence length, its attention mask bounded, through the torch exporter,
its weights deduplicated, then statically quantized by ONNX Runtime's QNN recipe (QDQ, uint8 per-channel weights,
uint16 or uint8 activations) with ranges calibrated on text."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...core.errors import BadInputError
from ..base import ExportStats, Plan
from ..fixed import pad, per_token_outputs
from .diagnosis import reference_path
from .table import row_scaled, tied_decoder_once
from .htp import MASKED
from .metadata import META_KEY
from .ranges import HEADROOM, REPAIRED, quantize_with_headroom, tied

if TYPE_CHECKING:
    import torch


def _word_table(model: Any) -> str | None:
    """The initializer the Gather of ``input_ids`` reads (the word-embedding table), None without one."""
    inits = {i.name for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Gather" and node.input[1] == "input_ids" and node.input[0] in inits:
            return node.input[0]
    return None


def _own_biases(model: Any) -> None:
    """Give each MatMul's bias (a 1-D initializer an Add puts on a MatMul's output, which QNN's preprocessing fuses
    into a Gemm) its own copy where a node of another kind reads the same vector, in place. Equal vectors merge in
    ``dedupe_initializers`` (a tiny model's zero biases: ELECTRA's embedding projection's with its attention's), and
    QNN's quantizer then quantizes the shared vector as an activation, not as the Gemm's int32 bias: the Gemm's
    per-channel weight is left a lone DequantizeLinear the HTP refuses. A bias only MatMuls read (ALBERT's shared
    layer at every depth) stays one."""
    from onnx import numpy_helper

    vectors = {i.name: i for i in model.graph.initializer if len(i.dims) == 1}
    matmul_outputs = {o for n in model.graph.node if n.op_type == "MatMul" for o in n.output}

    def is_bias(node: Any) -> bool:
        return node.op_type == "Add" and bool(set(node.input) & matmul_outputs)

    kinds: dict[str, set[bool]] = {}
    for node in model.graph.node:
        for name in node.input:
            if name in vectors:
                kinds.setdefault(name, set()).add(is_bias(node))
    for node in model.graph.node:
        if not is_bias(node):
            continue
        for k, name in enumerate(node.input):
            if name in vectors and len(kinds[name]) > 1:  # read as a bias and as something else
                copy = numpy_helper.from_array(numpy_helper.to_array(vectors[name]), f"{name}.{node.name}")
                model.graph.initializer.append(copy)
                node.input[k] = copy.name


class _Calibration:
    """ONNX Runtime's CalibrationDataReader over the plan's calibration texts."""

    def __init__(self, plan: Plan) -> None:
        def feeds(ids: tuple[int, ...], types: tuple[int, ...]) -> dict[str, np.ndarray]:
            row = np.asarray([ids], np.int64)
            return {"input_ids": row, "attention_mask": np.ones_like(row), "token_type_ids": np.asarray([types])}

        inputs = plan.signature.inputs
        self.rows = iter([pad(feeds(ids, types), plan.max_len, inputs) for ids, types in plan.calibration])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.rows, None)


def export(wrapper: torch.nn.Module, plan: Plan, dest: Path, progress) -> ExportStats:
    """Write ``wrapper`` to ``dest`` as a QDQ model for the HTP at ``plan.max_len`` tokens (batch 1), with a graph
    for each shorter length of ``--npu-lengths`` over the same stored weights (``graphs``)."""
    import dataclasses

    from .graphs import attach
    from .options import parse_lengths

    lengths = parse_lengths(plan.options.npu_lengths)
    longer = [n for n in lengths if n > plan.max_len]
    if longer:
        raise BadInputError(
            f"--npu-lengths {','.join(map(str, longer))} is longer than the file's {plan.max_len} tokens; pass "
            f"--max-seq-len {max(longer)} or shorter lengths"
        )
    stats = _lower(wrapper, plan, dest, progress)
    shorter = {n: dest.with_name(f"{dest.name}.{n}.tmp") for n in lengths if n < plan.max_len}
    try:
        for n, path in shorter.items():
            if plan.calibrate is None:
                raise ValueError("a graph per length needs the calibration texts at each length (Plan.calibrate)")
            cut = plan.calibrate(n)
            _lower(wrapper, dataclasses.replace(plan, max_len=n, calibration=cut), path, progress)
            reference_path(path).unlink(missing_ok=True)
        if shorter:
            with progress.step(f"qnn: graphs for {', '.join(map(str, shorter))} tokens over the same weights"):
                stats["qnn"].update(attach(dest, shorter))
    finally:
        for path in shorter.values():
            path.unlink(missing_ok=True)
            reference_path(path).unlink(missing_ok=True)
    return stats


def _lower(wrapper: torch.nn.Module, plan: Plan, dest: Path, progress) -> ExportStats:
    """The QDQ model of ``wrapper`` at ``plan.max_len`` tokens in ``dest``, the float model it quantized beside it."""
    import onnx
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config, qnn_preprocess_model

    from quantize.onnx_dynamic import dedupe_initializers

    from ...model.reference import example_inputs
    from ...model.stages import with_inputs
    from ..onnx.lowering import OPSET, onnx_program

    if not plan.calibration:
        raise ValueError("the NPU file needs calibration texts (Plan.calibration)")
    bits = plan.options.qnn_activations
    bounded = copy.copy(wrapper)  # the same modules, a mask the fixed-point range can hold
    setattr(bounded, "masked", MASKED)
    module = with_inputs(bounded, plan.signature.inputs)
    inputs, outputs = list(plan.signature.inputs), list(getattr(wrapper, "output_names"))
    fp32, pre = dest.with_name(dest.name + ".float.tmp"), dest.with_name(dest.name + ".pre.tmp")
    try:
        with progress.step(f"qnn: torch.onnx.export at {plan.max_len} tokens (fixed), mask {MASKED:g}"):
            example = example_inputs(1, plan.max_len, plan.vocab_size)[: len(inputs)]
            model: Any = onnx_program(module, example, None, inputs, outputs).model_proto
            deduplicated = dedupe_initializers(model)  # one weight per shared layer, no per-layer Transpose
            _own_biases(model)
            per_token = per_token_outputs(module, plan)
            act = QuantType.QUInt16 if bits == 16 else QuantType.QUInt8
            # the word table at 8 bits, as the CPU files store it; at 16-bit activations its rows rescaled by a
            # 16-bit scale each (``table``: the HTP's Gather takes one scale; w8a8 holds no 16-bit tensor); else at
            # the activations' precision (QNN's default: the table is the Gather's data)
            table = _word_table(model) if plan.int8_table else None
            overrides = {table: [{"quant_type": QuantType.QUInt8}]} if table else {}
            per_row = bool(table) and bits == 16
            if table and per_row:
                overrides[row_scaled(model, table)] = [{"quant_type": QuantType.QUInt16}]
            onnx.save(model, str(fp32))
        table_bits = 8 if table else bits
        with progress.step(f"qnn: static w8a{bits} quantization on {len(plan.calibration)} texts (ONNX Runtime)"):
            source = pre if qnn_preprocess_model(str(fp32), str(pre)) else fp32
            config = get_qnn_qdq_config(
                str(source),
                _Calibration(plan),
                activation_type=act,
                weight_type=QuantType.QUInt8,
                per_channel=True,
                init_overrides=overrides or None,
            )
            wider = tied(onnx.load(str(source)), plan.widen) if plan.widen else set()
            quantize_with_headroom(source, dest, config, HEADROOM[bits], {n: REPAIRED[bits] for n in wider})
        os.replace(source, reference_path(dest))  # the model quantized, for the diagnosis per tensor
    finally:
        for f in (fp32, pre):
            if f.exists():
                os.unlink(f)
    model = onnx.load(str(dest))
    once = tied_decoder_once(model) if per_row else 0  # a tied decoder reads the lookup's codes: the table once
    facts = {
        "sequence_length": plan.max_len,
        "activations": f"uint{bits}",
        "weights": "uint8 per channel",
        "word_table": "uint8, a uint16 scale per row" if per_row else f"uint{table_bits} per tensor",
        "mask": MASKED,
        "per_token_outputs": [n for n, t in zip(outputs, per_token) if t],
        "calibration_texts": len(plan.calibration),
        "calibration_source": plan.calibration_source,
        "range_headroom": HEADROOM[bits],
        **({"widened": {"tensors": list(plan.widen), "headroom": REPAIRED[bits]}} if plan.widen else {}),
        **({"tied_table": f"stored once: the decoder reads the lookup's codes ({once:,} B saved)"} if once else {}),
    }
    entry = model.metadata_props.add()
    entry.key, entry.value = META_KEY, json.dumps(facts)
    tmp = dest.with_name(dest.name + ".tmp")
    onnx.save(model, str(tmp))
    os.replace(tmp, dest)
    onnx.checker.check_model(str(dest), full_check=True)
    return {"deduplicated": deduplicated, "opset": OPSET, "qnn": facts}
