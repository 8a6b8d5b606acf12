"""``mobile-export run OUT_DIR [TEXT ...]``: an export tried on text, without its checkpoint.

Texts come from the arguments, or one per line on stdin (read as they come, so a long stream holds one
line at a time). Question answering takes ``--context`` or ``question<TAB>context`` lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from ..core.choices import DEFAULT_TOP_K, Backend
from ..core.errors import BadInputError
from ..run.folder import open_export
from ..run.predictor import Predictor
from ..run.results import result_json, result_text


def _inputs(texts: list[str], stdin: TextIO, context: str | None, qa: bool) -> Iterator[tuple[str, str | None]]:
    """(text, context) pairs from the arguments, else from stdin's lines."""
    source: Iterable[str] = texts if texts else (line.rstrip("\r\n") for line in stdin)
    seen = False
    for line in source:
        seen = True
        if qa and context is None:
            if "\t" not in line:
                raise BadInputError(
                    "question-answering needs a context: pass --context, or question<TAB>context lines "
                    f"(got {line[:60]!r})"
                )
            question, ctx = line.split("\t", 1)
            yield question, ctx
        else:
            yield line, context
    if not seen:
        raise BadInputError("no text: pass texts as arguments or one per line on stdin")


def run(
    out_dir: str,
    texts: list[str],
    backend: str | None = None,
    as_json: bool = False,
    context: str | None = None,
    top_k: int = DEFAULT_TOP_K,
    threads: int | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Run every artifact of ``out_dir`` (or the one of ``backend``) on the texts and print what the task means."""
    stdout = stdout or sys.stdout
    if top_k < 1:
        raise BadInputError("--top-k must be >= 1")
    folder = open_export(out_dir)
    qa = folder.task.name == "question-answering"
    if context is not None and not qa:
        raise BadInputError(f"--context is for question-answering exports; this one is {folder.task.name}")
    chosen = [folder.artifact(Backend(backend))] if backend else list(folder.artifacts)
    if not texts and stdin is None and sys.stdin.isatty():
        raise BadInputError("no text: pass texts as arguments or one per line on stdin")
    predictors = [Predictor(folder, a, threads=threads) for a in chosen]
    count = 0
    for text, ctx in _inputs(texts, stdin or sys.stdin, context, qa):
        if not as_json:
            print(text if ctx is None or context is not None else f"{text}\t{ctx}", file=stdout)
        for p in predictors:
            result = p.predict(text, ctx, top_k=top_k)
            if as_json:
                line = {
                    "text": text,
                    **({"context": ctx} if ctx is not None else {}),
                    "file": p.artifact.file,
                    "backend": p.backend.value,
                    "task": folder.task.name,
                    "result": result_json(result),
                }
                print(json.dumps(line, ensure_ascii=False), file=stdout)
            else:
                body = result_text(result)
                head = f"  {p.artifact.file} ({p.backend.value}, {p.artifact.quant}):"
                if "\n" in body:
                    print(head + "\n" + "\n".join("    " + b for b in body.splitlines()), file=stdout)
                else:
                    print(f"{head} {body}", file=stdout)
        stdout.flush()
        count += 1
    return count
