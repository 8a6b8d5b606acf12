"""Parity command and reports: metrics by length and across runtimes, a wrong artifact fails (exit 3),
report.json/.md/.html carry the numbers, `report` regenerates them, the HTML renders in Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from mobile_export import Backend, ExportOptions, Quant, export
from mobile_export.cli.main import main
from mobile_export.core.thresholds import Thresholds
from mobile_export.core.tasks import get_task
from mobile_export.parity.accumulate import compare
from mobile_export.parity.plots import CrossRuntimeTally, PlotSampler


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_by_length_and_cross_runtime_hand_computed():
    task = get_task("text-classification")
    ref = [[np.array([[1.0, 0.0]])], [np.array([[0.0, 2.0]])], [np.array([[3.0, 1.0]])]]
    act = [[np.array([[1.5, 0.0]])], [np.array([[0.0, 2.0]])], [np.array([[0.0, 1.0]])]]
    rows = [r.to_dict() for r in compare(task, ref, act, Thresholds(), lengths=[5, 20, 21]).by_length]
    assert [r["bucket"] for r in rows] == ["1-16", "17-32"]
    short, mid = rows
    assert short["examples"] == 1 and short["max_abs_diff"] == pytest.approx(0.5)
    assert short["sqnr_db"] == pytest.approx(10 * np.log10(1.0 / 0.25))
    assert mid["examples"] == 2 and mid["max_abs_diff"] == pytest.approx(3.0) and mid["agreement"] == 0.5
    assert mid["mean_abs_diff"] == pytest.approx(3.0 / 4)
    cross = CrossRuntimeTally(task, ["a", "b"])
    for r, a in zip(ref, act):
        cross.add({"a": r, "b": a})
    rows = [c.to_json() for c in cross.rows()]
    assert rows == [{"a": "a", "b": "b", "agreement": pytest.approx(2 / 3), "decisions": 3, "max_abs_diff": 3.0}]
    sampler = PlotSampler()
    for r, a, n in zip(ref, act, [5, 20, 21]):
        sampler.add(r, a, n, float(np.max(np.abs(r[0] - a[0]))))
    pd = sampler.plot().to_dict()
    assert pd["per_example"] == [[5, 0.5], [20, 0.0], [21, 3.0]] and len(pd["reference"]) == 6


@pytest.fixture(scope="module")
def onnx_export(tiny_checkpoint, tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "out"
    export(tiny_checkpoint(), out, ExportOptions(backends=(Backend.ONNX, Backend.EXECUTORCH), quant=Quant.INT8,
                                                 measure_memory=False))
    return out


def test_export_writes_human_reports(onnx_export):
    report = json.loads((onnx_export / "report.json").read_text())
    md = (onnx_export / "report.md").read_text()
    for a in report["artifacts"]:
        assert a["file"] in md and f"{a['parity']['max_abs_diff']:.3g}" in md
        assert a["parity"]["by_length"] and a["plot"]["per_example"]
    assert report["cross_runtime"][0]["decisions"] > 0
    assert "Across runtimes" in md and "Size (bytes)" in md and "by sequence length" in md
    html = (onnx_export / "report.html").read_text()
    assert html.count("<img src='data:image/png;base64,") >= 7  # 3 per artifact + size breakdown


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_parity_command_passes_on_its_own_checkpoint_and_report_regenerates(tiny_checkpoint, onnx_export, tmp_path,
                                                                            capsys):
    out = tmp_path / "p"
    code, stdout, err = _run(["parity", str(tiny_checkpoint()), str(onnx_export / "model.onnx"),
                              str(onnx_export / "model.pte"), "--out", str(out), "--quiet"], capsys)
    assert code == 0, err
    assert "model.onnx vs model.pte: top-1 agreement" in stdout
    report = json.loads((out / "report.json").read_text())
    assert report["passed"] and [a["quant"] for a in report["artifacts"]] == ["int8", "int8"]
    md = (out / "report.md").read_text()
    (out / "report.md").unlink()
    (out / "report.html").unlink()
    code, _, err = _run(["report", str(out)], capsys)
    assert code == 0 and (out / "report.md").read_text() == md and (out / "report.html").is_file()


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_parity_refuses_a_file_that_is_not_the_one_its_manifest_records(tiny_checkpoint, onnx_export, tmp_path,
                                                                       capsys):
    """8 bytes flipped in an exported .pte: parity names the file and both hashes and refuses (exit 2) before
    running it, unless told to check it anyway; the untouched export beside it still passes."""
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(onnx_export, folder)
    pte = folder / "model.pte"
    from mobile_export.backends.executorch.serializer import program_table

    header, program = program_table(pte)  # in the largest program constant, the word table (not in the assets)
    segment = program.segments[program.constant_segment.segment_index]
    starts = [*program.constant_segment.offsets, segment.size]
    start, end = max(zip(starts, starts[1:]), key=lambda pair: pair[1] - pair[0])
    data = bytearray(pte.read_bytes())
    middle = header.segment_base_offset + segment.offset + (start + end) // 2
    data[middle:middle + 8] = bytes(b ^ 0xFF for b in data[middle:middle + 8])
    pte.write_bytes(bytes(data))
    recorded = json.loads((folder / "manifest.json").read_text())
    sha = next(f["sha256"] for f in recorded["files"] if f["path"] == "model.pte")
    code, _, err = _run(["parity", str(tiny_checkpoint()), str(pte), "--quiet"], capsys)
    assert code == 2 and str(pte) in err and sha[:16] in err and "--ignore-manifest" in err, err
    assert len(err.strip().splitlines()) == 1
    code, _, err = _run(["parity", str(tiny_checkpoint()), str(pte), "--quiet", "--ignore-manifest"], capsys)
    assert code in (0, 3) and "manifest" not in err, err  # checked as asked: the gate decides
    code, _, err = _run(["parity", str(tiny_checkpoint()), str(folder / "model.onnx"), "--quiet"], capsys)
    assert code == 0, err


def test_wrong_artifact_fails_with_exit_3(tiny_checkpoint, onnx_export, tmp_path, capsys):
    """An artifact exported from a different checkpoint (other seed) must not pass."""
    out = tmp_path / "p"
    code, _, err = _run(["parity", str(tiny_checkpoint(seed=1)), str(onnx_export / "model.onnx"), "--out", str(out),
                         "--quiet"], capsys)
    assert code == 3
    line = err.strip().splitlines()[-1]
    assert "parity check failed" in line and "SQNR" in line and "report.md" in line
    assert "FAIL" in (out / "report.md").read_text()
    assert json.loads((out / "report.json").read_text())["passed"] is False


def test_parity_and_report_bad_input(tiny_checkpoint, tmp_path, capsys):
    code, _, err = _run(["parity", str(tiny_checkpoint()), str(tmp_path / "missing.onnx")], capsys)
    assert code == 2 and "does not exist" in err
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    code, _, err = _run(["parity", str(tiny_checkpoint()), str(tmp_path / "junk.onnx")], capsys)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    code, _, err = _run(["report", str(tmp_path)], capsys)
    assert code == 2 and "report.json" in err


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.needs_tool("chromium")
def test_html_report_renders_in_headless_chromium(onnx_export):
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                           "--enable-logging=stderr", "--v=0", "--dump-dom", (onnx_export / "report.html").as_uri()],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert 'data-rendered="ok"' in proc.stdout, proc.stdout[:500]
    assert len(re.findall(r"<img ", proc.stdout)) >= 7 and proc.stdout.count("<table>") >= 4
    assert proc.stdout.count("verdict: ") == 1  # said once
    console_errors = [l for l in proc.stderr.splitlines() if "CONSOLE" in l and ("Uncaught" in l or "Error" in l)]
    assert not console_errors, console_errors


@pytest.mark.needs_tool("chromium")
@pytest.mark.needs_tool("cjk-font")
def test_chinese_text_renders_as_glyphs_in_the_report_font(tmp_path):
    """Two different Chinese strings in the report's font stack render as two different images: glyphs, not the
    same empty boxes (which is what Chromium draws where no CJK font is installed)."""
    from mobile_export.reports.render import CSS

    shots = []
    for i, text in enumerate(("这个手机很好用", "质量太差了不要买")):
        page = tmp_path / f"{i}.html"
        page.write_text(f"<html><head><meta charset='utf-8'><style>{CSS}</style></head><body><p>{text}</p>"
                        "</body></html>", encoding="utf-8")
        shot = tmp_path / f"{i}.png"
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                        "--window-size=400,120", page.as_uri()], capture_output=True, timeout=120)
        shots.append(shot.read_bytes())
    assert shots[0] != shots[1]


def test_report_size_table_says_what_size_says_and_merges_an_exact_emulation(onnx_export, capsys):
    """The report's size rows split other constants from format overhead as ``size`` does, with the same figures;
    the depth plot draws a real series and the emulation it equals as one line."""
    from mobile_export.reports.charts import _distinct
    from mobile_export.reports.records import DepthSeries

    md = (onnx_export / "report.md").read_text()
    report = json.loads((onnx_export / "report.json").read_text())
    size = next(a["size"] for a in report["artifacts"] if a["file"] == "model.onnx")
    code, out, _ = _run(["size", str(onnx_export / "model.onnx"), "--no-memory"], capsys)
    assert code == 0
    overhead = size["overhead_bytes"] - size["other_constants_bytes"] - size["bundle_bytes"]
    assert f"{'format overhead':<26}{overhead:>14,} B" in out, out
    assert f"| format overhead | {overhead:,} |" in md and f"| other constants | {size['other_constants_bytes']:,} |" in md
    emulated = DepthSeries("ONNX Runtime (per tensor), emulated", False, (30.0, 29.0))
    real = DepthSeries("model.onnx, real", True, (30.05, 28.95))
    other = DepthSeries("model.pte, real", True, (31.0, 29.0))
    drawn = _distinct([emulated, real, other])
    assert [s.label for s in drawn] == ["model.onnx, real = ONNX Runtime (per tensor), emulated (within 0.1 dB)",
                                        "model.pte, real"]
    assert _distinct([emulated, DepthSeries("x, real", True, (30.5, 29.0))])[0] == emulated  # 0.5 dB apart: both


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_quant_detected_from_the_artifact(tiny_checkpoint, tmp_path):
    """Default parity thresholds follow what the file stores, for every format (fp32 gets the strict ones)."""
    from mobile_export.backends import detect_quant

    for quant in (Quant.INT8, Quant.FP32):
        out = tmp_path / quant.value
        export(tiny_checkpoint(), out, ExportOptions(backends=(Backend.ONNX, Backend.ORT), quant=quant,
                                                     measure_memory=False))
        assert detect_quant(out / "model.onnx") is quant
        assert detect_quant(out / "model.ort") is quant


def test_report_json_reads_back_as_typed_records(onnx_export):
    """report.json parses into the records the reports render from, which write it back to the same JSON; a file
    that is not a report is refused."""
    from mobile_export.backends.base import DelegateCoverage, MatmulCoverage
    from mobile_export.measure.memory import MemoryFigures
    from mobile_export.reports.records import ReportRecord

    report = json.loads((onnx_export / "report.json").read_text())
    record = ReportRecord.from_json(report)
    assert record.passed is report["passed"] and [a.file for a in record.artifacts] == ["model.onnx", "model.pte"]
    onnx_art, pte_art = record.artifacts
    assert isinstance(onnx_art.parity.coverage, MatmulCoverage) and onnx_art.parity.coverage.quant is Quant.INT8
    assert isinstance(pte_art.parity.coverage, DelegateCoverage) and pte_art.parity.coverage.xnnpack_calls >= 1
    assert onnx_art.parity.sqnr_db == report["artifacts"][0]["parity"]["sqnr_db"]
    assert onnx_art.size is not None and onnx_art.size["groups"] and "memory" not in onnx_art.size  # not measured
    assert len(onnx_art.plot.per_example) == len(report["artifacts"][0]["plot"]["per_example"])
    assert record.cross_runtime[0].decisions == report["cross_runtime"][0]["decisions"]
    # written and read by the same records: the same JSON, nothing lost, nothing added
    assert json.loads(json.dumps(record.to_json())) == report
    figures = MemoryFigures(128, 5, 4, 3, 2, 1, 6, 7, 8)
    assert MemoryFigures.from_dict(figures.to_dict()) == figures
    with pytest.raises(KeyError):
        ReportRecord.from_json({"tool": "something else"})


def test_a_model_that_shares_nothing_gets_no_sharing_verdict():
    """ALBERT's shared layer and a tied table are "sharing"; a BERT stores each weight once, and its summary says
    that, both ways, rather than "sharing preserved" / "NOT preserved"."""
    from mobile_export.reports.tables import sharing_words as _sharing_words

    albert = {"shares_weights": True}
    bert = {"shares_weights": False}
    assert _sharing_words(albert, True) == "sharing preserved"
    assert _sharing_words(albert, False) == "sharing NOT preserved"
    assert _sharing_words(albert, False, memory=True) == "memory sharing NOT preserved"
    assert _sharing_words(bert, True) == "each weight stored once"
    assert _sharing_words(bert, False) == "a weight stored twice"
    assert _sharing_words(bert, True, memory=True) == "each weight packed once"
    assert _sharing_words({}, True) == "sharing preserved"  # a report written before the field: as it said then
    assert _sharing_words(bert, None) == "sharing n/a"
