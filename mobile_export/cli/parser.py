"""The ``mobile-export`` command line: its commands, options and help."""

from __future__ import annotations

import argparse

from .. import backends
from ..core.choices import DEFAULT_TOP_K
from ..core.errors import ExitCode

EXIT_CODES = {
    0: "ok",
    1: "unexpected error (a bug or a library failure; rerun with --debug)",
    2: "bad input or usage (checkpoint, options, destination, artifact, text)",
    3: "parity failed (an artifact disagrees with the fp32 reference; nothing written)",
    4: "over size budget",
}


def exit_codes_help(*codes: int) -> str:
    """The help's ``exit codes:`` section listing ``codes`` (every code when none is given)."""
    return "exit codes:\n" + "".join(f"  {c}  {EXIT_CODES[c]}\n" for c in codes or EXIT_CODES)


EXIT_CODES_HELP = exit_codes_help()


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own usage errors: one line, exit 2
        self.exit(int(ExitCode.BAD_INPUT), f"{self.prog}: error: {message}; see {self.prog} --help\n")


def build_parser() -> argparse.ArgumentParser:
    """Every command with its options (each command's own in one function below)."""
    parser = Parser(
        prog="mobile-export",
        description="ALBERT checkpoints and the encoders beside them to phone formats (ExecuTorch, ONNX Runtime, the "
        "NPU through ONNX Runtime's QNN provider, LiteRT), each checked in its own runtime.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--debug", action="store_true", help="show tracebacks and the libraries' own log lines")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    # --debug after the command too (``mobile-export export ... --debug``): it must not reset the one before it
    common = Parser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the traceback of an error and the libraries' own log lines (for a report)",
    )

    def command(name: str, summary: str, *codes: int) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=summary,
            description=summary[0].upper() + summary[1:] + ".",
            parents=[common],
            epilog=exit_codes_help(*codes),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    _export_args(command("export", "export a checkpoint to phone formats, each verified in its own runtime"))
    tk = command("tokenizer", "write just the tokenizer assets an app needs", 0, 1, 2)
    tk.add_argument("checkpoint", help="Hugging Face checkpoint folder or hub id")
    tk.add_argument("--out", required=True, help="folder to write the tokenizer assets into")
    tk.add_argument("--max-seq-len", type=int, help="longest input (default: max_position_embeddings)")
    pa = command("parity", "check existing artifacts in their runtimes against the fp32 PyTorch reference", 0, 1, 2, 3)
    _parity_args(pa)
    rp = command("report", "rewrite report.md and report.html from DIR/report.json", 0, 1, 2)
    rp.add_argument("folder", help="an export or parity output folder")
    _bench_args(command("bench", "latency, throughput, load time and memory, next to PyTorch fp32 eager", 0, 1, 2))
    cp = command("compare", "exports side by side: parameters, bytes, RAM and latency on one harness, parity", 0, 1, 2)
    _compare_args(cp)
    _size_args(command("size", "what an artifact's bytes are, whether sharing survived, memory, budgets", 0, 1, 2, 4))
    _run_args(command("run", "run an export's artifacts on text, without the checkpoint", 0, 1, 2))
    command("list", "list supported tasks, backends and quantizations", 0)
    return parser


def _export_args(ex: argparse.ArgumentParser) -> None:
    from ..backends.flags import argparse_kwargs, flag_name
    from ..core.choices import (
        DEFAULT_INT4_GROUP_SIZE,
        INT4_GROUP_SIZES,
        WIDE_HIDDEN_SIZE,
        WIDE_INT4_GROUP_SIZE,
        Quant,
        Repair,
    )
    from ..core.tasks import supported_tasks

    ex.add_argument("checkpoint", help="Hugging Face checkpoint folder or hub id")
    ex.add_argument("--out", required=True, help="output folder (absent or empty unless --overwrite)")
    ex.add_argument("--task", help=f"one of: {', '.join(supported_tasks())} (default: from config.architectures)")
    _backend_arg(
        ex, f"repeat for several (default: {' and '.join(b.value for b in backends.default_backends())})", repeat=True
    )
    ex.add_argument("--quant", default=Quant.INT8.value, choices=[q.value for q in Quant], help="default: int8")
    ex.add_argument("--max-seq-len", type=int, help="longest input (default: max_position_embeddings)")
    ex.add_argument(
        "--keep-fp32-embeddings",
        action="store_true",
        help="with int8, leave the word-embedding table in fp32 (default: int8 per row)",
    )
    ex.add_argument(
        "--group-size",
        type=int,
        help=f"with int4, input values per weight scale: {', '.join(map(str, INT4_GROUP_SIZES))} "
        f"(default: {DEFAULT_INT4_GROUP_SIZE} below hidden size {WIDE_HIDDEN_SIZE}, "
        f"{WIDE_INT4_GROUP_SIZE} from it; smaller is more accurate and larger; a format may take only multiples "
        "of some: "
        + ", ".join(
            f"{i.suffix} {i.int4_group_multiple}"
            for i in backends.BACKENDS.values()
            if Quant.INT4 in i.quants and i.int4_group_multiple > 1
        )
        + ")",
    )
    ex.add_argument(
        "--calibration",
        metavar="FILE",
        help="a statically quantized format's (--backend qnn) calibration texts, one per line (label<TAB>text too); "
        "default: the demo corpus' training split. Texts the parity check judges are left out",
    )
    for name, (f, readers) in backends.option_fields().items():  # each format's own flags, declared by its package
        ex.add_argument(flag_name(name), **argparse_kwargs(f))
    ex.add_argument(
        "--repair",
        choices=[r.value for r in Repair],
        default=Repair.AUTO.value,
        help="when an int8 artifact fails its parity gate: auto (default) tries each repair in order of cost "
        "and keeps the first that passes, off refuses, smooth tries only rescalings that leave the fp32 "
        "function unchanged (folded into the weights, then each Linear's own input scale), mixed only keeps the "
        "fewest weights fp32 that let the rest pass, "
        "ranges only widens the NPU file's ranges where its diagnosis found values clipped; the report says what "
        "was changed",
    )
    head_args(
        ex,
        "fill-mask: full (default; every position's vocabulary logits) or topk[:K] (the top K tokens, "
        "default 5, at the first 8 [MASK]s, computed in the graph: a fraction of the RAM)",
        "feature-extraction: one sentence embedding [1, H] instead of the last hidden state, pooled over the "
        "real tokens as sentence-transformers pools (default for a sentence-transformers folder: its own)",
        "with --pooling, L2-normalize the embedding",
    )
    ex.add_argument("--overwrite", action="store_true", help="replace an existing export in --out")
    threshold_args(ex)
    ex.add_argument("--data", help="parity data: one text per line, optionally label<TAB>text (default: built-in text)")
    ex.add_argument(
        "--budget",
        help="largest acceptable artifact: a size (15MB, 12MiB; the file) or a store preset "
        "(play-base, play-asset-pack, legacy-apk, app-store-cellular; the compressed download); exit 4 when over",
    )
    ex.add_argument("--no-memory", action="store_true", help="skip measuring each artifact's peak RSS")
    ex.add_argument(
        "--no-bundle",
        action="store_true",
        help="write plain artifacts: without the tokenizer, labels, golden examples and identity bundled inside "
        f"each {backends.suffixes_where(lambda i: i.bundles)} (the folder has them either way)",
    )
    ex.add_argument("--no-embed", dest="no_bundle", action="store_true", help=argparse.SUPPRESS)  # its old name
    ex.add_argument("--quiet", action="store_true", help="no progress lines")


def _per_bucket(value: str) -> int:
    """``--npu-sample``: a positive count, or ``all`` (0: every text)."""
    if value.strip().lower() == "all":
        return 0
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: pass a count of 1 or more, or all")
    return n


def _parity_args(pa: argparse.ArgumentParser) -> None:
    from ..parity.arm64.cpus import DEFAULT_ARM64_CPUS

    pa.add_argument("checkpoint", help="the checkpoint the artifacts were exported from (folder or hub id)")
    pa.add_argument("artifacts", nargs="+", help=f"{backends.suffix_list()} files")
    pa.add_argument("--data", help="one text per line, optionally label<TAB>text (default: built-in real sentences)")
    pa.add_argument("--out", help="folder for report.json, report.md and report.html")
    pa.add_argument("--task", help="task of the checkpoint (default: from config.architectures)")
    _quant_arg(pa, "thresholds to apply (default: per artifact, int8 if it stores int8 weights)")
    pa.add_argument(
        "--max-seq-len", type=int, help="longest input the artifacts accept (default: max_position_embeddings)"
    )
    threshold_args(pa)
    pa.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="spread the texts over a Ray cluster: auto (the running one), host:port, or local (start one "
        "here); needs pip install 'mobile-export[ray]'",
    )
    pa.add_argument("--ray-workers", type=int, help="Ray workers (default: one per CPU of the cluster)")
    pa.add_argument(
        "--npu-sample",
        type=_per_bucket,
        metavar="N|all",
        help=f"texts of each length bucket a {backends.suffixes_where(lambda i: i.simulated)} runs on its simulator, "
        "one simulator per core side by side (default: the format's sample, "
        + ", ".join(f"{i.suffix} {i.parity_per_bucket}" for i in backends.BACKENDS.values() if i.parity_per_bucket)
        + "; all: every text, the default with --ray)",
    )
    pa.add_argument(
        "--isa",
        choices=["host", "arm64"],
        default="host",
        help="arm64: also run every artifact on the ARM64 builds of its runtime under emulation, per CPU "
        "model (prepare it once with make arm64-env)",
    )
    pa.add_argument(
        "--cpus",
        default=",".join(DEFAULT_ARM64_CPUS),
        help=f"with --isa arm64: qemu CPU models (default {','.join(DEFAULT_ARM64_CPUS)}: no dotprod, "
        "dotprod, SVE2+i8mm, SME2)",
    )
    pa.add_argument(
        "--ignore-manifest",
        action="store_true",
        help="check an artifact whose bytes differ from what the manifest.json beside it records (refused otherwise)",
    )
    pa.add_argument(
        "--arm64-env",
        help="the prepared ARM64 environment (default $MOBILE_EXPORT_ARM64_ENV or ~/.cache/mobile-export/arm64)",
    )
    head_args(
        pa,
        "fill-mask artifacts exported with --head topk[:K] (default: as manifest.json beside them says)",
        "feature-extraction artifacts exported with --pooling",
        "with --pooling: exported with --normalize",
    )
    pa.add_argument("--quiet", action="store_true", help="no progress lines")


def _bench_args(bn: argparse.ArgumentParser) -> None:
    bn.add_argument("artifacts", nargs="+", help=f"{backends.suffix_list()} files")
    bn.add_argument("--checkpoint", help="also measure this checkpoint in PyTorch fp32 eager (the reference)")
    bn.add_argument("--seq-lens", default="16,64,128", help="comma-separated sequence lengths (default 16,64,128)")
    bn.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    bn.add_argument("--runs", type=int, default=30, help="timed runs per length (default 30, after 5 warm-up runs)")
    bn.add_argument("--json", help="also write the results to this JSON file")


def _compare_args(cp: argparse.ArgumentParser) -> None:
    cp.add_argument("folders", nargs="+", help="the --out folders of mobile-export export (each with its report.json)")
    cp.add_argument("--seq-lens", default="128,512", help="comma-separated token counts (default 128,512)")
    cp.add_argument("--threads", type=int, default=2, help="runtime threads, the same for every artifact (default 2)")
    cp.add_argument("--runs", type=int, default=15, help="timed runs per length (default 15, after 5 warm-up runs)")
    cp.add_argument("--json", help="also write the results to this JSON file")
    cp.add_argument("--md", help="also write the Markdown table to this file")


def _size_args(sz: argparse.ArgumentParser) -> None:
    sz.add_argument(
        "artifacts",
        nargs="+",
        help=f"{backends.suffix_list()} files (an export's report.json beside them gives the model)",
    )
    sz.add_argument("--checkpoint", help="the source checkpoint, when there is no report.json beside the artifact")
    _quant_arg(sz, "how the artifact was quantized (default: from report.json, else int8)")
    sz.add_argument(
        "--budget",
        action="append",
        help="a size (15MB) or a preset (play-base, play-asset-pack, legacy-apk, "
        "app-store-cellular); repeat for several; exit 4 when over",
    )
    sz.add_argument("--no-memory", action="store_true", help="skip measuring peak RSS (load + one run)")
    sz.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _run_args(rn: argparse.ArgumentParser) -> None:
    rn.add_argument(
        "folder",
        help="the --out folder of mobile-export export, or one artifact of it that carries its assets",
    )
    rn.add_argument("texts", nargs="*", help="texts to run (default: one per line on stdin)")
    _backend_arg(rn, "run only this artifact (default: every one listed)", repeat=False)
    rn.add_argument("--json", action="store_true", help="one JSON object per text and artifact")
    rn.add_argument(
        "--context", help="question-answering: the context for every question (else question<TAB>context lines)"
    )
    rn.add_argument(
        "--top-k", type=int, help=f"fill-mask: candidates per [MASK] (default {DEFAULT_TOP_K}; other tasks refuse it)"
    )
    rn.add_argument("--threads", type=int, help="runtime threads (default: the runtime's)")
    rn.add_argument(
        "--prompt",
        metavar="NAME",
        help="feature-extraction: put the prompt NAME of the export's manifest (a sentence-transformers folder's, "
        "e.g. query) before each text, as the model was trained",
    )


def _backend_arg(p: argparse.ArgumentParser, help: str, repeat: bool) -> None:
    from ..backends import Backend

    p.add_argument("--backend", action="append" if repeat else "store", choices=[b.value for b in Backend], help=help)


def _quant_arg(p: argparse.ArgumentParser, help: str) -> None:
    from ..core.choices import Quant

    p.add_argument("--quant", choices=[q.value for q in Quant], help=help)


def head_args(p, head: str, pooling: str, normalize: str) -> None:
    """--head, --pooling and --normalize (heads.parse_head), with each command's help."""
    from ..core.choices import POOLINGS

    p.add_argument("--head", help=head)
    p.add_argument("--pooling", choices=POOLINGS, help=pooling)
    p.add_argument("--normalize", action="store_true", help=normalize)


def threshold_args(p) -> None:
    """The parity limits export and parity take (each overrides one default of the artifact's precision)."""
    p.add_argument("--max-abs-diff", type=float, help="parity limit on max |logit diff| (default: 1e-4 for fp32)")
    p.add_argument(
        "--min-agreement",
        type=float,
        help="parity limit on decisive top-1 agreement, 0..1, overall and per length bucket (default: 0.99 for int8)",
    )
    p.add_argument(
        "--min-sqnr",
        type=float,
        help="parity limit on SQNR in dB, overall and per length bucket (default: 20 for int8)",
    )
    p.add_argument(
        "--min-example-sqnr", type=float, help="parity floor on every example's SQNR in dB (default: 15 for int8)"
    )
    p.add_argument(
        "--min-cosine",
        type=float,
        help="parity floor on every example's cosine to fp32 (default: 0.99 for an int8 pooled embedding, 0.95 int4)",
    )
    p.add_argument(
        "--min-retrieval",
        type=float,
        help="parity limit on retrieval agreement of a pooled embedding, 0..1: each text as a query against the "
        "others, fp32's nearest neighbour kept (default: 0.98 for int8, 0.95 int4; gated from 20 decisive queries)",
    )
