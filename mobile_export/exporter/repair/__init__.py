"""Repairs of an int8 export that fails its parity gate, in order of cost; each repaired artifact is judged
by the same gate against the same fp32 reference as the plain one.

``smooth``: SmoothQuant's migration folded exactly into ALBERT's foldable weight pairs (``quantize.smooth``),
its scales from the input ranges of the diagnosis sample over every depth of the shared layer at once. The
fp32 function is unchanged, the graph is the plain one's (same operators, shapes and bytes per weight), so
the artifact keeps every property of a plain export.

``scales``: where no fold is exact (query/key/value and the FFN read a LayerNorm output that also feeds the
residual stream; the FFN output reads a GELU), each Linear whose input still has an outlier channel divides that
input by SmoothQuant's scales before its matmul, its weight's columns multiplied by them
(``quantize.smooth.SmoothedLinear``): the same fp32 function in every family, for one elementwise Mul and 4 bytes
per input channel (Linears that read one tensor share one vector).

``mixed``: the smallest set of Linears kept in fp32 whose emulated int8 (``parity.diagnosis.Emulation``, the
runtime's activation granularity) clears the gate with a margin: weights ranked by what keeping each alone in
fp32 recovers, added until the target is met, then each dropped again if the rest still meet it. A shared
layer's weight counts once, whatever the depth. For outliers no rescaling can fold (the residual stream).

The loop (``loop``) tries the methods (``methods``) in order and records what each did (``record``), with each
repaired artifact's cost on the device's path (``cost``).
"""

from __future__ import annotations

from .loop import METHODS, Repaired, repair
from .record import (
    NO_LARGER_SET,
    NOTHING_TO_FOLD,
    NOTHING_TO_KEEP,
    NOTHING_TO_SCALE,
    Attempt,
    Outcome,
    RepairRecord,
    failing,
)

__all__ = [
    "METHODS",
    "NOTHING_TO_FOLD",
    "NOTHING_TO_KEEP",
    "NOTHING_TO_SCALE",
    "NO_LARGER_SET",
    "Attempt",
    "Outcome",
    "RepairRecord",
    "Repaired",
    "failing",
    "repair",
]
