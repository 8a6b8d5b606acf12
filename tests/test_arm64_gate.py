"""The gate refusing an ARM64 run that differs (exit 3, naming the CPU model): the demo's int8 .pte, with
cortex-a76's results off by 25% inside the emulated process.

Needs the prepared environment (``make arm64-env``); ``make test-arm64`` runs it (CI does)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mobile_export.cli.main import main
from test_arm64 import DEMO, _sample

pytestmark = pytest.mark.arm64


@pytest.fixture(scope="module")
def demo_int8(tmp_path_factory):
    """The demo's int8 .pte (the file test_arm64 exports too: lowered once per run, conftest's artifact cache) and
    five texts of its sample."""
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("arm64-gate")
    assert main(["export", str(DEMO), "--out", str(root / "int8"), "--backend", "executorch", "--no-memory",
                 "--quiet"]) == 0
    few = root / "few.tsv"
    few.write_text("".join(f"{y}\t{t}\n" for t, y in _sample(AutoTokenizer.from_pretrained(str(DEMO)))[:5]),
                   encoding="utf-8")
    return root / "int8" / "model.pte", few


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
