"""The documents are true of the code: the CLI page lists exactly the parser's commands, arguments and flags; the
Python API page names every public name; the README stays one screen; every relative link resolves."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from mobile_export.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 200


def _commands(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    """Each command's documented arguments: its flags (the first spelling) and its positionals, help and hidden
    aliases left out."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, command in sub.choices.items():
        out[name] = {
            (a.option_strings[0] if a.option_strings else a.dest)
            for a in command._actions
            if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS
        }
    return out


def _documented(text: str) -> dict[str, set[str]]:
    """Each ``## command`` section of the CLI page and the arguments its tables' first column names."""
    out = {}
    for section in text.split("\n## ")[1:]:
        name, body = section.split("\n", 1)
        out[name.strip()] = set(re.findall(r"^\| `([^`]+)`", body, flags=re.M))
    return out


def _mismatch(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """What the page and the parser disagree on, as lines (empty when they agree)."""
    want, have = _commands(parser), _documented(text)
    found = [f"command {c} not documented" for c in sorted(set(want) - set(have))]
    found += [f"command {c} documented, not in the parser" for c in sorted(set(have) - set(want))]
    for c in sorted(set(want) & set(have)):
        found += [f"{c}: {a} not documented" for a in sorted(want[c] - have[c])]
        found += [f"{c}: {a} documented, not in the parser" for a in sorted(have[c] - want[c])]
    return found


def test_the_cli_page_lists_every_command_and_flag_of_the_parser():
    """docs/cli.md against ``build_parser()``: the same commands, each with the same arguments (both ways)."""
    assert _mismatch(build_parser(), (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")) == []


def test_the_cli_page_check_catches_a_stale_page():
    """A flag the parser lost, one it gained and a command the page lacks are each named."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    stale = text.replace("| `--quiet` |", "| `--silent` |", 1).replace("\n## list\n", "\n## lists\n")
    found = _mismatch(build_parser(), stale)
    assert "export: --quiet not documented" in found and "export: --silent documented, not in the parser" in found
    assert "command list not documented" in found and "command lists documented, not in the parser" in found


def test_the_python_api_page_names_every_public_name():
    """docs/python-api.md gives each name of ``mobile_export.__all__`` a heading of its own."""
    import mobile_export

    text = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    headed = set(re.findall(r"^#+ `(\w+)", text, flags=re.M))
    assert sorted(set(mobile_export.__all__) - headed) == []
    assert sorted(headed - set(mobile_export.__all__) - {"mobile_export"}) == []


def test_the_readme_is_one_screen():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md is {lines} lines; move detail to docs/"


def _pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    """A link to a file of the repository (``[x](docs/cli.md)``, with or without ``#anchor``) names one that exists."""
    text = page.read_text(encoding="utf-8")
    broken = [target for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
              if "://" not in target and not (page.parent / target).exists()]
    assert broken == []


def _artifact_rows(text: str) -> dict[str, list[str]]:
    """The CLI summary's artifact rows in ``text``: file -> bytes, max|diff|, SQNR, agreement, accuracy (the
    host-dependent ms/text left out)."""
    rows = re.findall(r"^(model\.\w+)\s+int8\s+([\d,]+)\s+([\d.e-]+)\s+([\d.]+)\s+([\d.]+%)\s+([\d.]+% \([\d.]+%\))",
                      text, flags=re.M)
    return {r[0]: list(r[1:]) for r in rows}


def _near(quoted: str, measured: str) -> bool:
    """Byte counts equal within 0.1% (the bundle's card records the --data path, whose length varies)."""
    a, b = int(quoted.replace(",", "")), int(measured.replace(",", ""))
    return abs(a - b) <= 0.001 * b


@pytest.mark.full
def test_the_readme_quotes_what_make_demo_prints(demo_int8):
    """The README's demo table is the summary `make demo`'s export prints (error, agreement and accuracy exactly,
    bytes within the bundle's path), and BENCHMARKS' headline gives the same bytes and SQNR: a change that moves them
    updates both."""
    from mobile_export.reports import summary

    result, _, _ = demo_int8
    printed = _artifact_rows(summary(result.report))
    quoted = _artifact_rows((ROOT / "README.md").read_text(encoding="utf-8"))
    assert set(printed) == set(quoted) == {"model.pte", "model.onnx"}
    for name, (size, *figures) in printed.items():
        assert quoted[name][1:] == figures and _near(quoted[name][0], size), (name, quoted[name], printed[name])
    headline = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8").split("\n## Log", 1)[0]
    for name, (size, _, sqnr, *_) in printed.items():
        row = re.search(rf"^\| `{re.escape(name)}` int8[^|]*\| ([\d,]+) \| ([\d.]+) dB \|", headline, flags=re.M)
        assert row and _near(row.group(1), size) and row.group(2) == sqnr, name
