"""Parity data files: one example per line, optionally ``label<TAB>text``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import BadInputError

MAX_LINE_CHARS = 100_000


@dataclass(frozen=True)
class ParityData:
    texts: list[str]
    labels: list[int] | None  # class index per text, when every line has a label
    source: str
    blank_lines: int = 0  # skipped


def read_parity_file(path: str | Path, label_names: list[str] | None = None) -> ParityData:
    """Read a parity data file.

    Args:
        path: UTF-8 text, one example per line. A line ``label<TAB>text`` carries a label: a class
            index or one of ``label_names`` (anything else before a tab is an error naming the line).
            Blank lines are skipped and counted; over-long lines are cut.
        label_names: the model's labels by index, to accept names as labels.

    Raises:
        BadInputError: unreadable file, invalid UTF-8, no examples, or labels on only some lines.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise BadInputError(f"cannot read --data {p} ({exc.strerror or exc}); check the path") from None
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise BadInputError(f"--data {p} is not valid UTF-8 (line {line}); re-save it as UTF-8") from None
    by_name = {name: i for i, name in enumerate(label_names or [])}
    texts, labels = [], []
    blank = 0
    for number, line in enumerate(content.splitlines(), 1):
        if not line.strip():
            blank += 1
            continue
        label = None
        if "\t" in line:
            head, rest = line.split("\t", 1)
            if head in by_name:
                label = by_name[head]
            elif head.strip().isdigit() and (not label_names or int(head) < len(label_names)):
                label = int(head)
            else:
                known = f"0..{len(label_names) - 1} or one of {', '.join(label_names)}" if label_names else "a class index"
                raise BadInputError(f"--data {p} line {number}: label '{head[:40]}' is neither a class index nor a "
                                    f"label name (expected {known}); fix the line, or drop the tab for unlabelled text")
            line = rest
        texts.append(line[:MAX_LINE_CHARS])
        labels.append(label)
    if not texts:
        raise BadInputError(f"--data {p} has no examples; put one text per line")
    with_label = sum(x is not None for x in labels)
    if 0 < with_label < len(labels):
        raise BadInputError(f"--data {p}: {with_label} of {len(labels)} lines have a label; label all lines or none")
    return ParityData(texts=texts, labels=labels if with_label else None, source=str(p), blank_lines=blank)
