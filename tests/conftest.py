"""Shared fixtures: no network, ever; tiny seeded ALBERT checkpoints built in code and cached per session."""

from __future__ import annotations

import os
import socket

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import pytest  # noqa: E402

_real_connect = socket.socket.connect


def _guarded_connect(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and (host.startswith("127.") or host in ("localhost", "::1") or host.startswith("/")):
        return _real_connect(self, address)
    raise RuntimeError(f"test tried the network ({address}); tests must never do that")


socket.socket.connect = _guarded_connect


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """tiny_checkpoint(task, tokenizer="wordpiece", **overrides) -> folder; built once per argument set."""
    from mobile_export._quiet import quiet_libraries
    from mobile_export.tiny import build_tiny_checkpoint

    quiet_libraries()
    cache: dict = {}

    def make(task: str = "text-classification", tokenizer: str = "wordpiece", seed: int = 0, **overrides):
        key = (task, tokenizer, seed, tuple(sorted(overrides.items())))
        if key not in cache:
            dest = tmp_path_factory.mktemp(f"ckpt-{task}-{tokenizer}")
            cache[key] = build_tiny_checkpoint(dest, task=task, tokenizer=tokenizer, seed=seed, **overrides)
        return cache[key]

    return make
