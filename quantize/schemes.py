"""Quantization schemes as data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scheme:
    name: str
    weight_bits: int
    weight_symmetric: bool
    per_channel: bool
    dynamic_activations: bool


INT8_DYNAMIC_PER_CHANNEL = Scheme(
    name="int8-dynamic-per-channel", weight_bits=8, weight_symmetric=True, per_channel=True,
    dynamic_activations=True,
)
