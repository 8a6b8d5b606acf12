"""A sentence-transformers folder read as its library reads it: ``modules.json`` lists what
``SentenceTransformer.encode`` runs after the transformer (Pooling, an optional Dense projection, Normalize), the
pooling module's config says which pooling, ``sentence_bert_config.json`` the length the model was trained at, and
``config_sentence_transformers.json`` the prompts an app must prepend. Both the layout sentence-transformers 6 writes
(``pooling_mode``, the length in ``tokenizer_config.json``) and the earlier one (a flag per mode,
``sentence_bert_config.json``) are read. What the export does not take yet (a Dense
projection, a pooling other than [CLS] and mean, a module it does not know) is refused in one line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import CheckpointError

MODULES = "modules.json"
TRANSFORMER, POOLING, NORMALIZE, DENSE = "Transformer", "Pooling", "Normalize", "Dense"
# the pooling config's mode (sentence-transformers >= 6 writes ``pooling_mode``; earlier versions one flag per mode)
# and the --pooling each is; None: not taken yet
POOLINGS = {
    "cls": "cls",
    "mean": "mean",
    "max": None,
    "mean_sqrt_len_tokens": None,
    "weightedmean": None,
    "lasttoken": None,
}
POOLING_MODES = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_max_tokens": None,
    "pooling_mode_mean_sqrt_len_tokens": None,
    "pooling_mode_weightedmean_tokens": None,
    "pooling_mode_lasttoken": None,
}


@dataclass(frozen=True)
class SentenceModules:
    """What a sentence-transformers folder's modules do after the transformer, as the export takes them."""

    pooling: str  # cls | mean
    normalize: bool
    max_seq_length: int | None  # the length the model was trained at
    prompts: dict[str, str] = field(default_factory=dict)  # name -> text prepended to a text of that kind
    default_prompt_name: str | None = None

    def describe(self) -> str:
        """One line for the export's progress: what was read, from where."""
        return f"pooling {self.pooling}{' + normalize' if self.normalize else ''}, from {MODULES}"

    def record(self) -> dict[str, Any]:
        """What the manifest's head records beside the pooling: where it came from, and the prompts for the app."""
        out: dict[str, Any] = {"from": MODULES}
        if self.prompts:
            out["prompts"] = dict(self.prompts)
            out["default_prompt_name"] = self.default_prompt_name
        return out


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path} cannot be read as JSON ({exc}); fix or remove it") from None


def _kind(entry: Any, where: Path) -> tuple[str, str]:
    """(the module's class name, its folder) of one ``modules.json`` entry."""
    if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
        raise CheckpointError(f"{where} lists a module without a type ({entry!r}); fix {MODULES}")
    return entry["type"].rsplit(".", 1)[-1], str(entry.get("path") or "")


def _pooling(folder: Path) -> str:
    """The --pooling of the Pooling module in ``folder``; CheckpointError naming a mode the export does not take."""
    config = _json(folder / "config.json")
    if isinstance(config.get("pooling_mode"), str):
        name = config["pooling_mode"]
        chosen = POOLINGS.get(name)  # None: a mode not taken yet, or one this version does not know
    else:
        flags = [key for key in POOLING_MODES if config.get(key)]
        if len(flags) != 1:
            raise CheckpointError(f"{folder / 'config.json'} sets {len(flags)} pooling modes; the export takes one")
        name, chosen = flags[0].removeprefix("pooling_mode_"), POOLING_MODES[flags[0]]
    if chosen is None:
        raise CheckpointError(
            f"{folder / 'config.json'}: {name} pooling is not exported yet (cls and mean are); export the transformer "
            "with --pooling cls|mean and pool in the app"
        )
    return chosen


def read_sentence_modules(folder: Path) -> SentenceModules | None:
    """The modules of the sentence-transformers folder ``folder``, None when it is not one (no ``modules.json``)."""
    path = folder / MODULES
    if not path.is_file():
        return None
    entries = _json(path)
    if not isinstance(entries, list):
        raise CheckpointError(f"{path} is not a list of modules; fix it")
    kinds = [_kind(e, path) for e in entries]
    if not kinds or kinds[0][0] != TRANSFORMER or kinds[0][1] not in ("", "."):
        raise CheckpointError(
            f"{path}: the export reads a folder whose first module is its Transformer, stored at the folder's top; "
            "pass that module's folder with --task feature-extraction --pooling cls|mean"
        )
    pooling, normalize = None, False
    for kind, sub in kinds[1:]:
        if kind == POOLING and pooling is None:
            pooling = _pooling(folder / sub)
        elif kind == NORMALIZE:
            normalize = True
        elif kind == DENSE:
            raise CheckpointError(
                f"{path} lists a Dense projection ({sub}), which the export does not take yet; export the transformer "
                "with --pooling and apply the projection in the app"
            )
        else:
            raise CheckpointError(
                f"{path} lists a {kind} module, which the export does not take; remove it or export "
                "the transformer with --task feature-extraction --pooling cls|mean"
            )
    if pooling is None:
        return None  # token embeddings (no Pooling module): the transformer's own output
    bert, tok = folder / "sentence_bert_config.json", folder / "tokenizer_config.json"
    length = _json(bert).get("max_seq_length") if bert.is_file() else None  # sentence-transformers < 6
    if length is None and tok.is_file():  # >= 6: the tokenizer's (transformers' "unset" is a huge sentinel)
        limit = _json(tok).get("model_max_length")
        length = limit if isinstance(limit, int) and limit <= 1_000_000 else None
    st = folder / "config_sentence_transformers.json"
    card = _json(st) if st.is_file() else {}
    prompts = {str(k): str(v) for k, v in (card.get("prompts") or {}).items() if v}
    return SentenceModules(
        pooling, normalize, int(length) if length else None, prompts, card.get("default_prompt_name") or None
    )
