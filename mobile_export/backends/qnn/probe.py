"""A precompiled NPU file's context binary loaded first in a child process. QNN's x86 HTP simulator kills the
process on some binaries instead of returning an error: one compiled with HTP weight sharing (several graphs over
one set of weights, as ONNX Runtime's weight-sharing tool and AI Hub write them) logs "Shared weights buffer isn't
supported on this platform", then ONNX Runtime 1.32 crashes in its error path (SIGSEGV, measured with QNN SDK 2.51).
A user's file must be refused in one line, not take the user's process down with it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ...core.errors import ArtifactLoadError
from .socs import SIMULATED

PROBE_SECONDS = 600  # far above the longest load measured (albert-base's context: seconds)
_QNN_ERROR = re.compile(r"<E>\s*(.*\S)")

# The child loads the file on the simulator with QNN's own log on (ONNX Runtime passes it at verbose severity),
# so a crash still leaves the reason QNN gave in its standard error.
_CHILD = """
import sys
from pathlib import Path
from mobile_export.backends.qnn import htp
from mobile_export.backends.qnn.socs import SOCS
htp.session(Path(sys.argv[1]), SOCS[sys.argv[2]], severity=0)
"""


def check_loads(path: Path, shown: str) -> None:
    """ArtifactLoadError when loading the precompiled file at ``path`` on the HTP simulator kills the process; a
    load that fails with an error is left to the session's own refusal (``refusal.why_not``)."""
    # QNN's verbose log of a large context runs to megabytes: it goes to a file, read back line by line
    with tempfile.TemporaryFile() as log:
        try:
            child = subprocess.run(
                [sys.executable, "-c", _CHILD, str(path), SIMULATED.name],
                stdout=subprocess.DEVNULL,
                stderr=log,
                timeout=PROBE_SECONDS,
            )
        except subprocess.TimeoutExpired:
            raise ArtifactLoadError(
                f"{shown}'s context binary did not load on the HTP simulator in {PROBE_SECONDS} s; export it again "
                "with --soc"
            ) from None
        if child.returncode >= 0:
            return
        log.seek(0)
        said = list(dict.fromkeys(m[1] for line in log if (m := _QNN_ERROR.search(line.decode("utf-8", "replace")))))
    try:
        how = signal.Signals(-child.returncode).name
    except ValueError:
        how = f"signal {-child.returncode}"
    reason = f"; QNN: {said[0]}" if said else ""
    fix = (
        "compiled with HTP weight sharing, which QNN's x86 simulator cannot load; check it on a phone, or export "
        "one length per file with --soc"
        if any("Shared weights" in s for s in said)
        else "damaged, or not written by this QNN SDK; export it again with --soc"
    )
    raise ArtifactLoadError(f"{shown}'s context binary crashes the HTP simulator ({how}{reason}): {fix}")
