"""The .tflite: the model at one fixed sequence length with int32 inputs named as MediaPipe's text tasks expect,
converted by Google's ``litert-torch`` and quantized by ``litert-quantizer``; its weights kept inside the flatbuffer
and equal buffers stored once."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.choices import Quant
from ..base import ExportStats, Plan
from ..fixed import per_token_outputs
from . import flatbuffer
from .metadata import INPUTS, META_KEY
from .keep import KEEP_RECIPE, PER_CHANNEL_SCOPE, mark_kept, mark_per_channel
from .unfold import _builtin, unfold

if TYPE_CHECKING:
    import torch

# litert-quantizer's recipe per precision. int8: dynamic range (int8 per-channel weights, activations quantized per
# row (token) at run time: XNNPACK's int8 kernels), measured against weight-only int8 (weights dequantized, float
# math) in BENCHMARKS "LiteRT": the dynamic recipe is the one whose latency beats fp32's on the phone's CPU.
RECIPES = {Quant.INT8: "dynamic_wi8_afp32", Quant.INT4: "dynamic_wi4_afp32"}
BLOCKS = (32, 64, 128, 256)  # the 4-bit block sizes litert-quantizer offers (``QuantGranularity``)


def export(wrapper: torch.nn.Module, plan: Plan, dest: Path, progress: Any) -> ExportStats:
    """Write ``wrapper`` to ``dest`` as a .tflite at ``plan.max_len`` tokens (batch 1), quantized as ``plan.quant``."""
    import torch

    from ...model.stages import with_inputs
    from .inputs import Int32Inputs

    module = with_inputs(wrapper, plan.signature.inputs)
    traced = Int32Inputs(module, plan.signature.inputs).eval()
    length = plan.max_len
    example = {name: torch.zeros(1, length, dtype=torch.int32) for name in INPUTS}
    example["mask"] += 1
    outputs = list(getattr(wrapper, "output_names"))
    per_token = per_token_outputs(module, plan)
    with progress.step(f"litert: litert-torch convert at {length} tokens (fixed), int32 inputs"):
        with _quiet():
            import litert_torch

            edge = litert_torch.convert(traced, sample_kwargs=example)
        fp32 = dest.with_name(dest.name + ".float.tmp")
        try:
            with _quiet():
                edge.export(str(fp32))
            model = flatbuffer.read(fp32.read_bytes(), fp32.name)
            unfolded = unfold(model, _linear_weights(wrapper))  # LayerNorms' scales out of the weights again
            marked = mark_kept(model, [_weight(wrapper, name) for name in plan.keep])
            block = plan.group_size if plan.quant is Quant.INT4 and plan.group_size in BLOCKS else None
            per_row = mark_per_channel(model, block) if block else 0
            if len(plan.keep) > marked:
                raise RuntimeError(f"found {marked} matmuls for the {len(plan.keep)} Linears to keep fp32")
            fp32.write_bytes(flatbuffer.write(model))
            recipe = RECIPES.get(plan.quant)
            if recipe is not None:
                kept = f", {len(plan.keep)} Linears kept fp32" if plan.keep else ""
                with progress.step(f"litert: {recipe} (litert-quantizer){kept}"):
                    data = _quantized(fp32, recipe, bool(plan.keep), block)
            else:
                data = fp32.read_bytes()
        finally:
            fp32.unlink(missing_ok=True)
    model = flatbuffer.read(data, dest.name)
    asymmetric = _asymmetric_inputs(model)
    saved = flatbuffer.dedupe(model)
    names = flatbuffer.short_names(model)
    zero_scales = flatbuffer.nonzero_scales(model)
    facts = {
        "sequence_length": length,
        "inputs": list(INPUTS),
        "input_dtype": "int32",
        "outputs": outputs,
        "per_token_outputs": [n for n, t in zip(outputs, per_token) if t],
        "quantization": recipe or "none (fp32)",
        "weights": f"blockwise_{block}" if block else "channelwise" if recipe else "float",
        **({"per_channel_ops": per_row} if per_row else {}),
        **({"asymmetric_input_ops": asymmetric} if asymmetric else {}),
        "deduplicated_bytes": saved,
        "tensor_name_bytes_saved": names,
        **({"subnormal_scales_raised": zero_scales} if zero_scales else {}),
        "unfolded": unfolded,
        **({"kept_fp32": list(plan.keep), "kept_fp32_ops": marked} if plan.keep else {}),
    }
    flatbuffer.add_entry(model, META_KEY, json.dumps(facts).encode())
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.write_bytes(flatbuffer.write(model))
    os.replace(tmp, dest)
    return {"litert": facts}


def _linear_weights(wrapper: torch.nn.Module) -> list[Any]:
    """The fp32 weight of every Linear of the model (a tied one once) as ``[out, in]``."""
    import torch

    linears = {id(m.weight): m.weight for m in wrapper.modules() if isinstance(m, torch.nn.Linear)}
    return [w.detach().float().numpy() for w in linears.values()]


def _weight(wrapper: torch.nn.Module, name: str) -> Any:
    """The fp32 weight of the model's Linear ``name`` (a repair's, by name in the model) as ``[out, in]``."""
    model = getattr(wrapper, "model")
    return model.get_submodule(name).weight.detach().float().numpy()


def _quantized(path: Path, recipe: str, keep: bool = False, block: int | None = None) -> bytes:
    """The model at ``path`` quantized by litert-quantizer's ``recipe``, as bytes. ``keep``: the matmuls
    ``keep.mark_kept`` marked left float; ``block``: 4-bit weights in blocks of that many input values (as the other
    formats' int4 groups), those ``keep.mark_per_channel`` marked one scale per row (a later recipe entry wins)."""
    import copy

    from litert_quantizer import quantizer
    from litert_quantizer import recipe as recipes

    entries = list(getattr(recipes, recipe)())
    if block is not None:
        per_row = copy.deepcopy(entries[-1])
        per_row["regex"] = f"^{PER_CHANNEL_SCOPE}/"
        for entry in entries:
            entry["op_config"]["weight_tensor_config"]["granularity"] = f"BLOCKWISE_{block}"
        entries.append(per_row)
    entries += [KEEP_RECIPE] if keep else []
    with _quiet():
        q = quantizer.Quantizer(str(path))
        q.load_quantization_recipe(entries)
        result = q.quantize()
    if result.quantized_model is None:
        raise RuntimeError(f"litert-quantizer's {recipe} returned no model")
    return bytes(result.quantized_model)


def _asymmetric_inputs(model: Any) -> int:
    """Ask every fully-connected op on integer weights to quantize its input per row with a zero point, in place;
    returns how many. XNNPACK's dynamic kernels (the phone's delegate) do so whatever the flag says; LiteRT's own
    kernels (an interpreter without the delegate) otherwise take a symmetric range per row, which wastes half of it
    on a GELU's output (MiniLM: 19-21 dB against 22-25)."""
    from ai_edge_litert import schema_py_generated as schema

    graph = model.subgraphs[0]
    integer = {schema.TensorType.INT8, schema.TensorType.INT4}
    changed = 0
    for op in graph.operators:
        if _builtin(model, op) != schema.BuiltinOperator.FULLY_CONNECTED:
            continue
        if len(op.inputs) > 1 and op.inputs[1] >= 0 and graph.tensors[op.inputs[1]].type in integer:
            op.builtinOptions.asymmetricQuantizeInputs = True
            changed += 1
    return changed


@contextlib.contextmanager
def _quiet() -> Any:
    """The converter's and quantizer's progress prints kept off our progress lines (errors still raise)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield
