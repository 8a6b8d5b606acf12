"""What runs inside the emulated ARM64 process: the project's own runners (the same calling convention
as on x86 and in the app), driven by messages on stdin, replies on stdout (see ``emulator``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> int:
    """Serve ``load`` / ``run`` / ``features`` / ``versions`` requests until stdin closes."""
    from .emulator import read_message, write_message

    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the runtimes' own prints go to the log, never into the replies
    runners = {}
    while True:
        message = read_message(sys.stdin.buffer)
        if message is None:
            return 0
        op, arg = message
        try:
            if op == "load":
                from ... import backends
                from ...backends import Backend

                key, backend, path = arg
                runners[key] = backends.load(Backend(backend)).Runner(Path(path), threads=1)
                value = getattr(runners[key], "length", None)  # a file of one fixed length: the host cuts to it
            elif op == "run":
                key, feeds = arg
                value = runners[key].run(feeds)
            elif op == "features":
                from .features import cpu_features

                value = cpu_features()
            elif op == "versions":
                import importlib
                from importlib.metadata import version

                from ... import backends

                value = {"torch": version("torch").split("+")[0], "machine": os.uname().machine}
                for info in backends.BACKENDS.values():  # the CPU formats' runtimes: the imports the runners make
                    if not info.simulated:
                        for name in info.runtime_modules:
                            importlib.import_module(name)
                        value[info.library] = backends.load(info.backend).runtime_version()
            else:
                raise ValueError(f"unknown request {op!r}")
            write_message(replies, ("ok", value))
        except Exception as exc:  # the host turns it into a one-line error naming the CPU model
            write_message(
                replies, ("error", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300])
            )


if __name__ == "__main__":
    raise SystemExit(main())
