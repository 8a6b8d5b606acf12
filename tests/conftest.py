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
