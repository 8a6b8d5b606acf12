"""The Snapdragon SoCs an NPU file can be precompiled for (``--soc``): QNN's SoC model id and the Hexagon HTP
architecture of each (as QNN's SDK numbers them), and the names of their precompiled files."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import BadInputError


@dataclass(frozen=True)
class Soc:
    """One Snapdragon SoC as QNN's HTP backend is told about it."""

    name: str  # Qualcomm's part number, e.g. SM8650
    soc_model: str  # QNN's id of it (the provider's ``soc_model``)
    htp_arch: str  # its Hexagon HTP architecture (``htp_arch``)
    marketing: str

    @property
    def file_name(self) -> str:
        """The precompiled file for this SoC, beside model.qnn.onnx (it still ends in ``.qnn.onnx``)."""
        return f"model.{self.name}.qnn.onnx"


SOCS: dict[str, Soc] = {
    s.name: s
    for s in (
        Soc("SM8450", "36", "69", "Snapdragon 8 Gen 1"),
        Soc("SM8550", "43", "73", "Snapdragon 8 Gen 2"),
        Soc("SM8650", "57", "75", "Snapdragon 8 Gen 3"),
        Soc("SM8750", "69", "79", "Snapdragon 8 Elite"),
    )
}
SIMULATED = SOCS["SM8650"]  # what the QDQ model is checked as (without a SoC model QNN's finalize fails, 1002)


def parse_socs(names: tuple[str, ...] | list[str]) -> tuple[Soc, ...]:
    """The SoCs ``names`` (``SM8650``; case and duplicates ignored), or a one-line error listing the known ones."""
    out: list[Soc] = []
    for name in names:
        soc = SOCS.get(name.strip().upper())
        if soc is None:
            known = ", ".join(f"{s.name} ({s.marketing})" for s in SOCS.values())
            raise BadInputError(f"--soc {name.strip()!r} is not a SoC this tool knows; pass one of {known}")
        if soc not in out:
            out.append(soc)
    return tuple(out)
