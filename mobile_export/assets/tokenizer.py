"""What an app needs besides the model: tokenizer assets and labels."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..core.errors import CheckpointError
from ..core.files import CHAR_TABLE, TOKENIZER_JSON, TOKENIZER_SETTINGS
from ..core.fsutil import write_json

SETTINGS_SCHEMA = 1


def _normalizer(tokenizer) -> dict:
    """The normalizer transformers really runs (the backend's JSON), flattened to a dict by type."""
    try:
        spec = json.loads(tokenizer.backend_tokenizer.to_str()).get("normalizer") or {}
    except AttributeError:
        return {}
    found: dict = {}
    stack = [spec]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "type" in node:
                found.setdefault(node["type"], node)
            stack.extend(node.get("normalizers", []) or [])
    return found


def tokenizer_settings(tokenizer, kind: str, max_length: int) -> dict:
    """Settings an on-device tokenizer needs to reproduce ``tokenizer`` exactly."""
    special = {}
    for role in ("cls", "sep", "pad", "unk", "mask"):
        token = getattr(tokenizer, f"{role}_token", None)
        if token is not None:
            special[role] = {"token": str(token), "id": int(tokenizer.convert_tokens_to_ids(str(token)))}
    settings = {
        "schema_version": SETTINGS_SCHEMA,
        "kind": kind,
        "max_length": int(max_length),
        "special_tokens": special,
        "model_input_names": ["input_ids", "attention_mask", "token_type_ids"],
        "vocab_size": int(len(tokenizer)),
    }
    init = tokenizer.init_kwargs
    if kind == "wordpiece":
        bert = _normalizer(tokenizer).get("BertNormalizer", {})
        lower = bool(bert.get("lowercase", init.get("do_lower_case", True)))
        strip = bert.get("strip_accents", init.get("strip_accents"))
        settings.update(
            {
                "vocab_file": "vocab.txt",
                "do_lower_case": lower,
                # None means "strip accents when lower-casing", as in BERT's BasicTokenizer.
                "strip_accents": lower if strip is None else bool(strip),
                "tokenize_chinese_chars": bool(
                    bert.get("handle_chinese_chars", init.get("tokenize_chinese_chars", True))
                ),
                "clean_text": bool(bert.get("clean_text", True)),
                "continuing_subword_prefix": "##",
                "max_input_chars_per_word": 100,
            }
        )
    elif kind == "sentencepiece":
        settings.update(
            {
                "vocab_file": "spiece.model",
                "do_lower_case": bool(init.get("do_lower_case", True)),
                "keep_accents": bool(init.get("keep_accents", False)),
                "remove_space": bool(init.get("remove_space", True)),
            }
        )
    else:  # RoBERTa's byte-level BPE, XLM-R's SentencePiece: tokenizer.json holds all of it (no file copied)
        if kind == "bpe":
            settings.update(
                {
                    "add_prefix_space": bool(getattr(tokenizer, "add_prefix_space", False)),
                    "trim_offsets": bool(getattr(tokenizer, "trim_offsets", True)),
                }
            )
    return settings


def _write_vocabulary(tokenizer, path: Path) -> None:
    """``tokenizer``'s vocabulary as a vocab.txt: line i holds the token of id i."""
    by_id = {i: token for token, i in tokenizer.get_vocab().items()}
    if sorted(by_id) != list(range(len(by_id))):
        raise CheckpointError(
            f"the tokenizer's ids are not 0..{len(by_id) - 1}, which a vocab.txt cannot hold; add the model's vocab.txt"
        )
    path.write_text("".join(by_id[i] + "\n" for i in range(len(by_id))), encoding="utf-8")


def write_tokenizer_assets(tokenizer, kind: str, checkpoint_folder: Path, dest: Path, max_length: int) -> list[str]:
    """Write everything the on-device tokenizer needs into ``dest``; returns the file names.

    ``tokenizer_settings.json`` (kind, max length, special tokens, flags), the vocabulary file as the
    checkpoint has it (WordPiece, ALBERT's SentencePiece; the others' is all in tokenizer.json), and for the
    Java tokenizer ``tokenizer.json`` (the backend pipeline transformers
    runs) and ``char_table.json`` (its Unicode behaviour, probed; see :mod:`mobile_export.assets.ondevice`).
    """
    from .ondevice import on_device_spec

    dest.mkdir(parents=True, exist_ok=True)
    settings = tokenizer_settings(tokenizer, kind, max_length)
    spec, table = on_device_spec(tokenizer)
    settings["files"] = {"tokenizer": TOKENIZER_JSON, "char_table": CHAR_TABLE}
    copied = [settings["vocab_file"]] if "vocab_file" in settings else []
    for name in copied:
        if (checkpoint_folder / name).is_file():
            shutil.copyfile(checkpoint_folder / name, dest / name)
        else:  # a WordPiece tokenizer saved as tokenizer.json alone: its vocabulary, one token per id
            _write_vocabulary(tokenizer, dest / name)
    write_json(dest / TOKENIZER_JSON, spec, compact=True)
    write_json(dest / CHAR_TABLE, table, compact=True)
    write_json(dest / TOKENIZER_SETTINGS, settings)
    return [*copied, TOKENIZER_JSON, CHAR_TABLE, TOKENIZER_SETTINGS]


def write_tokenizer(source: str | os.PathLike, out: str | os.PathLike, max_seq_len: int | None = None) -> list[str]:
    """Write just the tokenizer assets an app needs (no weights are loaded).

    Args:
        source: checkpoint folder or hub id.
        out: destination folder (created; files in it are replaced atomically).
        max_seq_len: truncation length recorded in the settings; default max_position_embeddings.

    Returns:
        The names written into ``out``.
    """
    from ..core.fsutil import make_staging, prepare_destination, publish, remove_staging
    from ..core.signature import resolve_max_len
    from ..model.families import longest_input
    from ..model.loading import load_tokenizer, read_config_dict, resolve_folder

    folder = resolve_folder(source)
    config = read_config_dict(folder)
    max_len = resolve_max_len(longest_input(config), max_seq_len)
    tokenizer, kind = load_tokenizer(folder)
    out = Path(out)
    prepare_destination(out, overwrite=True)
    staging = make_staging(out)
    try:
        names = write_tokenizer_assets(tokenizer, kind, folder, staging, max_len)
        publish(staging, out, names)
    finally:
        remove_staging(staging)
    return names
