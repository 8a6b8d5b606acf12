"""The app's reader of a .tflite's metadata (android_demo/core ``TfliteMetadata``: LiteRT's Java Interpreter hands out
none, and the export's assets and facts live there) gives Python's entries byte for byte, and refuses a truncated
or crafted file with one line and exit 2 instead of reading outside it."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
from pathlib import Path

import pytest

from mobile_export import Backend, ExportOptions
from mobile_export.backends.litert import flatbuffer

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "android_demo" / "core" / "src" / "main" / "java"
JSON_JAR = "/usr/share/java/com.android.json.jar"

pytestmark = [pytest.mark.needs_tool("java"), pytest.mark.java]


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """Runs ``TfliteMetadata``'s main on a file: (exit code, stdout, stderr)."""
    classes = tmp_path_factory.mktemp("core-classes")
    subprocess.run(["javac", "-encoding", "UTF-8", "--release", "17", "-cp", JSON_JAR, "-d", str(classes),
                    *map(str, CORE.rglob("*.java"))], check=True)

    def run(path: Path) -> tuple[int, str, str]:
        proc = subprocess.run(["java", "-cp", f"{classes}:{JSON_JAR}", "org.mobileexport.core.TfliteMetadata",
                               str(path)], capture_output=True, text=True, timeout=60)
        return proc.returncode, proc.stdout, proc.stderr

    return run


@pytest.fixture(scope="module")
def tflite(tiny_checkpoint, shared_export) -> Path:
    ckpt = tiny_checkpoint("text-classification", "wordpiece")
    return shared_export(ckpt, ExportOptions(backends=(Backend.LITERT,), measure_memory=False)).out / "model.tflite"


def test_java_reads_every_metadata_entry_as_python_does(reader, tflite):
    code, out, err = reader(tflite)
    assert code == 0, err
    got = {k: base64.b64decode(v) for k, v in json.loads(out).items()}
    assert got == flatbuffer.stored_entries(tflite.read_bytes(), tflite.name)
    assert {"mobile_export.litert", "mobile_export_assets", "mobile_export_identity", "TFLITE_METADATA"} <= set(got)


def _metadata_buffer_index_at(data: bytes) -> int:
    """The file offset of the first metadata entry's buffer index (found by value after changing it in Python)."""
    model = flatbuffer.read(data, "good")
    index = model.metadata[0].buffer
    marked = flatbuffer.read(data, "good")
    marked.metadata[0].buffer = 0x7ABCDEF1
    raw = flatbuffer.write(marked)
    at = raw.find(struct.pack("<I", 0x7ABCDEF1))
    assert at > 0 and struct.unpack_from("<I", flatbuffer.write(model), at)[0] == index
    return at


def _cut_in_assets(data: bytes) -> bytes:
    """The file cut in the middle of the bundled assets' bytes (what the app reads first)."""
    assets = flatbuffer.stored_entries(data, "good")["mobile_export_assets"]
    return data[: data.find(assets) + len(assets) // 2]


CASES = {
    "truncated-in-assets": _cut_in_assets,
    "truncated-header": lambda b: b[:64],
    "root-outside": lambda b: struct.pack("<I", 0x7FFFFFF0) + b[4:],
    "no-identifier": lambda b: b[:4] + b"ONNX" + b[8:],
}


@pytest.mark.parametrize("case", sorted(CASES) + ["buffer-index-outside"])
def test_java_refuses_a_broken_tflite_in_one_line(reader, tflite, tmp_path, case):
    data = tflite.read_bytes()
    if case == "buffer-index-outside":
        good = flatbuffer.write(flatbuffer.read(data, "good"))  # the same model written by us: offsets we know
        at = _metadata_buffer_index_at(good)
        bad = good[:at] + struct.pack("<I", 0x7ABCDEF1) + good[at + 4 :]
    else:
        bad = CASES[case](data)
    path = tmp_path / "model.tflite"
    path.write_bytes(bad)
    code, out, err = reader(path)
    assert code == 2, (out, err)
    assert out == "" and len(err.strip().splitlines()) == 1 and "export it again" in err
    assert "Exception" not in err and "\tat " not in err
