"""``mobile-export run OUT_DIR|FILE [TEXT ...]``: an export (a folder, or one artifact that carries its assets)
tried on text, without its checkpoint.

Texts come from the arguments, or one per line on stdin (read as they come, so a long stream holds one
line at a time). Question answering takes ``--context`` or ``question<TAB>context`` lines. A text that cannot
be run (empty, no context, no [MASK]) is named on stderr and the others run; the command then ends with exit 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from ..core.choices import DEFAULT_TOP_K
from ..backends import Backend
from ..core.errors import BadInputError
from ..run.folder import open_export
from ..run.predictor import Predictor
from ..run.results import Result, result_json, result_text


def _inputs(texts: list[str], stdin: TextIO, context: str | None, qa: bool) -> Iterator[tuple[str, str | None]]:
    """(text, context) pairs from the arguments, else from stdin's lines (a QA line without a context gives the
    line and no context: the predictor names what is missing)."""
    source: Iterable[str] = texts if texts else (line.rstrip("\r\n") for line in stdin)
    for line in source:
        if qa and context is None and "\t" in line:
            question, ctx = line.split("\t", 1)
            yield question, ctx
        else:
            yield line, context


def run(
    out_dir: str,
    texts: list[str],
    backend: str | None = None,
    as_json: bool = False,
    context: str | None = None,
    top_k: int | None = None,
    threads: int | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    prompt: str | None = None,
) -> int:
    """Run every artifact of ``out_dir`` (or the one of ``backend``) on the texts and print what the task means;
    returns how many texts ran. BadInputError (exit 2) at the end when one or more could not run."""
    stdout = stdout or sys.stdout
    if top_k is not None and top_k < 1:
        raise BadInputError("--top-k must be >= 1")
    if threads is not None and threads < 1:
        raise BadInputError("--threads must be >= 1 (leave it out for the runtime's default)")
    folder = open_export(out_dir)
    qa = folder.task.name == "question-answering"
    if context is not None and not qa:
        raise BadInputError(f"--context is for question-answering exports; this one is {folder.task.name}")
    if top_k is not None and folder.task.name != "fill-mask":
        raise BadInputError(f"--top-k is for fill-mask exports; this one is {folder.task.name}")
    chosen = [folder.artifact(Backend(backend))] if backend else list(folder.artifacts)
    if not texts and stdin is None and sys.stdin.isatty():
        raise BadInputError("no text: pass texts as arguments or one per line on stdin")
    predictors = [Predictor(folder, a, threads=threads) for a in chosen]
    prefix = _prompt_text(predictors[0], prompt) if prompt is not None else ""
    count = bad = 0
    for n, (text, ctx) in enumerate(_inputs(texts, stdin or sys.stdin, context, qa), start=1):
        try:
            if qa and ctx is None:
                raise BadInputError("question-answering needs a context: pass --context, or question<TAB>context lines")
            kept, whole = predictors[0].tokens(prefix + text, ctx)
            results = [(p, p.predict(prefix + text, ctx, top_k=top_k or DEFAULT_TOP_K)) for p in predictors]
        except BadInputError as exc:  # this text, not the command: say which and go on
            print(f"mobile-export: text {n} ({text[:40]!r}): {exc}", file=sys.stderr, flush=True)
            bad += 1
            continue
        _print(results, text, ctx, context, (kept, whole), folder.task.name, as_json, stdout)
        count += 1
    if bad:
        raise BadInputError(f"{bad} of {bad + count} texts could not be run (each is named above)")
    if not count:
        raise BadInputError("no text: pass texts as arguments or one per line on stdin")
    return count


def _prompt_text(predictor: Predictor, name: str) -> str:
    """The text of the prompt ``name`` the export names; BadInputError naming the ones it has."""
    if predictor.task.name != "feature-extraction":
        raise BadInputError(f"--prompt is for feature-extraction exports; this one is {predictor.task.name}")
    prompts = predictor.prompts
    if name not in prompts:
        raise BadInputError(f"--prompt {name}: not one this export names; it names: {', '.join(prompts) or 'none'}")
    return prompts[name]


def _print(
    results: list[tuple[Predictor, Result]],
    text: str,
    ctx: str | None,
    context: str | None,
    tokens: tuple[int, int],
    task: str,
    as_json: bool,
    stdout: TextIO,
) -> None:
    """One text's results: a JSON object per artifact, or the text and each artifact's lines; a text longer than
    the export's max length says it was cut (``truncated``: the tokens seen and the text's)."""
    kept, whole = tokens
    cut = {"truncated": {"tokens_seen": kept, "tokens": whole}} if kept < whole else {}
    if not as_json:
        print(text if ctx is None or context is not None else f"{text}\t{ctx}", file=stdout)
        if cut:
            print(f"  (cut to the export's max length: {kept} of {whole} tokens)", file=stdout)
    for p, result in results:
        if as_json:
            line = {
                "text": text,
                **({"context": ctx} if ctx is not None else {}),
                "file": p.artifact.file,
                "backend": p.backend.value,
                "task": task,
                **cut,
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
