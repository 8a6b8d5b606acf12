"""What only the NPU file's export reads: its activation precision, the SoCs it is precompiled for, its lengths."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import BadInputError
from ..flags import option
from .socs import SOCS, parse_socs

ACTIVATION_BITS = (16, 8)  # the NPU's activation precisions: w8a16 (Qualcomm's default for transformers), w8a8


@dataclass(frozen=True)
class QnnOptions:
    """The .qnn.onnx's own export options (each field a flag of ``export``, gathered by the registry).

    Args:
        qnn_activations: bits of the static activations (``--qnn-activations``): 16 (w8a16, Qualcomm's
            default for transformers) or 8 (w8a8: half the activation traffic; attention's mask and softmax
            lose more).
        soc: SoCs to precompile the checked file for (``--soc SM8650,SM8750``: ``precompile``), comma-separated;
            None: only the portable QDQ model.
        npu_lengths: shorter sequence lengths the file also holds a graph for (``--npu-lengths 16,32,64``), over
            the same stored weights (``graphs``); a text runs in the shortest graph it fits. None: one length.
    """

    qnn_activations: int = option(
        ACTIVATION_BITS[0],
        "the NPU file's (--backend qnn) activation bits: 16 (w8a16) or 8 (w8a8)",
        choices=ACTIVATION_BITS,
    )
    soc: str | None = option(
        None,
        "the NPU file (--backend qnn) also precompiled for these Snapdragon SoCs ("
        + ", ".join(SOCS)
        + "): model.<SoC>.qnn.onnx beside it, which a phone of that SoC loads without compiling",
        metavar="SM8650,...",
    )
    npu_lengths: str | None = option(
        None,
        "the NPU file (--backend qnn) also holds a graph for each of these shorter lengths, over the same stored "
        "weights: a text runs in the shortest graph it fits (a 10-token query pays for 16 tokens, not 128)",
        metavar="16,32,64",
    )

    def __post_init__(self) -> None:
        parse_socs(self.soc.split(",") if self.soc else ())
        lengths = parse_lengths(self.npu_lengths)
        if lengths and self.soc:
            raise BadInputError(
                "--npu-lengths with --soc is not offered: several lengths precompiled over one set of weights "
                "need QNN's HTP weight sharing, whose context QNN's x86 simulator cannot load to check it; export "
                "the lengths as a QDQ file (compiled on the phone when loaded), or precompile one length"
            )
        if self.qnn_activations not in ACTIVATION_BITS:
            choices = " or ".join(map(str, ACTIVATION_BITS))
            raise BadInputError(f"--qnn-activations {self.qnn_activations} is not offered; pass {choices}")


MIN_NPU_LENGTH = 8  # [CLS], a few tokens, [SEP]: shorter graphs cost more in bytes than they save


def parse_lengths(text: str | None) -> tuple[int, ...]:
    """The lengths of ``--npu-lengths`` (``16,32,64``), sorted, each a whole number >= ``MIN_NPU_LENGTH``."""
    if not text:
        return ()
    out = set()
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < MIN_NPU_LENGTH:
            raise BadInputError(
                f"--npu-lengths {text!r}: {part!r} is not a length of at least {MIN_NPU_LENGTH}; pass e.g. 16,32,64"
            )
        out.add(int(part))
    return tuple(sorted(out))
