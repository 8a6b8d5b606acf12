"""The demo's .tflite on the phone's instruction set: LiteRT's ARM64 interpreter (its XNNPACK delegate, as on the
phone) under qemu, for two phone CPU generations, against fp32 and against this host's run of the same file.

Needs the prepared environment (``make arm64-env``); ``make test-arm64`` runs it (CI does)."""

from __future__ import annotations

import json

import pytest

from arm64_demo import DEMO, write_sample
from mobile_export.cli.main import main

CPUS = "cortex-a53,cortex-a76"

pytestmark = pytest.mark.arm64


def test_demo_tflite_passes_on_two_phone_cpus(tmp_path, capsys):
    out = tmp_path / "export"
    assert main(["export", str(DEMO), "--out", str(out), "--backend", "litert", "--no-memory", "--quiet"]) == 0
    data = tmp_path / "sample.tsv"
    # the file pads every text to its 128 tokens, so every text runs the same kernels: one review a bucket up to 128
    # tokens (and the checker's texts) is what the gate judges on each CPU model
    n = write_sample(data, per_bucket=1, longest=0, up_to=128)
    code = main(["parity", str(DEMO), str(out / "model.tflite"), "--data", str(data), "--isa", "arm64",
                 "--cpus", CPUS, "--out", str(tmp_path / "parity")])
    said = capsys.readouterr()
    assert code == 0, said.out + said.err
    [artifact] = json.loads((tmp_path / "parity" / "report.json").read_text())["artifacts"]
    isa = artifact["parity"]["isa"]
    assert [e["cpu"] for e in isa] == CPUS.split(",")
    for e in isa:  # every text the file takes (at most its 128 tokens), judged on each CPU model
        assert e["passed"] and e["n_examples"] == artifact["parity"]["n_examples"] >= min(n, 12), e
        assert e["vs_host"]["decisive_agreement"] == 1.0, e
