"""What only the NPU file's export reads: its activation precision and the texts it calibrates on."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.choices import QNN_ACTIVATION_BITS
from ...core.errors import BadInputError
from ...core.socs import parse_socs


@dataclass(frozen=True)
class QnnOptions:
    """The .qnn.onnx's own export options (built from the export options of the same names).

    Args:
        qnn_activations: bits of the static activations (``--qnn-activations``): 16 (w8a16, Qualcomm's
            default for transformers) or 8 (w8a8: half the activation traffic; attention's mask and softmax
            lose more).
        calibration: the text file the activation ranges are calibrated on (``--calibration``); None: the
            demo corpus' training split. The texts reach the lowering as ``Plan.calibration``.
        soc: SoCs to precompile the checked file for (``--soc SM8650,SM8750``: ``precompile``), comma-separated;
            None: only the portable QDQ model.
        npu_lengths: shorter sequence lengths the file also holds a graph for (``--npu-lengths 16,32,64``), over
            the same stored weights (``graphs``); a text runs in the shortest graph it fits. None: one length.
    """

    qnn_activations: int = 16
    calibration: str | None = None
    soc: str | None = None
    npu_lengths: str | None = None

    def __post_init__(self) -> None:
        parse_socs(self.soc.split(",") if self.soc else ())
        lengths = parse_lengths(self.npu_lengths)
        if lengths and self.soc:
            raise BadInputError(
                "--npu-lengths with --soc is not offered: several lengths precompiled over one set of weights "
                "need QNN's HTP weight sharing, whose context QNN's x86 simulator cannot load to check it; export "
                "the lengths as a QDQ file (compiled on the phone when loaded), or precompile one length"
            )
        if self.qnn_activations not in QNN_ACTIVATION_BITS:
            choices = " or ".join(map(str, QNN_ACTIVATION_BITS))
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
