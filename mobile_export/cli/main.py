"""``mobile-export``: a thin shell over the library. Parse -> options -> library call -> render -> exit code."""

from __future__ import annotations

import contextlib

import os
import sys
import traceback
from pathlib import Path
from typing import NoReturn

from ..core.errors import ExitCode, MobileExportError, first_line
from ..core.interrupts import latched_interrupts
from .parser import build_parser


def _thresholds(args, quant):
    from ..core.thresholds import Thresholds

    return Thresholds.from_overrides(
        quant,
        max_abs_diff=args.max_abs_diff,
        min_agreement=args.min_agreement,
        min_sqnr_db=args.min_sqnr,
        min_example_sqnr_db=args.min_example_sqnr,
        min_cosine=args.min_cosine,
        min_retrieval=args.min_retrieval,
    )


def _options(kind: type, args, **converted):
    """``kind`` (ExportOptions, ParityOptions) from the parsed arguments: every field an option of the same name
    gives, and ``converted`` for the options the command line spells or types otherwise."""
    from dataclasses import fields

    same = {f.name: getattr(args, f.name) for f in fields(kind) if hasattr(args, f.name)}
    return kind(**{**same, **converted})


def _cmd_parity(args) -> int:
    from ..core.choices import Quant
    from ..core.progress import Progress, Silent
    from ..exporter.check import parity_check
    from ..exporter.options import ParityOptions
    from ..reports import summary

    quant = Quant(args.quant) if args.quant else None
    options = _options(
        ParityOptions,
        args,
        quant=quant,
        thresholds=_thresholds(args, quant or Quant.INT8),
        cpus=tuple(c.strip() for c in args.cpus.split(",") if c.strip()),
    )
    report = parity_check(
        args.checkpoint, args.artifacts, out=args.out, options=options, progress=Silent() if args.quiet else Progress()
    )
    print(summary(report))
    if args.out:
        print(f"wrote report.json, report.md, report.html to {args.out}")
    return int(ExitCode.OK)


def _cmd_bench(args) -> int:
    from ..core.errors import BadInputError
    from ..measure.bench import bench, table

    try:
        seqs = [int(x) for x in args.seq_lens.split(",") if x.strip()]
        threads = [int(x) for x in args.threads.split(",") if x.strip()]
    except ValueError:
        raise BadInputError("--seq-lens and --threads take comma-separated integers, e.g. 16,64,128") from None
    if not seqs or not threads or min(seqs) < 2 or min(threads) < 1 or args.runs < 1:
        raise BadInputError("--seq-lens must be >= 2, --threads and --runs >= 1")
    result = bench(args.artifacts, args.checkpoint, seqs, threads, args.runs, say=lambda m: print(m, file=sys.stderr))
    print(table(result))
    if args.json:
        from ..core.fsutil import write_json

        write_json(Path(args.json), result)
    return int(ExitCode.OK)


def _cmd_compare(args) -> int:
    from ..core.errors import BadInputError
    from ..core.fsutil import write_bytes, write_json
    from ..reports.compare import compare, markdown

    try:
        seqs = [int(x) for x in args.seq_lens.split(",") if x.strip()]
    except ValueError:
        raise BadInputError("--seq-lens takes comma-separated integers, e.g. 128,512") from None
    if not seqs or min(seqs) < 2 or args.threads < 1 or args.runs < 1:
        raise BadInputError("--seq-lens must be >= 2, --threads and --runs >= 1")
    result = compare(args.folders, seqs, args.threads, args.runs, say=lambda m: print(m, file=sys.stderr))
    table = markdown(result)
    print(table)
    if args.json:
        write_json(Path(args.json), result)
    if args.md:
        write_bytes(Path(args.md), (table + "\n").encode("utf-8"))
    return int(ExitCode.OK)


def _cmd_report(args) -> int:
    from ..reports import regenerate

    names = regenerate(Path(args.folder))
    print(f"wrote {', '.join(names)} to {args.folder}")
    return int(ExitCode.OK)


def _cmd_export(args) -> int:
    from .. import backends
    from ..backends import Backend
    from ..core.choices import Quant, Repair
    from ..core.progress import Progress, Silent
    from ..exporter.options import ExportOptions
    from ..exporter.pipeline import export
    from ..reports import summary

    quant = Quant(args.quant)
    options = _options(
        ExportOptions,
        args,
        backends=tuple(Backend(b) for b in args.backend) if args.backend else backends.default_backends(),
        quant=quant,
        thresholds=_thresholds(args, quant),
        measure_memory=not args.no_memory,
        bundle=not args.no_bundle,
        quantize_embeddings=not args.keep_fp32_embeddings,
        int4_group_size=args.group_size,
        repair=Repair(args.repair),
        # the formats' own flags (their packages' options): those given, by name
        format_options={n: getattr(args, n) for n in backends.option_fields() if getattr(args, n) is not None},
    )
    result = export(args.checkpoint, args.out, options, progress=Silent() if args.quiet else Progress())
    print(summary(result.report))
    return int(ExitCode.OK)


def _cmd_tokenizer(args) -> int:
    from ..assets.tokenizer import write_tokenizer

    names = write_tokenizer(args.checkpoint, args.out, args.max_seq_len)
    print(f"wrote {', '.join(names)} to {args.out}")
    return int(ExitCode.OK)


def _cmd_size(args) -> int:
    import json

    from ..core.choices import Quant
    from ..measure.size_text import format_entry
    from ..reports.size import size_report

    entries = size_report(
        args.artifacts,
        args.checkpoint,
        Quant(args.quant) if args.quant else None,
        args.budget or [],
        measure=not args.no_memory,
    )
    if args.json:
        print(json.dumps(entries, indent=2))
    else:
        print("\n\n".join(format_entry(e) for e in entries))
    over = [(e["file"], b) for e in entries for b in e["budgets"] if not b["within"]]
    if over:
        print("; ".join(f"{f} is {b['over_bytes']:,} B over {b['name']}" for f, b in over), file=sys.stderr)
        return int(ExitCode.OVER_BUDGET)
    return int(ExitCode.OK)


def _cmd_run(args) -> int:
    from .run import run

    run(args.folder, args.texts, args.backend, args.json, args.context, args.top_k, args.threads, prompt=args.prompt)
    return int(ExitCode.OK)


def _cmd_list(args) -> int:
    from quantize.schemes import scheme_name

    from .. import backends
    from ..core.choices import DEFAULT_INT4_GROUP_SIZE, Quant
    from ..core.tasks import supported_tasks

    from ..model.families import FAMILIES

    print("tasks:      " + ", ".join(supported_tasks()))
    for name, family in FAMILIES.items():
        layers = "one shared layer group, run as a loop" if family.shared else "distinct layers, each stored once"
        print(
            f"family:     {name:<11} model_type {'/'.join(family.model_types)}; inputs "
            f"{', '.join(family.signature.inputs)}; {layers}; every task"
        )
    for backend, quant in backends.combinations():
        info = backends.get_info(backend)
        scheme = scheme_name(quant.value, DEFAULT_INT4_GROUP_SIZE)
        if quant is Quant.INT4:
            scheme += " (group size per model, --group-size)"
        elif quant is Quant.INT8:  # each format's own int8 (the registry's): dynamic per token, per tensor or static
            scheme = info.int8_mode or f"int8, activations quantized per {info.granularity} at run time"
        print(
            f"backend:    {backend.value:<11} --quant {quant.value:<5} -> {info.file_name} ({info.runtime}); "
            f"scheme {scheme}"
        )
    return int(ExitCode.OK)


def _reexec_with_fixed_hash_seed() -> None:
    """ExecuTorch's lowering iterates over sets of strings, so the .pte bytes depend on Python's
    per-process hash seed. The console command re-runs itself once with PYTHONHASHSEED=0 so that the
    same checkpoint and options give a byte-identical .pte (the .onnx is identical either way)."""
    if os.environ.get("PYTHONHASHSEED") is None:
        env = dict(os.environ, PYTHONHASHSEED="0")
        try:
            os.execve(sys.executable, [sys.executable, "-m", "mobile_export", *sys.argv[1:]], env)
        except OSError:
            pass  # cannot re-exec: carry on; only .pte byte-reproducibility is lost


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``mobile-export`` console script; returns the exit code.

    Args:
        argv: arguments without the program name; None reads ``sys.argv`` (and, as a command,
            fixes the hash seed for reproducible .pte bytes).
    """
    try:
        code = _main(argv)
    except KeyboardInterrupt:  # a second interrupt while the first was being reported
        code = 130
    if argv is None and code == 130:
        _exit_interrupted()
    return code


def _exit_interrupted() -> NoReturn:
    """End the command with exit code 130 once the interrupt's cleanup has run.

    CI twice saw the process die by SIGINT (-2) after the cleanup and the message, although SIGINT was
    ignored by then: the interpreter's own end re-raises SIGINT with the default action when it believes a
    KeyboardInterrupt went unhandled (a library's C code can leave that belief behind). The documented exit
    code is 130, so the command ends here, after flushing its output and running the exit handlers.
    """
    import atexit

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - an exit handler's failure must not change the exit code
        pass
    os._exit(130)


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so that flushing what is left at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real file behind sys.stdout (a test's capture): nothing is left to flush
        pass


def _main(argv: list[str] | None) -> int:
    if argv is None:
        _reexec_with_fixed_hash_seed()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # texts after options (run DIR --json TEXT): argparse leaves them over
        if getattr(args, "command", None) == "run" and not any(e.startswith("-") for e in extra):
            args.texts = [*args.texts, *extra]
        else:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    debug = bool(getattr(args, "debug", False))
    if args.version:
        from importlib.metadata import version

        print(f"mobile-export {version('mobile-export')}")
        return int(ExitCode.OK)
    if not args.command:
        parser.print_help(sys.stderr)
        return int(ExitCode.BAD_INPUT)
    from ..core.quiet import native_output_caught, quiet_libraries

    if not debug:  # the libraries' own lines (Python's and native code's) only with --debug
        quiet_libraries()
    handler = {
        "export": _cmd_export,
        "parity": _cmd_parity,
        "report": _cmd_report,
        "tokenizer": _cmd_tokenizer,
        "size": _cmd_size,
        "bench": _cmd_bench,
        "compare": _cmd_compare,
        "run": _cmd_run,
        "list": _cmd_list,
    }[args.command]
    try:
        with latched_interrupts(), contextlib.nullcontext() if debug else native_output_caught():
            return handler(args)
    except BrokenPipeError:  # whoever read the output stopped (``| head``): a normal end, as for any Unix tool
        _quiet_stdout()
        return int(ExitCode.OK)
    except MobileExportError as exc:
        if debug:
            traceback.print_exc()
        print(f"mobile-export: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        if argv is None:  # the command: a library that re-delivers the interrupt it caught
            # (PyErr_SetInterrupt) must not kill the process with SIGINT after the cleanup ran
            import signal

            signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("mobile-export: interrupted; nothing was written under a final name", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: one line unless --debug
        if debug:
            traceback.print_exc()
        print(
            f"mobile-export: unexpected error: {type(exc).__name__}: {first_line(exc)}; "
            "rerun with --debug and report it",
            file=sys.stderr,
        )
        return int(ExitCode.UNEXPECTED)


if __name__ == "__main__":
    raise SystemExit(main())
