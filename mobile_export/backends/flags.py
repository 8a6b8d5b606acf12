"""How a format declares its own export options: a frozen dataclass (its package's ``Options``) whose fields carry
their command-line flag (``option``); the registry gathers them for ``ExportOptions`` and the parser."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import Field, field
from typing import Any

FLAG = "mobile_export.flag"  # the field metadata key of an option's flag


def option(
    default: Any,
    help: str,
    *,
    choices: Sequence[Any] | None = None,
    type: Callable[[str], Any] | None = None,
    metavar: str | None = None,
) -> Any:
    """A format's option: a dataclass field with its default and the ``--flag`` that sets it (help, choices)."""
    return field(default=default, metadata={FLAG: {"help": help, "choices": choices, "type": type, "metavar": metavar}})


def flag_name(name: str) -> str:
    """The command-line flag of the option ``name`` (``pte_entry`` -> ``--pte-entry``)."""
    return "--" + name.replace("_", "-")


def argparse_kwargs(f: Field) -> dict[str, Any]:
    """What ``ArgumentParser.add_argument`` takes for the option ``f`` (its default left to the format: None)."""
    spec = f.metadata.get(FLAG)
    if spec is None:
        raise TypeError(f"option {f.name} declares no flag; declare it with backends.flags.option")
    kwargs: dict[str, Any] = {
        "help": f"{spec['help']} (default: {f.default})" if f.default is not None else spec["help"]
    }
    if spec["choices"] is not None:
        kwargs["choices"] = list(spec["choices"])
    if spec["type"] is not None:
        kwargs["type"] = spec["type"]
    elif spec["choices"] is not None and spec["choices"]:
        kwargs["type"] = type(spec["choices"][0])
    if spec["metavar"] is not None:
        kwargs["metavar"] = spec["metavar"]
    return kwargs
