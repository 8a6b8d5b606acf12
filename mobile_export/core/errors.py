"""One exception hierarchy; each class carries the CLI exit code for its kind of failure."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes of the ``mobile-export`` command (also listed in ``--help`` and docs/cli.md)."""

    OK = 0
    UNEXPECTED = 1
    BAD_INPUT = 2
    PARITY_FAILED = 3
    OVER_BUDGET = 4


class MobileExportError(Exception):
    """Base class. The message is one line: what happened, and how to fix it."""

    exit_code: ExitCode = ExitCode.UNEXPECTED


class BadInputError(MobileExportError):
    """Bad usage or bad input (checkpoint, options, destination)."""

    exit_code = ExitCode.BAD_INPUT


class CheckpointError(BadInputError):
    """The checkpoint is missing, malformed, unsafe or unsupported."""


class UnsupportedError(BadInputError):
    """A requested task / backend / quantization combination is not supported."""


class OutputError(BadInputError):
    """The output destination cannot be used (exists, unwritable, full)."""


class ArtifactLoadError(BadInputError):
    """An artifact given to a command does not load or run in its runtime (exit 2: the file is bad).
    After ``export`` wrote it, the same failure is ours and is raised as ExportFailedError."""


class ExportFailedError(MobileExportError):
    """A converter failed on a checkpoint that passed validation (a bug or a library limitation)."""

    exit_code = ExitCode.UNEXPECTED


class ParityError(MobileExportError):
    """An artifact disagrees with the fp32 PyTorch reference beyond its thresholds."""

    exit_code = ExitCode.PARITY_FAILED


class BudgetError(MobileExportError):
    """An artifact is larger than its size budget."""

    exit_code = ExitCode.OVER_BUDGET


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's message (its type name when empty), cut at ``limit`` characters:
    how a library's multi-line error becomes part of a one-line message."""
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:limit]
