"""A stand-in for the emulated worker that speaks its protocol without a runtime, for tests/test_emulator_pipe.py:
``run`` answers with its input repeated ``REPEAT`` times; an input that starts with -1 ends the process."""

import os
import sys

import numpy as np

from mobile_export.parity.arm64.emulator import read_message, write_message

REPEAT = 8


def main() -> int:
    replies = os.fdopen(os.dup(1), "wb")
    while (message := read_message(sys.stdin.buffer)) is not None:
        op, arg = message
        if op == "run":
            if int(arg.flat[0]) == -1:
                print("echo worker: told to stop here", file=sys.stderr, flush=True)
                os._exit(7)
            write_message(replies, ("ok", np.tile(arg, REPEAT)))
        else:
            write_message(replies, ("ok", None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
