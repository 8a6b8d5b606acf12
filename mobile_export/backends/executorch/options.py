"""What only the .pte's export reads: how the program is called (``--pte-entry``)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import BadInputError
from ..flags import option

PTE_ENTRIES = ("loop", "forward", "both")


@dataclass(frozen=True)
class PteOptions:
    """The .pte's own export options (each field a flag of ``export``, gathered by the registry).

    Args:
        pte_entry: how the .pte is called (``--pte-entry``): ``loop`` (embed, the shared layer once per
            layer, head: one packed copy of the shared layer in RAM), ``forward`` (the whole model as one
            method, what ExecuTorch's own tools call) or ``both`` in one program sharing stored weights.
    """

    pte_entry: str = option(
        PTE_ENTRIES[0],
        "how the .pte is called: loop (embed, the shared layer once per layer, head: one packed copy of it in "
        "RAM), forward (one method, what ExecuTorch's own tools call) or both in one program",
        choices=PTE_ENTRIES,
    )

    def __post_init__(self) -> None:
        if self.pte_entry not in PTE_ENTRIES:
            raise BadInputError(f"--pte-entry {self.pte_entry} is not one of {', '.join(PTE_ENTRIES)}")
