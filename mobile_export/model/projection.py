"""A sentence-transformers Dense module as a torch module with its stored weights: ``activation(linear(x))``
(``+ x`` or ``+ residual(x)`` when it has a residual), its parameters named as the library names them, so the
quantizers see one more Linear (two with a projected residual). The activation is built from an allowlist of
class names, never imported from the folder's config (that would run whatever a config names)."""

from __future__ import annotations

from pathlib import Path

import torch

from ..core.errors import CheckpointError
from ..core.heads import Projection

_ACTIVATIONS = {
    "Tanh": torch.nn.Tanh,
    "Identity": torch.nn.Identity,
    "ReLU": torch.nn.ReLU,
    "GELU": torch.nn.GELU,
    "Sigmoid": torch.nn.Sigmoid,
    "SiLU": torch.nn.SiLU,
}


class Dense(torch.nn.Module):
    """[.., in] -> [.., out]: a sentence-transformers Dense module's computation."""

    def __init__(self, spec: Projection) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(spec.in_features, spec.out_features, bias=spec.bias)
        self.activation = _ACTIVATIONS[spec.activation]()
        self.add_residual = spec.residual
        if spec.residual and spec.in_features != spec.out_features:
            self.residual = torch.nn.Linear(spec.in_features, spec.out_features, bias=False)

    def forward(self, x):
        out = self.activation(self.linear(x))
        if not self.add_residual:
            return out
        return out + (self.residual(x) if hasattr(self, "residual") else x)


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
    stored = _weights(root / spec.path)
    try:
        module.load_state_dict({k: v for k, v in stored.items() if k in module.state_dict()}, strict=True)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0]
        raise CheckpointError(
            f"{root / spec.path}: its weights do not fit its config.json ({first}); fix either"
        ) from None
    return module.eval()
