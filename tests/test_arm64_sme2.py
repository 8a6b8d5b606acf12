"""The newest phones' kernels: the demo's int8 and int4 .pte and .onnx on qemu's ``max`` CPU, the default CPU
model with SME2, where ExecuTorch's XNNPACK and ONNX Runtime switch to KleidiAI's SME2 GEMMs (BENCHMARKS.md,
"SME2"). A smaller sample than ``test_arm64``'s, on a file of its own so it runs beside it.

Needs the prepared environment (``make arm64-env``); ``make test-arm64`` runs it (CI does)."""

from __future__ import annotations

import json

import pytest

from arm64_demo import DEMO, write_sample
from mobile_export.cli.main import main
from mobile_export.parity.arm64.cpus import DEFAULT_ARM64_CPUS
from mobile_export.parity.arm64.emulator import Emulator
from mobile_export.parity.arm64.env import locate

pytestmark = pytest.mark.arm64


def test_max_is_a_default_cpu_and_announces_sme2():
    assert "max" in DEFAULT_ARM64_CPUS
    with Emulator(locate(), "max") as sme2, Emulator(locate(), "cortex-a710") as a710:
        assert {"sme", "sme2", "i8mm", "sve2"} <= set(sme2.features())
        assert "sme2" not in a710.features()  # so the kernels the two run differ only by SME2


def test_demo_artifacts_pass_on_the_sme2_cpu(demo_quantized, tmp_path, capsys):
    data = tmp_path / "sample.tsv"
    # one review a length bucket (with the checker's texts at 128 and 256 tokens): every length regime of the SME2
    # GEMMs, the fewest texts (emulating SME2 is about 3x slower per text than a710)
    n = write_sample(data, per_bucket=1, longest=0, up_to=256)
    artifacts = [demo_quantized[q] / name for q in ("int8", "int4") for name in ("model.pte", "model.onnx")]
    code = main(["parity", str(DEMO), *map(str, artifacts), "--data", str(data), "--isa", "arm64", "--cpus", "max",
                 "--out", str(tmp_path / "p")])
    printed = capsys.readouterr()
    print(printed.out)
    assert code == 0, printed.out + printed.err
    report = json.loads((tmp_path / "p" / "report.json").read_text())
    for a in report["artifacts"]:
        [run] = a["parity"]["isa"]
        assert run["cpu"] == "max" and "sme2" in run["features"], run
        assert run["passed"] and run["n_examples"] == a["parity"]["n_examples"] == n + 7, run
        assert run["vs_host"]["decisive_agreement"] == 1.0, run
    assert "max (dotprod, sve, sve2, i8mm, bf16, sme, sme2)" in (tmp_path / "p" / "report.md").read_text()
