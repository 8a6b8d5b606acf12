"""Parity on the phone's instruction set: the demo's int8 and int4 artifacts, .pte and .onnx, on the ARM64
builds of ExecuTorch and ONNX Runtime under qemu, for three phone CPU generations (the gate refusing an
ARM64 run that differs: ``test_arm64_gate``, a file of its own so it runs beside this one).

Needs the prepared environment (``make arm64-env``); ``make test-arm64`` runs these (CI does)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arm64_demo import DEMO, write_sample
from mobile_export.cli.main import main
from mobile_export.core.thresholds import MIN_BUCKET_EXAMPLES

CPUS = "cortex-a53,cortex-a76,cortex-a710"

pytestmark = pytest.mark.arm64


@pytest.fixture(scope="module")
def demo(demo_quantized, tmp_path_factory):
    """The demo's int8 and int4 artifacts and the sample as a labelled data file: one review of each length bucket,
    the fewest that reach every kernel path on every CPU model (a GEMM's rows are the tokens: each bucket's lengths
    run its tiles and their remainders at a different count; the kernels themselves are chosen by the CPU's
    features). The checker adds its own texts, ``MIN_BUCKET_EXAMPLES`` at 128 tokens and as many at the demo's 256,
    so the two longest buckets are still judged on every CPU model; more texts only repeat those paths under qemu's
    slow arithmetic (three a bucket and the two longest took 506 s here, BENCHMARKS "CI inside its budget")."""
    data = tmp_path_factory.mktemp("arm64") / "sample.tsv"
    n = write_sample(data, per_bucket=1, longest=0, up_to=256)
    return [demo_quantized[q] / name for q in ("int8", "int4") for name in ("model.pte", "model.onnx")], data, n


def test_demo_artifacts_pass_on_three_phone_cpus(demo, tmp_path, capsys):
    artifacts, data, n = demo
    assert n == 5  # one a bucket up to the demo's 256 tokens
    code = main(["parity", str(DEMO), *map(str, artifacts), "--data", str(data), "--isa", "arm64", "--cpus", CPUS,
                 "--out", str(tmp_path)])
    out = capsys.readouterr()
    print(out.out)
    assert code == 0, out.out + out.err
    report = json.loads((tmp_path / "report.json").read_text())
    seen_buckets = {b["bucket"] for b in report["artifacts"][0]["parity"]["by_length"]}
    assert len(seen_buckets) >= 5  # every length bucket the demo's 256 positions allow
    rows = []
    for a in report["artifacts"]:
        isa = a["parity"]["isa"]
        assert [e["cpu"] for e in isa] == CPUS.split(",")
        for e in isa:
            assert e["passed"] and e["n_examples"] == a["parity"]["n_examples"] == n + 1 + 2 * MIN_BUCKET_EXAMPLES, e
            assert e["vs_host"]["decisive_agreement"] == 1.0, e
            rows.append([a["file"], e["cpu"], e["max_abs_diff"], e["sqnr_db"], e["vs_host"]["max_abs_diff"],
                         e["vs_host"]["agreement"], e["accuracy"], a["parity"]["accuracy"]])
    (Path(__file__).parent.parent / "out").mkdir(exist_ok=True)
    (Path(__file__).parent.parent / "out" / "arm64-parity.json").write_text(json.dumps(rows, indent=1))
    assert "On ARM64" in (tmp_path / "report.md").read_text()

