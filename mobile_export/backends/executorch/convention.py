"""How an app calls the exported .pte: the layer-loop program's methods, recorded in the manifest."""

from __future__ import annotations

from typing import Any

from ..base import ExportStats

INT4_TABLE_OP = "quantized_decomposed::embedding_4bit"

# The .pte's calling convention (recorded in the manifest): ALBERT's layers share weights, so the
# program holds the shared layer once as its own method and the caller runs it once per layer.
EMBED_METHOD = "embed"
HEAD_METHOD = "head"
SCHEDULE_METHOD = "layer_schedule"
HEAD_INPUTS_METHOD = "head_inputs"  # only when the head reads model inputs (heads: top-k, mean pooling)
GROUP_METHOD = "layer_group_{}"
CALLING_CONVENTION_NAME = "albert-layer-loop/1"
CALLING_CONVENTION: dict[str, Any] = {
    "name": CALLING_CONVENTION_NAME,
    "methods": {
        EMBED_METHOD: "(input_ids, attention_mask, token_type_ids) int64 [1, S] -> (hidden float32 [1, S, 1, H], "
        "mask float32 [1, 1, S] additive)",
        GROUP_METHOD.format("G"): "(hidden, mask) -> hidden: layer group G (ALBERT's shared layer)",
        HEAD_METHOD: "(hidden, *the model inputs head_inputs() names) -> the task's outputs",
        SCHEDULE_METHOD: "() -> one int per layer: which layer_group_G runs at that depth",
        HEAD_INPUTS_METHOD: "() -> indices among (input_ids, attention_mask, token_type_ids) of the inputs head "
        "reads after hidden; absent: none",
    },
    "loop": "hidden, mask = embed(ids, mask, types); for g in layer_schedule(): hidden = layer_group_g(hidden, mask); "
    "outputs = head(hidden, *[(ids, mask, types)[i] for i in head_inputs()])",
    "why": "every method's XNNPACK weights are packed once when the method loads: one method per shared layer "
    "keeps one packed copy in RAM however many layers run",
}


FORWARD_METHOD = "forward"
FORWARD_CONVENTION: dict[str, Any] = {
    "name": "single-method/1",
    "methods": {
        FORWARD_METHOD: "(input_ids, attention_mask, token_type_ids) int64 [1, S] -> the task's outputs",
    },
    "loop": "outputs = forward(input_ids, attention_mask, token_type_ids)",
    "why": "what ExecuTorch's tools call (executor_runner, benchmark apps, optimum-executorch); XNNPACK packs "
    "the shared layer's weights once per layer unless the runtime's XNNPACK weights cache is on",
}


def entry_methods(entry: str, loop_methods: list[str]) -> list[str]:
    """The methods a program of ``--pte-entry entry`` holds."""
    return {"loop": loop_methods, "forward": [FORWARD_METHOD], "both": [*loop_methods, FORWARD_METHOD]}[entry]


def usage(stats: ExportStats) -> dict[str, Any]:
    """How an app loads and calls this export's .pte (recorded in manifest.json)."""
    entry = stats.get("entry", "loop")
    conventions = {"loop": CALLING_CONVENTION, "forward": FORWARD_CONVENTION}
    return {
        "load": "memory-mapped: Android Module.load(path, Module.LOAD_MODE_MMAP); the file must be on disk",
        "entry": entry,
        # the convention an app should use; "both" also offers forward (FORWARD_CONVENTION) for other tools
        "calling_convention": conventions["forward" if entry == "forward" else "loop"],
        **({"also": FORWARD_CONVENTION} if entry == "both" else {}),
        "layer_schedule": stats.get("layer_schedule"),
        **({"inputs": stats["inputs"]} if "inputs" in stats else {}),  # embed's (or forward's): else all three
        **(
            {
                "kernels": f"{INT4_TABLE_OP} (ExecuTorch's quantized kernel library: executorch-android links it; "
                "a custom runtime build must keep it)"
            }
            if stats.get("int4")
            else {}
        ),
    }
