"""The texts a statically quantized format (the NPU's) calibrates its activation ranges on: the user's
``--calibration`` file, or the demo corpus' training split; never a text the parity check then judges."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from ..core.errors import BadInputError
from ..parity.data import ParityData

CALIBRATION_TEXTS = 64  # ONNX Runtime's MinMax calibration: ranges settle within a few dozen texts
# short prefixes of the first texts join them: a 2-token input has the widest attention and hidden ranges, which
# long texts alone never show (a fill-mask model's empty text measured 14.5 dB without them)
SHORT_PREFIXES = (1, 2, 4, 8)


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


def calibration_texts(
    path: str | None, parity_texts: Iterable[str], data: ParityData | None, count: int = CALIBRATION_TEXTS
) -> list[str]:
    """Up to ``count`` calibration texts from ``path`` (default: the demo's training split), leaving out every
    text of the parity check (``parity_texts``, and ``data``'s, streamed once)."""
    source = _file_texts(Path(path)) if path else _demo_training_texts()
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
        raise BadInputError(
            f"--calibration {path}: no text left that the parity check does not also judge; pass other texts"
        )
    chosen = candidates[: count - len(SHORT_PREFIXES)] if len(candidates) > len(SHORT_PREFIXES) else candidates
    shorts = [t[:n] for t, n in zip(chosen, SHORT_PREFIXES) if t[:n].strip() and t[:n] not in excluded]
    return (chosen + [t for t in shorts if t not in chosen])[:count]
