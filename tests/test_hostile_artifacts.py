"""A corpus of broken and hostile artifacts, built here from a tiny good export, through every command
that reads an artifact (parity, size, bench, report): exit 2, one line naming the file and the
problem, no traceback, no "unexpected error", nothing written. And artifacts of other models."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from mobile_export import Backend, ExportOptions, Quant, export
from mobile_export.cli.main import main
from hostile_commands import assert_refused_by_every_command


@pytest.fixture(scope="module")
def good(tiny_checkpoint, shared_export):
    ckpt = tiny_checkpoint("text-classification", "wordpiece")
    out = shared_export(ckpt, ExportOptions(backends=(Backend.EXECUTORCH, Backend.ONNX), quant=Quant.INT8,
                                            measure_memory=False)).out
    return ckpt, out


def _onnx_model(good_dir: Path):
    import onnx

    return onnx.load(str(good_dir / "model.onnx"))  # external data loaded


def _save_onnx(model, dest: Path) -> None:
    import onnx

    onnx.save(model, str(dest))


def _add_graph(dest: Path) -> None:
    from onnx import TensorProto, helper

    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "add",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1]) for n in "ab"],
                          [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1])])
    _save_onnx(helper.make_model(g), dest)


def _float_inputs(dest: Path) -> None:
    from onnx import TensorProto, helper

    names = ("input_ids", "attention_mask", "token_type_ids")
    g = helper.make_graph([helper.make_node("Sum", list(names), ["logits"])], "sum",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in names],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 4])])
    _save_onnx(helper.make_model(g), dest)


def _external(good_dir: Path, dest: Path, location: str) -> None:
    import onnx

    model = onnx.load(str(good_dir / "model.onnx"), load_external_data=False)
    t = next(t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    for e in t.external_data:
        if e.key == "location":
            e.value = location
    _save_onnx(model, dest)
    shutil.copy(good_dir / "model.onnx.data", dest.with_name("model.onnx.data"))


def _huge_tensor(good_dir: Path, dest: Path) -> None:
    from onnx import TensorProto

    model = _onnx_model(good_dir)
    bomb = TensorProto(name="bomb", data_type=TensorProto.FLOAT, dims=[1 << 20, 1 << 20], raw_data=b"\0" * 16)
    model.graph.initializer.append(bomb)  # 4 TiB declared, 16 bytes stored
    _save_onnx(model, dest)


def _custom_domain(good_dir: Path, dest: Path) -> None:
    from onnx import helper

    model = _onnx_model(good_dir)
    out = model.graph.output[0].name
    last = next(n for n in model.graph.node if out in n.output)
    last.output[list(last.output).index(out)] = "pre"
    model.graph.node.append(helper.make_node("Exfiltrate", ["pre"], [out], domain="com.evil"))
    model.opset_import.append(helper.make_opsetid("com.evil", 1))
    _save_onnx(model, dest)


def _truncated_data(good_dir: Path, dest: Path) -> None:
    shutil.copy(good_dir / "model.onnx", dest)
    data = (good_dir / "model.onnx.data").read_bytes()
    dest.with_name("model.onnx.data").write_bytes(data[: len(data) // 2])


def _pte_other_interface(dest: Path) -> None:
    import torch
    from executorch.exir import to_edge

    ep = torch.export.export(torch.nn.Linear(4, 2).eval(), (torch.randn(1, 4),))
    dest.write_bytes(to_edge(ep).to_executorch().buffer)


def _bytes(src_name: str, fn):
    return lambda g, d: d.write_bytes(fn((g / src_name).read_bytes()))


# name -> (file name, builder(good_dir, dest), words the one-line error must contain)
CASES = {
    "empty-pte": ("model.pte", lambda g, d: d.write_bytes(b""), "empty"),
    "empty-onnx": ("model.onnx", lambda g, d: d.write_bytes(b""), "empty"),
    "random-pte": ("model.pte", lambda g, d: d.write_bytes(os.urandom(4096)), "not an ExecuTorch program"),
    "random-onnx": ("model.onnx", lambda g, d: d.write_bytes(bytes(range(256)) * 16), "not an ONNX model"),
    "random-ort": ("model.ort", lambda g, d: d.write_bytes(os.urandom(2048)), "not an ORT-format model"),
    "truncated-pte": ("model.pte", _bytes("model.pte", lambda b: b[: len(b) // 2]), "truncated"),
    "cut-delegate-blob-pte": ("model.pte", _bytes("model.pte", lambda b: b[:-100]), "truncated"),
    "damaged-header-pte": ("model.pte", _bytes("model.pte", lambda b: b[:4] + b"\0\0\0\0" + b[8:]), "not an ExecuTorch program"),
    "onnx-renamed-pte": ("model.pte", _bytes("model.onnx", lambda b: b), "rename it .onnx"),
    "pte-renamed-onnx": ("model.onnx", _bytes("model.pte", lambda b: b), "not an ONNX model"),
    "add-graph-onnx": ("model.onnx", lambda g, d: _add_graph(d), "not an export of mobile-export"),
    "float-inputs-onnx": ("model.onnx", lambda g, d: _float_inputs(d), "not an export of mobile-export"),
    "traversal-onnx": ("model.onnx", lambda g, d: _external(g, d, "../../../../etc/passwd"), "outside the artifact's folder"),
    "absolute-data-onnx": ("model.onnx", lambda g, d: _external(g, d, "/etc/passwd"), "outside the artifact's folder"),
    "missing-data-onnx": ("model.onnx", lambda g, d: (_external(g, d, "gone.data")), "missing"),
    "truncated-data-onnx": ("model.onnx", _truncated_data, "truncated"),
    "huge-declared-tensor-onnx": ("model.onnx", _huge_tensor, "declares shape"),
    "custom-domain-onnx": ("model.onnx", _custom_domain, "custom domain 'com.evil'"),
    "symlink-to-system-file-onnx": ("model.onnx", lambda g, d: d.symlink_to("/etc/passwd"), "symlink to /etc/passwd"),
    "directory-pte": ("model.pte", lambda g, d: d.mkdir(), "not a regular file"),
    "other-interface-pte": ("model.pte", lambda g, d: _pte_other_interface(d), "not an export of mobile-export"),
}


@pytest.fixture(scope="module")
def corpus(good, tmp_path_factory):
    _, good_dir = good
    root = tmp_path_factory.mktemp("hostile")
    built = {}
    for name, (file_name, build, _) in CASES.items():
        folder = root / name
        folder.mkdir()
        build(good_dir, folder / file_name)
        built[name] = folder / file_name
    return built


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_artifact_is_refused_by_every_command(good, corpus, case, tmp_path, capsys):
    ckpt, good_dir = good
    path = corpus[case]
    expected = CASES[case][2]
    before = sorted(p.name for p in path.parent.iterdir())
    assert_refused_by_every_command(ckpt, path, tmp_path, capsys, expected)
    # `report` on a folder whose report.json does not describe this file refuses too
    described = path.suffix in (".pte", ".onnx")  # the good report describes model.pte and model.onnx
    same = described and path.is_file() and path.read_bytes() == (good_dir / path.name).read_bytes()  # .data cut
    if described and not same:
        shutil.copy(good_dir / "report.json", path.parent / "report.json")
        code = main(["report", str(path.parent)])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and "describes a different" in err, err[-2000:]
        (path.parent / "report.json").unlink()
    assert sorted(p.name for p in path.parent.iterdir()) == before  # nothing written beside it


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_good_artifacts_pass_the_same_reader(good, capsys):
    from mobile_export import backends

    ckpt, good_dir = good
    for name in ("model.pte", "model.onnx"):
        backend, real = backends.open_artifact(good_dir / name)
        assert real == (good_dir / name).resolve()
    assert main(["report", str(good_dir)]) == 0
    link = good_dir.parent / "linked.onnx"
    link.symlink_to(good_dir / "model.onnx")  # a symlink to a good export is followed, data beside the target
    assert backends.open_artifact(link)[1] == (good_dir / "model.onnx").resolve()


@pytest.mark.parametrize("other,expected_code,words", [
    ({"num_labels": 5}, 2, "export of a different model"),
    ({"hidden_size": 48, "num_attention_heads": 4, "intermediate_size": 96}, 3, "parity check failed"),
], ids=["other-labels", "other-hidden-size"])
@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_artifact_of_another_model(good, tiny_checkpoint, other, expected_code, words, capsys):
    _, good_dir = good
    ckpt = tiny_checkpoint("text-classification", "wordpiece", seed=7, **other)
    for name in ("model.onnx", "model.pte"):
        code = main(["parity", str(ckpt), str(good_dir / name), "--quiet"])
        err = capsys.readouterr().err
        assert code == expected_code and "Traceback" not in err, (name, err[-1500:])
        assert words in err, (name, err[-1500:])


@pytest.mark.full  # an export or a model run of its own: left out of make check
def test_artifact_of_a_smaller_vocabulary(tiny_checkpoint, tmp_path, capsys):
    from mobile_export.demo.tiny import build_tiny_checkpoint

    small = build_tiny_checkpoint(tmp_path / "small", texts=["Call me Ishmael.", "The quick brown fox."])
    big = tiny_checkpoint("text-classification", "wordpiece")
    assert json.loads((small / "config.json").read_text())["vocab_size"] < \
        json.loads((big / "config.json").read_text())["vocab_size"]
    out = tmp_path / "out"
    export(small, out, ExportOptions(backends=(Backend.EXECUTORCH, Backend.ONNX), measure_memory=False))
    for name in ("model.onnx", "model.pte"):
        code = main(["parity", str(big), str(out / name), "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and "not an export of this checkpoint" in err, (name, err[-1500:])


def test_data_file_label_that_is_not_a_label(good, tmp_path, capsys):
    ckpt, good_dir = good
    data = tmp_path / "data.tsv"
    data.write_text("0\tfine text\n\n\n1\tother text\nmaybe\tthird text\n", encoding="utf-8")
    code = main(["parity", str(ckpt), str(good_dir / "model.onnx"), "--data", str(data), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "line 5" in err and "'maybe'" in err, err[-1500:]
    data.write_text("0\tfine text\n\n\n1\tother text\n", encoding="utf-8")
    out = tmp_path / "rep"
    assert main(["parity", str(ckpt), str(good_dir / "model.onnx"), "--data", str(data), "--out", str(out),
                 "--quiet"]) == 0, capsys.readouterr().err[-1500:]
    assert json.loads((out / "report.json").read_text())["parity_data"]["blank_lines_skipped"] == 2
