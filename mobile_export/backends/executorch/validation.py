"""Whether a user's .pte is a sound export, checked before the ExecuTorch runtime runs it."""

from __future__ import annotations

from pathlib import Path

from ...core.errors import ArtifactLoadError, first_line
from ...core.signature import INPUT_NAMES, MIN_INPUTS, not_an_export
from .convention import EMBED_METHOD, HEAD_METHOD, SCHEDULE_METHOD
from .serializer import extended_header, read_program

PTE_IDENTIFIER = b"ET12"  # the flatbuffer file identifier of ExecuTorch programs, at byte 4


def check(path: Path, shown: str) -> None:
    """What the .pte must be before the ExecuTorch runtime sees it: the program identifier, data
    segments inside the file, a program Python's own flatbuffer reader can decode, the methods and
    inputs of an export; then one load with full verification in a child process, so a file that
    still crashes the native loader ends that child, not this process."""
    with open(path, "rb") as f:
        head = f.read(64)
    if head[4:8] != PTE_IDENTIFIER:
        hint = " (it looks like an ONNX model: rename it .onnx)" if head[:1] == b"\x08" else ""
        raise ArtifactLoadError(
            f"{shown} is not an ExecuTorch program (no '{PTE_IDENTIFIER.decode()}' identifier "
            f"at byte 4){hint}; pass a .pte written by mobile-export export"
        )
    size = path.stat().st_size
    try:
        header = extended_header(head)
    except Exception:
        header = None
    if header is not None and header.segment_base_offset + header.segment_data_size > size:
        raise ArtifactLoadError(
            f"{shown} is truncated: its data ends at byte "
            f"{header.segment_base_offset + header.segment_data_size:,} but the file has "
            f"{size:,}; download or export it again"
        )
    try:
        pte = read_program(path)
    except Exception as exc:  # the flatbuffer reader's own errors say little (``error``): name where it stopped
        said = first_line(exc, 120)
        what = type(exc).__name__ if said in ("", "error", type(exc).__name__) else f"{type(exc).__name__}: {said}"
        raise ArtifactLoadError(
            f"{shown} is a damaged ExecuTorch program: its flatbuffer does not decode ({what}); the file was cut or "
            "changed after export: export it again"
        ) from None
    plans = {plan.name: plan for plan in pte.program.execution_plan}
    entry = plans.get(EMBED_METHOD) or plans.get("forward")
    if entry is None or (EMBED_METHOD in plans and not {HEAD_METHOD, SCHEDULE_METHOD} <= set(plans)):
        raise not_an_export(shown, f"its methods are {', '.join(sorted(plans)) or 'none'}")
    found = []
    for i in entry.inputs:
        v = entry.values[i].val
        found.append((type(v).__name__, getattr(v, "scalar_type", None), len(getattr(v, "sizes", []) or [])))
    bad = any(k != "Tensor" or int(t or 0) != 4 or r != 2 for k, t, r in found)  # 4: Long
    if not MIN_INPUTS <= len(found) <= len(INPUT_NAMES) or bad:
        text = ", ".join(f"{k} (type {t}, rank {r})" for k, t, r in found) or "none"
        raise not_an_export(shown, f"method {entry.name} takes {text}")
    _probe_load(path, shown)


def _probe_load(path: Path, shown: str) -> None:
    """Load ``path`` with full verification in a child process (``probe_child``): a native abort ends
    the child, not this process."""
    import subprocess
    import sys

    code = "import sys; from mobile_export.backends.executorch.validation import probe_child; probe_child(sys.argv[1])"
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=600)
    if proc.returncode == 0:
        return
    if proc.returncode < 0:
        raise ArtifactLoadError(
            f"{shown} crashed the ExecuTorch loader (signal {-proc.returncode}) in a checking "
            "process; the file is damaged: export it again"
        )
    said = (proc.stdout.strip().splitlines() or ["no message"])[-1]
    raise ArtifactLoadError(
        f"{shown} does not load in the ExecuTorch runtime (strict verification): {said}; export it again"
    )


def probe_child(path: str) -> None:
    """In the checking process: load every method as ``Runner`` does; on an error print it in one
    line and exit 3."""
    import sys

    from .runner import PteRunner as Runner

    try:
        Runner(Path(path))
    except Exception as exc:
        print(f"{type(exc).__name__}: {first_line(exc, 200)}")
        sys.exit(3)
