"""Quantization schemes as data: the name reports carry, and the choices both backends read."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scheme:
    name: str
    description: str
    weight_symmetric: bool
    per_channel: bool


INT8_DYNAMIC_PER_CHANNEL = Scheme(
    name="int8-dynamic-per-channel",
    description="int8 activations quantized per tensor at run time; symmetric int8 weights, one scale per "
                "output channel",
    weight_symmetric=True,
    per_channel=True,
)
