"""Parity data files: one example per line, optionally ``label<TAB>text``, read as a stream."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadInputError

MAX_LINE_CHARS = 100_000


@dataclass(frozen=True)
class ParityData:
    """A checked parity data file. Its texts are read again from the file each time they are needed
    (``items``), so a validation set of any size costs no memory."""

    path: Path
    count: int  # examples (non-blank lines)
    labelled: bool  # every line has a label
    source: str
    label_names: tuple[str, ...] = ()
    blank_lines: int = 0  # skipped

    def items(self) -> Iterator[tuple[str, int | None]]:
        """(text, class index or None) of every example, in file order."""
        for _, text, label in _examples(self.path, self.label_names):
            yield text, label


def _lines(p: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 file, one line at a time; invalid UTF-8 is an error naming the line."""
    try:
        f = p.open("rb")
    except OSError as exc:
        raise BadInputError(f"cannot read --data {p} ({exc.strerror or exc}); check the path") from None
    with f:
        try:
            for number, raw in enumerate(f, 1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise BadInputError(f"--data {p} is not valid UTF-8 (line {number}); re-save it as UTF-8") from None
                for line in text.splitlines() or [""]:
                    yield number, line
        except OSError as exc:
            raise BadInputError(f"cannot read --data {p} ({exc.strerror or exc}); check the path") from None


def _examples(
    p: Path, label_names: tuple[str, ...], blank: list[int] | None = None
) -> Iterator[tuple[int, str, int | None]]:
    """(line number, text, label) of every non-blank line; blank lines are counted into ``blank[0]``."""
    by_name = {name: i for i, name in enumerate(label_names)}
    for number, line in _lines(p):
        if not line.strip():
            if blank is not None:
                blank[0] += 1
            continue
        label = None
        if "\t" in line:
            head, rest = line.split("\t", 1)
            if head in by_name:
                label = by_name[head]
            elif head.strip().isdigit() and (not label_names or int(head) < len(label_names)):
                label = int(head)
            else:
                known = (
                    f"0..{len(label_names) - 1} or one of {', '.join(label_names)}" if label_names else "a class index"
                )
                raise BadInputError(
                    f"--data {p} line {number}: label '{head[:40]}' is neither a class index nor a "
                    f"label name (expected {known}); fix the line, or drop the tab for unlabelled text"
                )
            line = rest
        yield number, line[:MAX_LINE_CHARS], label


def read_parity_file(path: str | Path, label_names: list[str] | None = None) -> ParityData:
    """Check a parity data file in one streaming pass; its texts are not kept.

    Args:
        path: UTF-8 text, one example per line. A line ``label<TAB>text`` carries a label: a class
            index or one of ``label_names`` (anything else before a tab is an error naming the line).
            Blank lines are skipped and counted; over-long lines are cut.
        label_names: the model's labels by index, to accept names as labels.

    Raises:
        BadInputError: unreadable file, invalid UTF-8, no examples, or labels on only some lines.
    """
    p = Path(path)
    names = tuple(label_names or ())
    count = with_label = 0
    blank = [0]
    for _, _, label in _examples(p, names, blank):  # one pass: the texts are not kept
        count += 1
        with_label += label is not None
    if not count:
        raise BadInputError(f"--data {p} has no examples; put one text per line")
    if 0 < with_label < count:
        raise BadInputError(f"--data {p}: {with_label} of {count} lines have a label; label all lines or none")
    return ParityData(
        path=p, count=count, labelled=bool(with_label), source=str(p), label_names=names, blank_lines=blank[0]
    )
