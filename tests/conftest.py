"""Shared fixtures: no network, ever; tiny seeded ALBERT checkpoints built in code and cached per session."""

from __future__ import annotations

import os
import shutil
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
    from mobile_export.core.quiet import quiet_libraries
    from mobile_export.demo.tiny import build_tiny_checkpoint

    quiet_libraries()
    cache: dict = {}

    def make(task: str = "text-classification", tokenizer: str = "wordpiece", seed: int = 0, **overrides):
        key = (task, tokenizer, seed, repr(sorted(overrides.items())))
        if key not in cache:
            dest = tmp_path_factory.mktemp(f"ckpt-{task}-{tokenizer}")
            cache[key] = build_tiny_checkpoint(dest, task=task, tokenizer=tokenizer, seed=seed, **overrides)
        return cache[key]

    return make


# A model wide enough that one weight matrix stands far above graph overhead (sharing and int4 size tests).
WIDE = dict(hidden_size=256, intermediate_size=1024, num_attention_heads=4, embedding_size=32,
            max_position_embeddings=64, initializer_range=0.02)
WIDE_LAYER_PARAMS = 4 * 256 * 256 + 2 * 256 * 1024  # one (shared) layer's Linear weights


@pytest.fixture(scope="session")
def wide_export(tiny_checkpoint, tmp_path_factory):
    """wide_export(backend, quant, layers=1) -> ExportResult of the WIDE feature-extraction ALBERT, exported
    once per argument set for the whole run (int4 with the limits its random weights allow, see test_int4)."""
    from mobile_export import ExportOptions, Quant, Thresholds, export

    cache: dict = {}

    def make(backend, quant, layers: int = 1):
        key = (backend, quant, layers)
        if key not in cache:
            ckpt = tiny_checkpoint("feature-extraction", "wordpiece", num_hidden_layers=layers, **WIDE)
            limits = (Thresholds(min_agreement=0.98, min_sqnr_db=5.0, min_example_sqnr_db=3.0)
                      if quant is Quant.INT4 else None)
            out = tmp_path_factory.mktemp(f"wide-{backend.value}-{quant.value}-L{layers}") / "o"
            cache[key] = export(ckpt, out, ExportOptions(backends=(backend,), quant=quant, measure_memory=False,
                                                         thresholds=limits))
        return cache[key]

    return make


# Headline suites that need tools from outside PyPI. Without the tool the suite is skipped locally
# (and named at the end of the run with the command that installs it); under CI (CI=true) a missing
# tool fails those tests instead, so CI can never pass by skipping them.
_TOOLS = {
    "java": ("the Java tokenizer parity and JUnit suites",
             lambda: shutil.which("javac") is not None and os.path.exists("/usr/share/java/com.android.json.jar")
             and os.path.exists("/usr/share/java/junit4.jar"),
             "apt-get install -y default-jdk-headless junit4 libandroid-json-java"),
    "chromium": ("the HTML report rendering test",
                 lambda: any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")),
                 "apt-get install -y chromium"),
}
_skipped_for: dict[str, int] = {}


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_tool(name): needs a tool from outside PyPI (see conftest._TOOLS)")


def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs_tool"):
        name = mark.args[0]
        what, available, install = _TOOLS[name]
        if available():
            continue
        if os.environ.get("CI") == "true":
            pytest.fail(f"{what} need {name}, which is missing on this CI machine; .ci/run must `{install}`")
        _skipped_for[name] = _skipped_for.get(name, 0) + 1
        pytest.skip(f"needs {name}: {install}")


def pytest_terminal_summary(terminalreporter):
    for name, count in sorted(_skipped_for.items()):
        what, _, install = _TOOLS[name]
        terminalreporter.write_line(f"SKIPPED SUITE: {what} ({count} tests) need {name}; install it with: {install}")
