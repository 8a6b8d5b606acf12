"""The gate refusing an ARM64 run that differs (exit 3, naming the CPU model): the demo's int8 .pte, with
cortex-a76's results off by 25% inside the emulated process.

Needs the prepared environment (``make arm64-env``); ``make test-arm64`` runs it (CI does)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arm64_demo import DEMO, write_sample
from mobile_export.cli.main import main

pytestmark = pytest.mark.arm64


@pytest.fixture(scope="module")
def demo_int8(demo_quantized, tmp_path_factory):
    """The demo's int8 .pte (built once per run, as test_arm64 runs it) and five texts of its sample."""
    few = tmp_path_factory.mktemp("arm64-gate") / "few.tsv"
    write_sample(few, first=5)
    return demo_quantized["int8"] / "model.pte", few


def test_an_arm64_run_that_differs_is_refused_naming_the_cpu(demo_int8, monkeypatch, capsys):
    from mobile_export.parity.arm64 import emulator

    monkeypatch.setattr(emulator, "WORKER", "arm64_skewed_worker")
    monkeypatch.setattr(emulator, "EXTRA_PYTHONPATH", [str(Path(__file__).parent)])
    pte, few = demo_int8
    code = main(["parity", str(DEMO), str(pte), "--data", str(few), "--isa", "arm64",
                 "--cpus", "cortex-a53,cortex-a76", "--quiet"])
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert code == 3, text
    assert "arm64 cortex-a76" in text and "arm64 cortex-a53:" not in text and "Traceback" not in text
