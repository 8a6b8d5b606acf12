"""A sentence-transformers folder read as its library reads it: ``modules.json`` lists what
``SentenceTransformer.encode`` runs after the transformer (Pooling, an optional Dense projection, Normalize), the
pooling module's config says which pooling, ``sentence_bert_config.json`` the length the model was trained at, and
``config_sentence_transformers.json`` the prompts an app must prepend. Both the layout sentence-transformers 6 writes
(``pooling_mode``, the length in ``tokenizer_config.json``) and the earlier one (a flag per mode,
``sentence_bert_config.json``) are read. Every pooling mode the library has is taken (several at once too), and its
Dense projections; what the export does not take (a module it does not know, modules in another order, pooling that
leaves the prompt out) is refused in one line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.choices import POOLINGS
from ..core.errors import CheckpointError
from ..core.heads import ACTIVATIONS, Projection

MODULES = "modules.json"
TRANSFORMER, POOLING, NORMALIZE, DENSE = "Transformer", "Pooling", "Normalize", "Dense"
# the pooling config's flags before sentence-transformers 6 (it writes ``pooling_mode``: one of POOLINGS, or a list)
POOLING_FLAGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
# the only input and output a Dense module reads and writes in a sentence embedding's pipeline
SENTENCE_EMBEDDING = "sentence_embedding"


@dataclass(frozen=True)
class SentenceModules:
    """What a sentence-transformers folder's modules do after the transformer, as the export takes them."""

    pooling: str  # one of POOLINGS, or several joined by "+"
    normalize: bool
    max_seq_length: int | None  # the length the model was trained at
    prompts: dict[str, str] = field(default_factory=dict)  # name -> text prepended to a text of that kind
    default_prompt_name: str | None = None
    projections: tuple[Projection, ...] = ()  # its Dense modules, in order

    def describe(self) -> str:
        """One line for the export's progress: what was read, from where."""
        dense = "".join(f" + dense {p.in_features}->{p.out_features}" for p in self.projections)
        return f"pooling {self.pooling}{dense}{' + normalize' if self.normalize else ''}, from {MODULES}"

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


def _pooling(folder: Path) -> tuple[str, int | None]:
    """(the --pooling, several joined by "+", the width it pools) of the Pooling module in ``folder``; CheckpointError
    naming a mode the export does not know or a pooling that leaves the prompt's tokens out."""
    where = folder / "config.json"
    config = _json(where)
    mode = config.get("pooling_mode")
    if mode is None:
        modes = [name for key, name in POOLING_FLAGS.items() if config.get(key)] or ["mean"]  # the library's default
    else:
        modes = [mode] if isinstance(mode, str) else list(mode) if isinstance(mode, list) else [repr(mode)]
    unknown = [m for m in modes if m not in POOLINGS]
    if unknown:
        raise CheckpointError(
            f"{where}: {unknown[0]} pooling is not one the export knows ({', '.join(POOLINGS)}); "
            "export the transformer with --pooling MODE, or with none and pool in the app"
        )
    if config.get("include_prompt") is False:
        raise CheckpointError(
            f"{where}: the pooling leaves the prompt's tokens out (include_prompt false), which the export does not "
            "take yet; export with --pooling MODE to pool over every token"
        )
    width = config.get("embedding_dimension", config.get("word_embedding_dimension"))
    return "+".join(modes), int(width) * len(modes) if isinstance(width, int) else None


def _projection(folder: Path, sub: str) -> Projection:
    """The Dense module stored in ``folder / sub``, as the export takes it; CheckpointError for an activation outside
    ``ACTIVATIONS`` (the library itself imports only torch's classes) or a module that is not on the sentence
    embedding."""
    where = folder / sub / "config.json"
    config = _json(where)
    path = str(config.get("activation_function") or "torch.nn.modules.activation.Tanh")
    activation = path.rsplit(".", 1)[-1]
    if not path.startswith("torch.") or activation not in ACTIVATIONS:
        raise CheckpointError(
            f"{where}: activation {path} is not one the export builds ({', '.join(ACTIVATIONS)} of torch.nn); "
            "export the transformer with --pooling and apply the projection in the app"
        )
    names = {
        config.get("module_input_name", SENTENCE_EMBEDDING),
        config.get("module_output_name") or SENTENCE_EMBEDDING,
    }
    if names != {SENTENCE_EMBEDDING}:
        raise CheckpointError(
            f"{where}: the Dense module reads or writes {sorted(names)}; the export takes one on "
            f"the {SENTENCE_EMBEDDING} only"
        )
    try:
        sizes = int(config["in_features"]), int(config["out_features"])
    except (KeyError, TypeError, ValueError):
        raise CheckpointError(f"{where} gives no in_features and out_features; fix it") from None
    return Projection(*sizes, activation, bool(config.get("bias", True)), bool(config.get("use_residual")), sub)


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
            "pass that module's folder with --task feature-extraction --pooling MODE"
        )
    pooling, width, normalize, projections = None, None, False, []
    for kind, sub in kinds[1:]:
        # the order the head computes them in: one pooling, its projections, the normalization
        if kind == POOLING and pooling is None:
            pooling, width = _pooling(folder / sub)
        elif kind == DENSE and pooling is not None and not normalize:
            projection = _projection(folder, sub)
            if width is not None and projection.in_features != width:
                raise CheckpointError(
                    f"{folder / sub}: the Dense module takes {projection.in_features} values "
                    f"and is given {width}; fix its config.json"
                )
            projections.append(projection)
            width = projection.out_features
        elif kind == NORMALIZE and pooling is not None:
            normalize = True
        elif kind in (POOLING, DENSE, NORMALIZE):
            raise CheckpointError(
                f"{path} lists {kind} where the export does not take it (it takes Pooling, then any Dense, then "
                "Normalize); export the transformer with --pooling and finish in the app"
            )
        else:
            raise CheckpointError(
                f"{path} lists a {kind} module, which the export does not take; remove it or export "
                "the transformer with --task feature-extraction --pooling MODE"
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
        pooling,
        normalize,
        int(length) if length else None,
        prompts,
        card.get("default_prompt_name") or None,
        tuple(projections),
    )
