"""The texts a statically quantized format (the NPU's) calibrates its activation ranges on: the user's
``--calibration`` file, or by default the demo corpus' training split (Chinese reviews), or built-in English text
when the reviews are mostly unknown tokens to the checkpoint's vocabulary; never a text the parity check judges."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadInputError
from ..parity.data import ParityData

CALIBRATION_TEXTS = 64  # ONNX Runtime's MinMax calibration: ranges settle within a few dozen texts
# short prefixes of the first texts join them: a 2-token input has the widest attention and hidden ranges, which
# long texts alone never show (a fill-mask model's empty text measured 14.5 dB without them)
SHORT_PREFIXES = (1, 2, 4, 8)
# above this share of unknown (or byte-fallback) tokens, calibration texts are not the model's language: ranges
# calibrated on [UNK] runs clip real text (an English WordPiece classifier calibrated on the Chinese reviews, 57%
# unknown, measured 13.6 dB on the HTP); the demo's own vocabulary reads them at 0.2%
MAX_UNKNOWN = 0.05
_BYTE_PIECE = re.compile(r"<0x[0-9A-Fa-f]{2}>")  # SentencePiece's byte fallback: a character the vocabulary lacks


@dataclass(frozen=True)
class Calibration:
    """The chosen calibration texts, where they come from, and the share of their tokens the vocabulary lacks."""

    texts: list[str]
    source: str
    unknown_share: float
    note: str | None = None  # what the export says about the choice (a fallback, or a user file that fits badly)


def _file_texts(path: Path) -> Iterator[str]:
    """The texts of a one-per-line file (a ``label<TAB>`` prefix dropped), blank lines skipped."""
    try:
        f = path.open(encoding="utf-8")
    except OSError as exc:
        raise BadInputError(f"cannot read --calibration {path} ({exc.strerror or exc}); check the path") from None
    with f:
        try:
            for line in f:
                text = line.rstrip("\r\n").split("\t", 1)[-1]
                if text.strip():
                    yield text
        except UnicodeDecodeError:
            raise BadInputError(f"--calibration {path} is not UTF-8 text; save it as UTF-8") from None


def _demo_training_texts() -> Iterator[str]:
    from ..parity.corpus import load_reviews

    yield from (text for text, _ in load_reviews()["train"])


def unknown_share(tokenizer, texts: Iterable[str]) -> float:
    """The share of ``texts``' tokens (specials left out) that ``tokenizer``'s vocabulary lacks: its unknown token,
    a byte-fallback piece, or (byte-level BPE, which has no unknown token) a piece holding part of a character."""
    unk = tokenizer.unk_token_id
    total = unknown = 0
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        total += len(ids)
        unknown += sum(1 for i in ids if i == unk)
        unknown += sum(
            1 for t in tokenizer.convert_ids_to_tokens(ids) if _BYTE_PIECE.fullmatch(t or "") or _partial(tokenizer, t)
        )
    return unknown / total if total else 0.0


def _partial(tokenizer, token: str | None) -> bool:
    """Whether ``token`` alone decodes to an incomplete character (a byte-level piece of a character the vocabulary
    lacks whole: RoBERTa's English vocabulary reads a Chinese character as two or three such pieces)."""
    if not token or "\ufffd" in token:
        return False
    return "\ufffd" in tokenizer.convert_tokens_to_string([token])


def calibration_for(
    path: str | None, parity_texts: Iterable[str], data: ParityData | None, tokenizer, count: int = CALIBRATION_TEXTS
) -> Calibration:
    """The calibration of an export: ``path``'s texts, else the demo's Chinese reviews, else (when those are more
    than ``MAX_UNKNOWN`` unknown tokens to ``tokenizer``) the built-in English text; refused when neither default
    fits the vocabulary."""
    excluded = tuple(parity_texts)
    if path:
        texts = calibration_texts(path, excluded, data, count)
        share = unknown_share(tokenizer, texts)
        note = (
            f"{share:.0%} of the --calibration texts' tokens are unknown to the tokenizer: the NPU file's ranges "
            "may not fit real text; pass text in the model's language"
            if share > MAX_UNKNOWN
            else None
        )
        return Calibration(texts, str(path), share, note)
    from .english import paragraphs

    tried: list[tuple[str, float]] = []
    for source, texts_of in (
        ("the demo's training reviews (Chinese)", _demo_training_texts),
        ("built-in English text", paragraphs),
    ):
        texts = _chosen(texts_of(), excluded, data, count, source)
        share = unknown_share(tokenizer, texts)
        if share <= MAX_UNKNOWN:
            note = None
            if tried:
                note = (
                    f"calibrating the NPU file on {source}: {tried[0][0]} are {tried[0][1]:.0%} unknown tokens to "
                    "this vocabulary (pass --calibration with text in the model's language)"
                )
            return Calibration(texts, source, share, note)
        tried.append((source, share))
    shares = ", ".join(f"{s} {v:.0%}" for s, v in tried)
    raise BadInputError(
        f"the default calibration texts are mostly unknown tokens to this tokenizer ({shares}); pass --calibration "
        "FILE with texts in the model's language"
    )


def calibration_texts(
    path: str | None, parity_texts: Iterable[str], data: ParityData | None, count: int = CALIBRATION_TEXTS
) -> list[str]:
    """Up to ``count`` calibration texts from ``path`` (default: the demo's training split), leaving out every
    text of the parity check (``parity_texts``, and ``data``'s, streamed once)."""
    source = _file_texts(Path(path)) if path else _demo_training_texts()
    return _chosen(source, parity_texts, data, count, f"--calibration {path}")


def _chosen(
    source: Iterable[str], parity_texts: Iterable[str], data: ParityData | None, count: int, name: str
) -> list[str]:
    """Up to ``count`` distinct texts of ``source`` that the parity check does not judge, with short prefixes of
    the first ones."""
    excluded = set(parity_texts)
    candidates: list[str] = []
    for text in source:
        if text not in excluded and text not in candidates:
            candidates.append(text)
        if len(candidates) == 2 * count:  # spares for those the parity data also holds
            break
    if data is not None:
        held = set(candidates)
        found = {text for text, _ in data.items() if text in held}
        candidates = [t for t in candidates if t not in found]
    if not candidates:
        raise BadInputError(f"{name}: no text left that the parity check does not also judge; pass other texts")
    chosen = candidates[: count - len(SHORT_PREFIXES)] if len(candidates) > len(SHORT_PREFIXES) else candidates
    shorts = [t[:n] for t, n in zip(chosen, SHORT_PREFIXES) if t[:n].strip() and t[:n] not in excluded]
    return (chosen + [t for t in shorts if t not in chosen])[:count]
