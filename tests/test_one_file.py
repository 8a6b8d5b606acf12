"""One file to ship: each .pte and .onnx carries its export's tokenizer, labels, card and identity, and `run`,
`load`, `parity` and `size` need nothing beside it; a changed file or a broken block is refused in one line."""

from __future__ import annotations

import base64
import io
import json
import shutil
import struct
import zipfile

import numpy as np
import pytest

from blocks import copy_alone, with_strings
from mobile_export import Backend, ExportOptions, Quant, load
from mobile_export.assets.bundle import ASSETS_KEY, CARD, IDENTITY_KEY, pack, unpack
from mobile_export.backends import executorch as et
from mobile_export.backends import onnx as ox
from mobile_export.cli.main import main
from mobile_export.core.errors import ArtifactLoadError, BadInputError

# make check leaves this file out (each test lowers or runs a model for tens of seconds; BENCHMARKS.md, tiers)
pytestmark = pytest.mark.full

FORMATS = {"model.pte": et, "model.onnx": ox}


@pytest.fixture(scope="module")
def tiny(tiny_checkpoint, shared_export):
    """A tiny classifier exported with and without its assets bundled (the same lowering: cached)."""
    ckpt = tiny_checkpoint("text-classification", "wordpiece")
    options = ExportOptions(backends=(Backend.EXECUTORCH, Backend.ONNX), quant=Quant.INT8, measure_memory=False)
    embedded = shared_export(ckpt, options).out
    plain = shared_export(ckpt, ExportOptions(**{**options.__dict__, "bundle": False})).out
    return ckpt, embedded, plain


def _texts(split, n):
    return [line.split("\t", 1)[1] for line in split.read_text(encoding="utf-8").splitlines()[:n]]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_demo_file_alone_gives_the_folders_labels_and_scores(demo_int8, tmp_path, name, capsys):
    result, split, _ = demo_int8
    alone = copy_alone(result.out / name, tmp_path / "alone")
    assert sorted(p.name for p in alone.parent.iterdir()) == sorted(
        p.name for p in (result.out / name, result.out / (name + ".data")) if p.is_file()
    )
    texts = _texts(split, 40)
    backend = Backend.EXECUTORCH if name.endswith(".pte") else Backend.ONNX
    folder, single = load(result.out, backend=backend), load(alone)
    assert single.backend is backend and single.labels == folder.labels and len(folder.labels) == 2
    for text in texts:
        a, b = folder(text), single(text)
        assert a.label == b.label
        assert max(abs(a.scores[k] - b.scores[k]) for k in a.scores) <= 1e-4
    argv = ["run", "--json", *texts[:5]]
    assert main([*argv[:1], str(result.out), "--backend", backend.value, *argv[1:]]) == 0
    from_folder = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main([argv[0], str(alone), *argv[1:]]) == 0
    from_file = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["result"]["label"] for r in from_file] == [r["result"]["label"] for r in from_folder]
    for f, g in zip(from_file, from_folder):
        assert max(abs(f["result"]["scores"][k] - g["result"]["scores"][k]) for k in f["result"]["scores"]) <= 1e-4
    # what the file carries is what the folder holds beside it
    files, card = _carried(alone)
    for relative, data in files.items():
        if relative != CARD:
            assert data == (result.out / relative).read_bytes(), relative
    manifest = json.loads((result.out / "manifest.json").read_text())
    assert card["golden"] == manifest["golden"] and card["task"] == manifest["task"]
    entry = next(a for a in manifest["artifacts"] if a["file"] == name)
    assert card["artifacts"] == [entry]
    assert card["checkpoint"]["weights_sha256"] and card["tool"]["name"] == "mobile-export"


def _carried(path):
    from mobile_export.assets.bundle import carried

    found = carried(path, str(path))
    assert found is not None
    return found


def test_demo_files_grow_by_less_than_the_assets_they_replace(demo_int8):
    result, _, _ = demo_int8
    out = result.out
    assets = sum(p.stat().st_size for p in (out / "tokenizer").iterdir()) + (out / "labels.json").stat().st_size
    report = json.loads((out / "report.json").read_text())
    for a in report["artifacts"]:
        carried = a["stats"]["bundle"]
        assert carried["assets_bytes"] == assets
        assert carried["block_bytes"] < assets
        size = a["size"]
        assert carried["block_bytes"] < size["bundle_bytes"] < assets  # the block, the identity
        assert sum(size["groups"].values()) + size["overhead_bytes"] == size["bytes"]


def test_plain_export_is_the_same_weights_with_nothing_carried(tiny, tmp_path, capsys):
    """--no-bundle: the artifacts carry nothing, their weights are the same bytes, and the bundled ones grew by less
    than the tokenizer and labels they carry."""
    from mobile_export.measure.size import artifact_blobs

    _, embedded, plain = tiny
    assets = sum(p.stat().st_size for p in (embedded / "tokenizer").iterdir()) + (embedded / "labels.json").stat().st_size
    for name, fmt in FORMATS.items():
        assert set(fmt.bundled(plain / name)) & {ASSETS_KEY, IDENTITY_KEY} == set()
        assert {ASSETS_KEY, IDENTITY_KEY} <= set(fmt.bundled(embedded / name))
        assert sorted(artifact_blobs(plain / name)[0]) == sorted(artifact_blobs(embedded / name)[0])
        grown = (embedded / name).stat().st_size - (plain / name).stat().st_size
        assert 0 < grown < assets, (name, grown, assets)
        alone = copy_alone(plain / name, tmp_path / name)
        code = main(["run", str(alone), "hello"])
        err = capsys.readouterr().err
        assert code == 2 and "carries no bundled assets" in err and "Traceback" not in err, err
    manifest = json.loads((plain / "manifest.json").read_text())
    assert json.loads((plain / "report.json").read_text())["options"]["bundle"] is False
    assert {f["path"] for f in manifest["files"]} >= {"model.pte", "model.onnx", "tokenizer/tokenizer.json"}


def test_parity_and_size_of_a_lone_file(tiny, tmp_path, capsys):
    ckpt, embedded, _ = tiny
    report = json.loads((embedded / "report.json").read_text())
    for name in FORMATS:
        alone = copy_alone(embedded / name, tmp_path / name)
        assert main(["size", str(alone), "--no-memory", "--json"]) == 0
        size = json.loads(capsys.readouterr().out)[0]
        folder_size = next(a["size"] for a in report["artifacts"] if a["file"] == name)
        assert size["groups"] == folder_size["groups"] and size["sharing_preserved"] is True  # the card's model
        assert size["bundle_bytes"] == folder_size["bundle_bytes"] > 0
        assert main(["parity", str(ckpt), str(alone), "--quiet"]) == 0, capsys.readouterr().err[-1500:]
        capsys.readouterr()


def _tamper(path, offset_from_end=200):
    data = bytearray(path.read_bytes())
    data[-offset_from_end] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_a_changed_byte_is_refused_by_its_own_identity(tiny, tmp_path, name, capsys):
    ckpt, embedded, _ = tiny
    alone = copy_alone(embedded / name, tmp_path / "alone")
    _tamper(alone.with_name(name + ".data") if name.endswith(".onnx") else alone)  # a weight's byte
    with pytest.raises(ArtifactLoadError, match="changed or corrupted after export"):
        load(alone)
    for argv in (["run", str(alone), "hello"], ["parity", str(ckpt), str(alone), "--quiet"]):
        code = main(argv)
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.startswith("mobile-export")]
        assert code == 2 and len(lines) == 1 and "Traceback" not in err, err[-1500:]
        assert "it carries (changed or corrupted after export)" in lines[0] and name in lines[0], lines[0]
    # the same file unchanged passes: the check is not a refusal of every copy
    good = copy_alone(embedded / name, tmp_path / "good")
    assert load(good)("hello").label


def _zip_with(entries: dict[str, bytes], declared: dict[str, int] | None = None) -> str:
    """A block whose zip holds ``entries``; ``declared``: a member's uncompressed size patched (a lying zip)."""
    raw = bytearray(base64.b64decode(pack(entries)))
    for member, size in (declared or {}).items():
        at = raw.find(b"PK\x01\x02")
        while at >= 0:  # central directory entries: uncompressed size at +24, name length at +28, name at +46
            length = struct.unpack_from("<H", raw, at + 28)[0]
            if raw[at + 46 : at + 46 + length].decode() == member:
                struct.pack_into("<I", raw, at + 24, size)
            at = raw.find(b"PK\x01\x02", at + 4)
    return base64.b64encode(bytes(raw)).decode()


CARD_JSON = json.dumps({"task": "text-classification", "artifacts": []}).encode()
# name -> (the block's text, words the one-line error must contain)
BLOCKS = {
    "not-base64": ("mobile-export!!", "not base64"),
    "not-a-zip": (base64.b64encode(b"PK not really a zip").decode(), "not a readable zip"),
    "no-card": (pack({"tokenizer/vocab.txt": b"[PAD]\n"}), "no card.json"),
    "card-not-json": (pack({CARD: b"{not json"}), "is not JSON"),
    "card-not-object": (pack({CARD: b"[1, 2]"}), "not a JSON object"),
    "bomb": (_zip_with({CARD: CARD_JSON, "tokenizer/big": b"\0" * 1000}, {"tokenizer/big": 2**31}), "inflates to"),
    "traversal": (None, "not a plain path"),
    "card-describes-nothing": (pack({CARD: CARD_JSON}), "export it again"),
}


def _traversal_block() -> str:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr(CARD, CARD_JSON)
        z.writestr("../../etc/cron.d/x", b"* * * * * root true\n")
    return base64.b64encode(buffer.getvalue()).decode()


@pytest.mark.parametrize("case", sorted(BLOCKS))
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_broken_embedded_block_is_one_line(tiny, tmp_path, case, name, capsys):
    ckpt, embedded, _ = tiny
    text, words = BLOCKS[case]
    (tmp_path / "case").mkdir()
    dest = with_strings(embedded / name, tmp_path / "case" / name, {ASSETS_KEY: text or _traversal_block()})
    before = sorted(p.name for p in dest.parent.iterdir())
    with pytest.raises(BadInputError, match=words.replace(".", r"\.")):
        load(dest)
    commands = [["run", str(dest), "hello"]]
    if case != "card-describes-nothing":  # parity reads no more of the card than its head: that block is sound to it
        commands.append(["parity", str(ckpt), str(dest), "--quiet"])
    for argv in commands:
        code = main(argv)
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.startswith("mobile-export")]
        assert code == 2 and len(lines) == 1 and "Traceback" not in err, (argv[0], err[-1500:])
        assert words in lines[0] and name in lines[0], (argv[0], lines[0])
    assert sorted(p.name for p in dest.parent.iterdir()) == before  # nothing extracted or written beside it
    if case == "not-base64":  # asked to check it anyway, parity runs the weights, which are sound
        assert main(["parity", str(ckpt), str(dest), "--quiet", "--ignore-manifest"]) == 0, capsys.readouterr().err


def test_block_limits_are_checked_before_inflating(monkeypatch):
    from mobile_export.assets import bundle as block

    text = pack({CARD: b"{}", "tokenizer/vocab.txt": b"x" * 5000})
    assert set(unpack(text, "f")) == {CARD, "tokenizer/vocab.txt"}  # within the limits: read
    monkeypatch.setattr(block, "MAX_TEXT_CHARS", len(text) - 1)
    with pytest.raises(ArtifactLoadError, match="over the"):
        unpack(text, "f")
    monkeypatch.setattr(block, "MAX_TEXT_CHARS", len(text))
    monkeypatch.setattr(block, "MAX_MEMBER_BYTES", 4999)
    with pytest.raises(ArtifactLoadError, match="inflates to 5,000 B"):
        unpack(text, "f")


def test_identity_stamp_and_verify_both_ways(tmp_path):
    from mobile_export.assets.identity import PLACEHOLDER, stamp, verify

    main_file, data = tmp_path / "m.bin", tmp_path / "m.bin.data"
    body = np.random.default_rng(0).bytes(3 << 20)  # over the 1 MiB read size: the marker across a boundary
    cut = (1 << 20) - 30
    main_file.write_bytes(body[:cut] + PLACEHOLDER.encode() + body[cut:])
    data.write_bytes(b"weights" * 1000)
    value = stamp([main_file, data])
    verify([main_file, data], value, "m.bin")  # its own bytes pass
    copy = tmp_path / "copy.bin"
    shutil.copy(main_file, copy)
    verify([copy, data], value, "copy.bin")  # a copy anywhere passes
    data.write_bytes(b"weights" * 999 + b"weightz")
    with pytest.raises(ArtifactLoadError, match="with m.bin.data hashes to"):
        verify([main_file, data], value, "m.bin")
    with pytest.raises(ArtifactLoadError, match="malformed identity"):
        verify([main_file, data], "mobile-export-sha256:xyz", "m.bin")
