"""Repaired int8 artifacts on the phone's instruction set: an export with outlier channels (folded exactly before
lowering; weights kept fp32 by ``--repair``) checked on the ARM64 builds of ExecuTorch and ONNX Runtime under qemu, against the same
fp32 reference and gate as on this host.

Needs the prepared environment (``make arm64-env``); ``make test-arm64`` runs these (CI does)."""

from __future__ import annotations

import json

import pytest

from mobile_export.cli.main import main
from outlier_models import plant_residual, planted_checkpoint

CPUS = "cortex-a53,cortex-a76"  # without and with the dot-product instructions the int8 kernels use

pytestmark = pytest.mark.arm64


@pytest.mark.parametrize("plant", ["exact", "residual"])
def test_repaired_artifacts_pass_on_phone_cpus(tiny_checkpoint, tmp_path, capsys, monkeypatch, plant):
    source = tiny_checkpoint("text-classification")
    if plant == "exact":  # 50x channels a fold removes exactly: folded before lowering, nothing left to repair
        ckpt = planted_checkpoint(source, tmp_path / "ckpt", 50.0)
    else:  # 40x residual-stream channels (both CPU formats quantize per token and pass at 20x): the .onnx keeps
        # weights fp32; the .pte is at the gate's edge (19-20 dB by host), repaired with it when it fails
        ckpt = planted_checkpoint(source, tmp_path / "ckpt", 40.0, plant_residual)
    out = tmp_path / "export"
    assert main(["export", str(ckpt), "--out", str(out), "--no-memory", "--quiet"]) == 0, capsys.readouterr().err
    report = json.loads((out / "report.json").read_text())
    if plant == "exact":
        assert report["folds"]["taken"] and report["repair"] is None
    else:
        attempt = next(a for a in report["repair"]["attempts"] if a["method"] == report["repair"]["applied"])
        files = {o["file"] for o in attempt["artifacts"]}
        assert report["repair"]["applied"] == "mixed" and "model.onnx" in files
    host = {a["file"]: a["parity"] for a in report["artifacts"]}

    checked = tmp_path / "parity"
    # run from a folder without the project: the emulated Python must find the packages where they are installed
    monkeypatch.chdir(tmp_path)
    code = main(["parity", str(ckpt), str(out / "model.pte"), str(out / "model.onnx"), "--isa", "arm64",
                 "--cpus", CPUS, "--out", str(checked)])
    printed = capsys.readouterr()
    print(printed.out)
    assert code == 0, printed.out + printed.err
    for a in json.loads((checked / "report.json").read_text())["artifacts"]:
        isa = a["parity"]["isa"]
        assert [e["cpu"] for e in isa] == CPUS.split(","), isa
        for e in isa:  # the gate passes on the phone's kernels, with the host's decisions
            assert e["passed"] and e["vs_host"]["decisive_agreement"] == 1.0, (a["file"], e)
            assert abs(e["sqnr_db"] - host[a["file"]]["sqnr_db"]) < 3.0, (a["file"], e["sqnr_db"], host[a["file"]])
