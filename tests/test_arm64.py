"""Parity on the phone's instruction set: the demo's int8 and int4 artifacts, .pte and .onnx, on the ARM64
builds of ExecuTorch and ONNX Runtime under qemu, for three phone CPU generations (the gate refusing an
ARM64 run that differs: ``test_arm64_gate``, a file of its own so it runs beside this one).

Needs the prepared environment (``make arm64-env``); ``make test-arm64`` runs these (CI does)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mobile_export.cli.main import main
from mobile_export.parity.metrics import BUCKETS, bucket_of

DEMO = Path(__file__).resolve().parents[1] / "mobile_export" / "demo" / "model"
CPUS = "cortex-a53,cortex-a76,cortex-a710"

pytestmark = pytest.mark.arm64


def _sample(tokenizer, per_bucket: int = 5, longest: int = 4) -> list[tuple[str, int]]:
    """A fixed sample of the test split: the first reviews of each length bucket, and the longest ones."""
    from mobile_export.demo.data import load_reviews

    reviews = load_reviews()["test"]
    lengths = [len(tokenizer(t)["input_ids"]) for t, _ in reviews]
    chosen: list[int] = []
    for k in range(len(BUCKETS)):
        chosen += [i for i, n in enumerate(lengths) if bucket_of(n) == k][:per_bucket]
    chosen += sorted(range(len(reviews)), key=lambda i: -lengths[i])[:longest]
    return [reviews[i] for i in sorted(set(chosen))]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo exported to int8 and int4, both formats, and the sample as a labelled data file."""
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("arm64")
    artifacts = []
    for quant in ("int8", "int4"):
        out = root / quant
        assert main(["export", str(DEMO), "--out", str(out), "--quant", quant, "--no-memory", "--quiet"]) == 0
        artifacts += [out / "model.pte", out / "model.onnx"]
    sample = _sample(AutoTokenizer.from_pretrained(str(DEMO)))
    data = root / "sample.tsv"
    data.write_text("".join(f"{y}\t{t}\n" for t, y in sample), encoding="utf-8")
    return artifacts, data, len(sample)


def test_demo_artifacts_pass_on_three_phone_cpus(demo, tmp_path, capsys):
    artifacts, data, n = demo
    assert n >= 30
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
            assert e["passed"] and e["n_examples"] == a["parity"]["n_examples"] == n + 7, e
            assert e["vs_host"]["decisive_agreement"] == 1.0, e
            rows.append([a["file"], e["cpu"], e["max_abs_diff"], e["sqnr_db"], e["vs_host"]["max_abs_diff"],
                         e["vs_host"]["agreement"], e["accuracy"], a["parity"]["accuracy"]])
    (Path(__file__).parent.parent / "out").mkdir(exist_ok=True)
    (Path(__file__).parent.parent / "out" / "arm64-parity.json").write_text(json.dumps(rows, indent=1))
    assert "On ARM64" in (tmp_path / "report.md").read_text()

