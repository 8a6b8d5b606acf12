"""What the on-device (Java) tokenizer needs to give exactly the ids transformers gives.

transformers runs a Rust ``tokenizers`` pipeline. Its Unicode tables (normalisation, case, character
categories) are whatever its Rust crates were built with; a phone's Java/ICU tables are older or newer.
So we do not ask the phone: we probe the real normalizer and pre-tokenizer here, code point by code
point, and ship the result (``char_table.json``). The Java side then only applies tables:

- ``char_table.json``: for every code point whose character-wise normalisation is not the identity,
  what it becomes (deleted, a space, isolated with spaces as CJK characters are, decomposed by Unicode's
  fixed Hangul syllable arithmetic, or an explicit string);
  for WordPiece also which code points the BERT pre-tokenizer splits off as punctuation; for
  SentencePiece also the grapheme-cluster classes its Precompiled normaliser depends on.
- ``tokenizer.json``: the backend tokenizer exactly as transformers runs it (vocabulary, unigram scores,
  the SentencePiece ``precompiled_charsmap``, added/special tokens).

Text is first made valid Unicode: an unpaired surrogate becomes U+FFFD (the Rust library cannot
take one at all). ``core.text.sanitize`` is that rule; Python parity and the Java tokenizer both apply it.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

from ..core.diskcache import cached_json
from ..core.errors import UnsupportedError

# 2: Hangul syllables as ranges ("hangul"), which a schema-1 reader would leave composed; 3: emoji sequences
# ("pictographic") and Hangul syllable clusters, which a schema-2 reader would split
TABLE_SCHEMA = 3

# Unicode's Hangul syllable decomposition (Unicode 3.12, unchanged since 2.0): 11,172 syllables, 4/5 of
# the table's bytes when written out one by one.
_HANGUL_FIRST, _HANGUL_LAST = 0xAC00, 0xD7A3
_L_BASE, _V_BASE, _T_BASE, _V_COUNT, _T_COUNT = 0x1100, 0x1161, 0x11A7, 21, 28

_MAX_CP = 0x110000

# Normalizers that act on one code point at a time (so a per-code-point table reproduces them).
_CHARWISE = {"NFKD", "NFD", "StripAccents", "Lowercase"}


def _code_points():
    for cp in range(_MAX_CP):
        if not 0xD800 <= cp <= 0xDFFF:
            yield cp


def _ranges(cps: list[int]) -> list[list[int]]:
    """Sorted code points -> [[first, last], ...] runs."""
    out: list[list[int]] = []
    for cp in cps:
        if out and out[-1][1] == cp - 1:
            out[-1][1] = cp
        else:
            out.append([cp, cp])
    return out


def _library_versions() -> dict:
    """What the probed tables depend on besides their spec: the Rust tokenizers' Unicode data."""
    import unicodedata

    import sentencepiece
    import tokenizers

    return {
        "schema": TABLE_SCHEMA,
        "tokenizers": tokenizers.__version__,
        "sentencepiece": sentencepiece.__version__,
        "unicode": unicodedata.unidata_version,
    }


@functools.lru_cache(maxsize=16)
def _charwise_table_cached(spec: str) -> dict:
    return cached_json("charwise", {**_library_versions(), "spec": spec}, lambda: _probe_spec(spec))


def _probe_spec(spec: str) -> dict:
    from tokenizers import normalizers

    steps = json.loads(spec)
    if steps["type"] == "BertNormalizer":
        normalizer: Any = normalizers.BertNormalizer(
            clean_text=steps.get("clean_text", True),
            handle_chinese_chars=steps.get("handle_chinese_chars", True),
            strip_accents=steps.get("strip_accents"),
            lowercase=steps.get("lowercase", True),
        )
    else:
        normalizer = normalizers.Sequence([getattr(normalizers, s["type"])() for s in steps["normalizers"]])
    return _probe(normalizer)


def _charwise_table(spec: dict) -> dict:
    """Per-code-point behaviour of a BertNormalizer spec or a Sequence of character-wise steps (cached)."""
    return copy.deepcopy(_charwise_table_cached(json.dumps(spec, sort_keys=True)))


def hangul_decomposition(cp: int) -> str:
    """The canonical decomposition of Hangul syllable ``cp`` into its two or three conjoining jamo."""
    s = cp - _HANGUL_FIRST
    per_lead = _V_COUNT * _T_COUNT
    lead, vowel, trail = _L_BASE + s // per_lead, _V_BASE + s % per_lead // _T_COUNT, s % _T_COUNT
    return chr(lead) + chr(vowel) + (chr(_T_BASE + trail) if trail else "")


def _probe(normalizer) -> dict:
    """Probe ``normalizer`` on every code point; classify what it does."""
    kinds: dict[str, list[int]] = {"delete": [], "space": [], "isolate": [], "hangul": []}
    mapped: list[list] = []
    for cp in _code_points():
        ch = chr(cp)
        out = normalizer.normalize_str(ch)
        if out == ch:
            continue
        if out == "":
            kinds["delete"].append(cp)
        elif out == " ":
            kinds["space"].append(cp)
        elif out == f" {ch} ":
            kinds["isolate"].append(cp)
        elif _HANGUL_FIRST <= cp <= _HANGUL_LAST and out == hangul_decomposition(cp):
            kinds["hangul"].append(cp)
        else:
            mapped.append([cp, out])
    return {**{k: _ranges(v) for k, v in kinds.items()}, "map": mapped}


@functools.lru_cache(maxsize=1)
def _split_classes() -> dict:
    """Which code points the BERT pre-tokenizer treats as whitespace and as punctuation (cached on disk)."""
    return cached_json("bert-split", _library_versions(), _probe_split_classes)


def _probe_split_classes() -> dict:
    from tokenizers import pre_tokenizers

    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    space, punct = [], []
    for cp in _code_points():
        ch = chr(cp)
        parts = [p for p, _ in pre_tokenizer.pre_tokenize_str(f"a{ch}a")]
        if parts == ["a", "a"]:
            space.append(cp)
        elif parts == ["a", ch, "a"]:
            punct.append(cp)
        elif parts != [f"a{ch}a"]:
            raise UnsupportedError(f"the BERT pre-tokenizer splits U+{cp:04X} in an unexpected way: {parts}")
    return {"whitespace": _ranges(space), "punctuation": _ranges(punct)}


@functools.lru_cache(maxsize=1)
def _byte_level_classes() -> dict:
    """Which code points the byte-level pre-tokenizer's regex reads as letters (``\\p{L}``), numbers (``\\p{N}``)
    and whitespace (``\\s``), in the Rust library's own Unicode tables (cached on disk)."""
    return cached_json("byte-level-classes", _library_versions(), _probe_byte_level_classes)


def _probe_byte_level_classes() -> dict:
    from tokenizers import pre_tokenizers

    pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)

    def spans(text: str) -> list[tuple[int, int]]:
        return [span for _, span in pre_tokenizer.pre_tokenize_str(text)]

    letters, numbers, spaces = [], [], []
    for cp in _code_points():
        ch = chr(cp)
        if spans(f"a{ch}") == [(0, 2)]:  # a letter run goes on through it
            letters.append(cp)
        elif spans(f"0{ch}") == [(0, 2)]:
            numbers.append(cp)
        elif spans(f"!{ch}a")[0] == (0, 1):  # neither, and it ends a run of other characters: whitespace
            spaces.append(cp)
    return {"letters": _ranges(letters), "numbers": _ranges(numbers), "spaces": _ranges(spaces)}


@functools.lru_cache(maxsize=1)
def _grapheme_classes() -> dict:
    """Grapheme cluster classes as the Rust tokenizers' Precompiled normaliser segments (cached on disk)."""
    return cached_json("graphemes", _library_versions(), _probe_grapheme_classes)


def _precompiled(rules: str):
    """A tokenizers Precompiled normaliser whose charsmap holds only ``rules`` (SentencePiece's rule TSV)."""
    import io
    import tempfile
    from pathlib import Path

    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2
    from tokenizers import normalizers

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rules.tsv"
        path.write_text(rules)
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(["abc def"] * 10),
            model_writer=model,
            vocab_size=12,
            normalization_rule_tsv=str(path),
            add_dummy_prefix=False,
            remove_extra_whitespaces=False,
            hard_vocab_limit=False,
            minloglevel=2,
        )
    proto = sentencepiece_model_pb2.ModelProto()  # type: ignore[attr-defined]  # generated protobuf module, no stubs
    proto.ParseFromString(model.getvalue())
    return normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap)


def _maps_every_code_point():
    """A Precompiled normaliser that maps every non-ASCII code point to "a" (counts clusters; see below)."""
    return _precompiled("".join(f"{cp:X}\t61\n" for cp in _code_points() if cp >= 0x80))


def _probe_grapheme_classes() -> dict:
    """Cluster classes from the Rust library's own segmentation (not a regex engine with other Unicode data).

    Precompiled replaces a whole grapheme of under six UTF-8 bytes by the mapping of its first key and maps a
    longer one char by char, so which characters vanish shows where the boundaries fall: ``marks`` maps only
    "a" -> "b" and U+0301 -> "X"; ``everything`` maps every non-ASCII code point to "a".
    """
    marks = _precompiled("61\t62\n301\t58\n")
    everything = _maps_every_code_point()
    extend, prepend, control, pictographic = [], [], [], []
    for cp in _code_points():
        ch = chr(cp)
        joins = marks.normalize_str("a" + ch) == "b"  # one cluster: ch dropped with the rest of it
        if joins:
            extend.append(cp)
        if marks.normalize_str(ch + "a\u0301\u0301") == ch + "bXX":  # one cluster of >= 6 bytes: char by char
            prepend.append(cp)
        if marks.normalize_str(ch + "\u0301\u0301") == ch + "X":  # the marks cluster apart from ch
            control.append(cp)
        # (C) ZWJ ch U+0301 is one cluster of >= 6 bytes (four "a") only if ch continues an emoji sequence
        if not joins and len(everything.normalize_str("\u00a9\u200d" + ch + "\u0301")) == 4:
            pictographic.append(cp)
    return {
        "extend": _ranges(extend),
        "prepend": _ranges(prepend),
        "control": _ranges(control),
        "pictographic": _ranges(pictographic),
    }


def _check_added_tokens(spec: dict) -> None:
    for tok in spec.get("added_tokens", []):
        if tok.get("normalized") or tok.get("single_word"):
            raise UnsupportedError(
                f"added token {tok['content']!r} is normalized or single_word, which the on-device tokenizer "
                "does not reproduce; remove it from the tokenizer or export without the app assets"
            )


def on_device_spec(tokenizer) -> tuple[dict, dict]:
    """(tokenizer.json dict, char_table dict) for ``tokenizer``; UnsupportedError if Java cannot match it."""
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    # the truncation and padding of the Python tokenizer's last call, not the tokenizer's own: written as they were,
    # the file depended on which texts the export had tokenized last; the app and ``run`` set both per call
    spec["truncation"] = spec["padding"] = None
    _check_added_tokens(spec)
    model = spec.get("model") or {}
    norm = spec.get("normalizer") or {}
    table: dict = {"schema_version": TABLE_SCHEMA}
    if model.get("type") == "WordPiece":
        if norm.get("type") != "BertNormalizer" or (spec.get("pre_tokenizer") or {}).get("type") != "BertPreTokenizer":
            raise UnsupportedError(
                "a WordPiece tokenizer must use BertNormalizer and BertPreTokenizer "
                "(as BertTokenizer does) for the on-device tokenizer"
            )
        table["normalizer"] = _charwise_table(norm)
        table.update(copy.deepcopy(_split_classes()))
    elif model.get("type") == "Unigram":
        steps = norm.get("normalizers", [norm] if norm else [])
        order = ["Replace", "charwise", "Precompiled"]
        seen: list[str] = []
        for step in steps:
            kind = "charwise" if step["type"] in _CHARWISE else step["type"]
            if kind not in order or (seen and order.index(kind) < order.index(seen[-1])):
                raise UnsupportedError(
                    f"SentencePiece normalizer step {step['type']} (in this order) is not "
                    "reproduced on device; supported: Replace, NFKD/NFD/StripAccents/"
                    "Lowercase, Precompiled, in that order"
                )
            seen.append(kind)
            if kind == "Replace" and "String" not in step["pattern"]:
                raise UnsupportedError("only plain-string Replace normalizers are reproduced on device")
        charwise = [{"type": s["type"]} for s in steps if s["type"] in _CHARWISE]
        table["normalizer"] = _charwise_table({"type": "Sequence", "normalizers": charwise})
        table["graphemes"] = copy.deepcopy(_grapheme_classes())
        pre = spec.get("pre_tokenizer") or {}
        pres = [p["type"] for p in pre.get("pretokenizers", [pre])]
        if pres != ["WhitespaceSplit", "Metaspace"]:
            raise UnsupportedError(
                f"SentencePiece pre-tokenizers {pres} are not reproduced on device "
                "(supported: WhitespaceSplit then Metaspace, as AlbertTokenizer does)"
            )
    elif model.get("type") == "BPE":
        # RoBERTa's byte-level BPE: no normalizer, the ByteLevel pre-tokenizer (its regex on the probed classes,
        # then bytes as characters), merges by rank
        pre = spec.get("pre_tokenizer") or {}
        post = (spec.get("post_processor") or {}).get("type")
        if norm or pre.get("type") != "ByteLevel" or not pre.get("use_regex", True) or model.get("byte_fallback"):
            raise UnsupportedError(
                "a BPE tokenizer must be byte-level (no normalizer, the ByteLevel pre-tokenizer with its regex, "
                "as RobertaTokenizer is) for the on-device tokenizer"
            )
        if post not in ("RobertaProcessing", "TemplateProcessing"):
            raise UnsupportedError(f"a byte-level BPE's post-processor {post} is not reproduced on device")
        table["normalizer"] = {}
        table["byte_level"] = copy.deepcopy(_byte_level_classes())
    else:
        raise UnsupportedError(
            f"tokenizer model {model.get('type')!r} has no on-device implementation (supported: WordPiece, Unigram, "
            "byte-level BPE)"
        )
    return spec, table
