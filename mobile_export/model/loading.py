"""Load a checkpoint of a supported encoder family (``families``: ALBERT, BERT, ELECTRA, DistilBERT, RoBERTa, XLM-R,
CamemBERT; a local Hugging Face folder or a hub id) safely.

Safety rules: safetensors first; a pickle (``pytorch_model.bin``) only through
``torch.load(weights_only=True)``; remote code is never run, and a checkpoint that asks
for it is refused.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import CheckpointError, first_line
from ..core.tasks import TaskSpec, get_task, infer_task, model_class_for
from .families import FAMILIES, Family, family_of

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
TOKENIZER_FILES = ("vocab.txt", "spiece.model", "vocab.json + merges.txt", "sentencepiece.bpe.model")
# each tokenizer kind's files, as a checkpoint ships them (the app's assets copy them)
TOKENIZER_KINDS = {
    "wordpiece": ("vocab.txt",),
    "sentencepiece": ("spiece.model",),
    "bpe": ("vocab.json", "merges.txt"),
    "xlmr": ("sentencepiece.bpe.model",),
    "camembert": ("sentencepiece.bpe.model",),
}
_HUB_PATTERNS = [
    "config.json",
    "*.safetensors",
    "model.safetensors.index.json",
    "spiece.model",
    "vocab.txt",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "vocab.json",  # RoBERTa's byte-level BPE
    "merges.txt",
    "sentencepiece.bpe.model",  # XLM-R's, CamemBERT's
    "modules.json",  # a sentence-transformers folder: its modules and their configs (``sentence``)
    "*/config.json",
    "*_Dense/pytorch_model.bin",  # an older folder's Dense weights (read as weights only; ``projection``)
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
]


@dataclass
class LoadedModel:
    """A checkpoint ready to export.

    Attributes:
        model: the transformers model for ``task``, in eval mode, fp32.
        config: its transformers config (``AlbertConfig``, ``BertConfig``, ...).
        tokenizer: the transformers tokenizer (BertTokenizer for vocab.txt, AlbertTokenizer for spiece.model).
        tokenizer_kind: a key of ``TOKENIZER_KINDS``.
        task: the task spec the model was loaded for.
        source: what the user passed; folder: the local folder read.
        notes: warnings worth putting in the report (e.g. a freshly initialised head).
    """

    model: Any
    config: Any
    tokenizer: Any
    tokenizer_kind: str
    task: TaskSpec
    source: str
    folder: Path
    weights_file: str
    notes: list[str] = field(default_factory=list)
    family: Family = field(default_factory=lambda: FAMILIES["albert"])


def _looks_like_path(source: str) -> bool:
    return (
        (os.sep in source and source.count("/") != 1) or source.startswith((".", "~", os.sep)) or Path(source).exists()
    )


def resolve_folder(source: str | os.PathLike) -> Path:
    """A local folder for ``source``: the folder itself, or a hub snapshot (downloads if allowed)."""
    src = str(source)
    path = Path(src).expanduser()
    if path.is_dir():
        return path
    if path.exists():
        raise CheckpointError(f"'{src}' is a file; pass the checkpoint folder that holds config.json")
    if _looks_like_path(src):
        raise CheckpointError(f"no such checkpoint folder '{src}'; check the path")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=src, allow_patterns=_HUB_PATTERNS))
    except Exception as exc:  # network, auth, missing repo: all one user-facing problem
        first = first_line(exc)
        raise CheckpointError(
            f"could not fetch '{src}' from the Hugging Face Hub ({first}); "
            "download it on a machine with network and pass the local folder"
        ) from None


def read_config_dict(folder: Path) -> dict:
    """The raw config.json, checked for model type and remote-code requests."""
    cfg_path = folder / "config.json"
    if not cfg_path.is_file():
        raise CheckpointError(f"{folder} has no config.json; pass a Hugging Face checkpoint folder")
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{cfg_path} is not valid JSON ({exc}); re-download the checkpoint") from None
    if not isinstance(cfg, dict):
        raise CheckpointError(f"{cfg_path} must hold a JSON object; re-download the checkpoint")
    family = family_of(cfg.get("model_type"))
    _check_config_values(cfg, cfg_path)
    if "auto_map" in cfg or any(folder.glob("*.py")):
        raise CheckpointError(
            f"{folder} asks for custom code (auto_map or .py files), which mobile-export never runs; "
            f"use a checkpoint of the standard transformers {family.name}"
        )
    return cfg


_POSITIVE_INTS = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "num_hidden_groups",
    "inner_group_num",
    "type_vocab_size",
    "dim",  # DistilBERT's names of the same sizes
    "n_layers",
    "n_heads",
    "hidden_dim",
)


def _check_config_values(cfg: dict, cfg_path: Path) -> None:
    """Sizes that make no sense fail here, before any tensor is built."""
    for key in _POSITIVE_INTS:
        value = cfg.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise CheckpointError(f"{cfg_path}: {key} is {value!r}, it must be a positive integer; fix config.json")
    hidden_key = "dim" if "dim" in cfg else "hidden_size"
    heads_key = "n_heads" if "n_heads" in cfg else "num_attention_heads"
    hidden, heads = cfg.get(hidden_key, 4096), cfg.get(heads_key, 64)
    if hidden % heads:
        raise CheckpointError(
            f"{cfg_path}: {hidden_key} {hidden} is not divisible by {heads_key} {heads}; fix config.json"
        )
    layers, groups = cfg.get("num_hidden_layers", 12), cfg.get("num_hidden_groups", 1)
    if groups > layers:
        raise CheckpointError(
            f"{cfg_path}: num_hidden_groups {groups} exceeds num_hidden_layers {layers}; fix config.json"
        )
    if cfg.get("max_position_embeddings", 512) < 2:
        raise CheckpointError(f"{cfg_path}: max_position_embeddings must be >= 2 ([CLS] and [SEP])")


def _weights_file(folder: Path) -> str:
    for name in WEIGHT_FILES:
        if (folder / name).is_file():
            return name
    raise CheckpointError(
        f"{folder} has no weights (looked for {', '.join(WEIGHT_FILES)}); save the model with save_pretrained()"
    )


def _model_type(folder: Path) -> str | None:
    """config.json's model_type, where it can be read (the tokenizer alone does not need one)."""
    try:
        return json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None


def load_tokenizer(folder: Path) -> tuple[Any, str]:
    """The checkpoint's tokenizer and its kind (``TOKENIZER_KINDS``: wordpiece, sentencepiece, bpe, xlmr or
    camembert)."""
    from transformers import (
        AlbertTokenizer,
        BertTokenizer,
        CamembertTokenizer,
        RobertaTokenizer,
        XLMRobertaTokenizer,
    )

    # albert_chinese_* ship vocab.txt and are tokenized with BertTokenizer; English ALBERTs ship spiece.model;
    # RoBERTa's byte-level BPE is vocab.json + merges.txt; XLM-R's SentencePiece (fairseq's ids) is
    # sentencepiece.bpe.model. from_pretrained is required: transformers 5's constructors do not read vocab_file
    # themselves.
    cls: Any
    if (folder / "vocab.txt").is_file():
        cls, kind = BertTokenizer, "wordpiece"
    elif (folder / "spiece.model").is_file():
        cls, kind = AlbertTokenizer, "sentencepiece"
    elif (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
        cls, kind = RobertaTokenizer, "bpe"
    elif _wordpiece_json(folder):  # sentence-transformers 6 saves a WordPiece tokenizer as tokenizer.json only
        cls, kind = BertTokenizer, "wordpiece"
    elif (folder / "sentencepiece.bpe.model").is_file():  # CamemBERT's ids are its own (<s>NOTUSED, ...)
        camembert = _model_type(folder) == "camembert"
        cls, kind = (CamembertTokenizer, "camembert") if camembert else (XLMRobertaTokenizer, "xlmr")
    else:
        raise CheckpointError(
            f"{folder} has no tokenizer (looked for {', '.join(TOKENIZER_FILES)}); "
            "copy the tokenizer files of the base model into the folder"
        )
    try:
        tok = cls.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
    except Exception as exc:
        raise CheckpointError(
            f"cannot read the tokenizer in {folder} ({first_line(exc)}); re-download the tokenizer files"
        ) from None
    return tok, kind


def _wordpiece_json(folder: Path) -> bool:
    """Whether ``folder``'s tokenizer.json holds a WordPiece model (its only tokenizer file, as
    sentence-transformers 6 saves a BERT-family tokenizer)."""
    path = folder / "tokenizer.json"
    if not path.is_file():
        return False
    try:
        model = json.loads(path.read_text(encoding="utf-8")).get("model") or {}
    except (OSError, ValueError):
        return False
    return model.get("type") == "WordPiece"


# Weights a task head may legitimately lack (freshly initialised when fine-tuning starts), in every family.
_HEAD_KEYS = (
    "classifier",
    "qa_outputs",
    "predictions",
    "pooler",
    "sop_classifier",
    "cls.",
    "generator_lm_head",
    "vocab_transform",
    "vocab_layer_norm",
    "vocab_projector",
    "lm_head",
)


_FLOAT_DTYPES = {"F16", "BF16", "F32", "F64"}


def _check_dtypes(folder: Path, weights: str) -> None:
    """Every weight in the safetensors file(s) is floating point (integer buffers like position_ids aside)."""
    from safetensors import safe_open

    files = sorted(folder.glob("model*.safetensors")) if weights.endswith(".json") else [folder / weights]
    for f in files:
        try:
            with safe_open(str(f), framework="pt") as st:
                for key in st.keys():
                    dtype = st.get_slice(key).get_dtype()
                    if dtype not in _FLOAT_DTYPES and not key.endswith(("position_ids", "token_type_ids")):
                        raise CheckpointError(
                            f"weight {key} in {f.name} has dtype {dtype}; model weights must be "
                            "floating point (F32/F16/BF16): the checkpoint is corrupt or not a model"
                        )
        except CheckpointError:
            raise
        except Exception as exc:
            raise CheckpointError(
                f"cannot load the weights {f} ({first_line(exc)}); re-download or re-save the checkpoint"
            ) from None


def _non_finite(model) -> str | None:
    """Name of the first parameter or buffer holding NaN/Inf, or None."""
    import torch

    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            return name
    return None


def load_checkpoint(source: str | os.PathLike, task: str | None = None) -> LoadedModel:
    """Load a checkpoint of a supported family for export.

    Args:
        source: a local Hugging Face folder, or a hub id such as ``albert-base-v2``.
        task: optimum task name; None infers it from ``config.architectures``.

    Returns:
        The model in eval mode with its tokenizer and task.

    Raises:
        CheckpointError: the checkpoint is missing, malformed, unsafe or of no supported family.
        UnsupportedError: the task is not supported.
    """
    folder = resolve_folder(source)
    cfg = read_config_dict(folder)
    family = family_of(cfg.get("model_type"))
    task_name = task or infer_task(cfg.get("architectures"))
    spec = get_task(task_name)
    weights = _weights_file(folder)
    tokenizer, kind = load_tokenizer(folder)

    from transformers import AutoConfig

    try:  # config.json's model_type picks the class (no remote code: refused by read_config_dict)
        config = AutoConfig.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
    except Exception as exc:
        raise CheckpointError(
            f"config.json in {folder} is not a valid {family.name} config ({first_line(exc)})"
        ) from None
    config._attn_implementation = "eager"
    if len(tokenizer) > config.vocab_size:
        raise CheckpointError(
            f"the tokenizer in {folder} has {len(tokenizer)} tokens but the model's vocab_size is "
            f"{config.vocab_size}: ids >= {config.vocab_size} would crash the model; use the tokenizer the "
            "model was trained with"
        )
    if weights.startswith("model.safetensors"):
        _check_dtypes(folder, weights)
    cls: Any = model_class_for(spec.name, family.model_types[0])
    tf_logger = logging.getLogger("transformers.modeling_utils")
    level = tf_logger.level
    tf_logger.setLevel(logging.ERROR)
    try:
        model, info = cls.from_pretrained(
            str(folder),
            config=config,
            local_files_only=True,
            trust_remote_code=False,
            use_safetensors=weights.startswith("model.safetensors"),
            weights_only=True,
            output_loading_info=True,
            attn_implementation="eager",
        )
    except Exception as exc:
        raise CheckpointError(
            f"cannot load the weights {folder / weights} ({first_line(exc)}); re-download or re-save the checkpoint"
        ) from None
    finally:
        tf_logger.setLevel(level)
    model = model.float().eval()
    notes = []
    missing = [k for k in info.get("missing_keys", []) if "position_ids" not in k]
    body = [k for k in missing if not any(h in k for h in _HEAD_KEYS)]
    if body:
        raise CheckpointError(
            f"{folder / weights} lacks {len(body)} encoder weights (e.g. {sorted(body)[0]}): it is not "
            f"a complete {family.name} checkpoint; re-download it or save it with save_pretrained"
        )
    bad = _non_finite(model)
    if bad:
        raise CheckpointError(
            f"{folder / weights} has NaN or Inf values in {bad}: the checkpoint is corrupt; "
            "re-download it or re-train from the last good save"
        )
    if missing:
        notes.append(
            f"{len(missing)} weights were not in the checkpoint and were freshly initialised "
            f"(e.g. {sorted(missing)[0]}); the {spec.name} head is untrained"
        )
    return LoadedModel(
        model=model,
        config=model.config,
        tokenizer=tokenizer,
        tokenizer_kind=kind,
        task=spec,
        source=str(source),
        folder=folder,
        weights_file=weights,
        notes=notes,
        family=family,
    )
