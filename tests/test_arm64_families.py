"""The encoder families on the phone's instruction set: a BERT and a DistilBERT int8 export (two inputs), .pte and
.onnx, through the ARM64 builds of both runtimes under qemu, on the oldest and newest default phone CPUs; a RoBERTa
and an XLM-R int8 export (their position ids computed in the artifact, outside XNNPACK in the .pte) on the oldest
(its kernels are the others' already; one CPU keeps the run's time).

Needs the prepared environment (``make arm64-env``); ``make test-arm64`` runs it (CI does)."""

from __future__ import annotations

import json

import pytest

from mobile_export.cli.main import main
from mobile_export.demo.tiny import NATIVE_TOKENIZER

CPUS = {"bert": "cortex-a53,cortex-a710", "distilbert": "cortex-a53,cortex-a710", "roberta": "cortex-a53",
        "xlm-roberta": "cortex-a53"}

pytestmark = pytest.mark.arm64


@pytest.mark.parametrize("family", list(CPUS))
def test_family_exports_pass_on_phone_cpus(tiny_checkpoint, tmp_path, capsys, family):
    ckpt = tiny_checkpoint("text-classification", NATIVE_TOKENIZER.get(family, "wordpiece"), family=family,
                           num_hidden_layers=2)
    out = tmp_path / "o"
    assert main(["export", str(ckpt), "--out", str(out), "--quant", "int8", "--no-memory", "--quiet"]) == 0
    artifacts = [out / "model.pte", out / "model.onnx"]
    code = main(["parity", str(ckpt), *map(str, artifacts), "--isa", "arm64", "--cpus", CPUS[family],
                 "--out", str(tmp_path / "p")])
    printed = capsys.readouterr()
    assert code == 0, printed.out + printed.err
    report = json.loads((tmp_path / "p" / "report.json").read_text())
    assert report["model"]["model_type"] == family
    for a in report["artifacts"]:
        isa = a["parity"]["isa"]
        assert [e["cpu"] for e in isa] == CPUS[family].split(",")
        for e in isa:  # each phone CPU runs every text and agrees with this host's run of the same file
            assert e["passed"] and e["n_examples"] == a["parity"]["n_examples"], e
            assert e["vs_host"]["decisive_agreement"] == 1.0, e
