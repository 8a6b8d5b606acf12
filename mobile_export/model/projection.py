"""A sentence-transformers Dense module as a torch module with its stored weights: ``activation(linear(x))``
(``+ x`` or ``+ residual(x)`` when it has a residual), its parameters named as the library names them, so the
quantizers see one more Linear (two with a projected residual). The activation is built from an allowlist of
class names, never imported from the folder's config (that would run whatever a config names)."""

from __future__ import annotations

from pathlib import Path

import torch

from ..core.errors import CheckpointError
from ..core.heads import ACTIVATIONS, Projection

# the allowlist's names are torch.nn's own classes
_ACTIVATIONS = {name: getattr(torch.nn, name) for name in ACTIVATIONS}


class Dense(torch.nn.Module):
    """[.., in] -> [.., out]: a sentence-transformers Dense module's computation."""

    def __init__(self, spec: Projection) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(spec.in_features, spec.out_features, bias=spec.bias)
        self.activation = _ACTIVATIONS[spec.activation]()
        # the residual: none, the input itself, or the input projected to the output's width
        self.residual: torch.nn.Module | None = None
        if spec.residual:
            same = spec.in_features == spec.out_features
            self.residual = (
                torch.nn.Identity() if same else torch.nn.Linear(spec.in_features, spec.out_features, bias=False)
            )

    def forward(self, x):
        out = self.activation(self.linear(x))
        return out if self.residual is None else out + self.residual(x)


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    """The tensors a Dense module's folder stores: safetensors when present, else its pickle read as weights only."""
    safe = folder / "model.safetensors"
    if safe.is_file():
        from safetensors.torch import load_file

        return load_file(str(safe))
    pickle = folder / "pytorch_model.bin"
    if pickle.is_file():
        return torch.load(pickle, map_location="cpu", weights_only=True)
    raise CheckpointError(
        f"{folder} holds no model.safetensors or pytorch_model.bin; restore the Dense module's weights"
    )


def load_projection(root: Path, spec: Projection) -> Dense:
    """The Dense module of ``spec`` with the weights stored in its folder under ``root``; CheckpointError when they
    are missing or do not fit its config."""
    module = Dense(spec)
    stored, own = _weights(root / spec.path), module.state_dict()
    try:
        module.load_state_dict({k: v for k, v in stored.items() if k in own}, strict=True)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise CheckpointError(
            f"{root / spec.path}: its weights do not fit its config.json ({first}); fix either"
        ) from None
    return module.eval()
