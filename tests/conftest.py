"""Shared fixtures: no network, ever; tiny seeded ALBERT checkpoints built in code and cached per session."""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
import pickle
import shutil
import socket
import subprocess
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
# one cache of derived tables (keyed by the libraries) for the workers and the processes they start, not the user's
# own (test_diskcache computes them in a cache of its own)
os.environ.setdefault("MOBILE_EXPORT_CACHE", os.path.join("/tmp", f"mobile-export-tests-{os.getuid()}"))
if os.environ.get("PYTEST_XDIST_WORKER"):
    # the workers share the cores: one thread each for ONNX Runtime, ExecuTorch and PyTorch (and the processes
    # tests start), else their spinning thread pools oversubscribe the cores (BENCHMARKS.md, "The test suite's time")
    os.environ.setdefault("MOBILE_EXPORT_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

_real_connect = socket.socket.connect


def _guarded_connect(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and (host.startswith("127.") or host in ("localhost", "::1") or host.startswith("/")):
        return _real_connect(self, address)
    raise RuntimeError(f"test tried the network ({address}); tests must never do that")


socket.socket.connect = _guarded_connect


def _built_once(tmp_path_factory, kind: str, key, build):
    """What ``build(dest)`` makes, built once per test run (xdist workers share it), keyed by ``key``.

    The first process to ask builds it under a lock in the run's shared temporary folder; the others wait
    and read the same files. ``build`` returns any picklable value (paths inside ``dest`` stay valid).
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, above every worker's own
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    dest = root / "built-once" / f"{kind}-{digest}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    done = dest.with_name(dest.name + ".pickle")
    with open(dest.with_name(dest.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir()
            value = build(dest)
            done.write_bytes(pickle.dumps(value))
        return pickle.loads(done.read_bytes())


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """tiny_checkpoint(task, tokenizer="wordpiece", **overrides) -> folder; built once per argument set."""
    from mobile_export.core.quiet import quiet_libraries
    from mobile_export.demo.tiny import build_tiny_checkpoint

    quiet_libraries()

    def make(task: str = "text-classification", tokenizer: str = "wordpiece", seed: int = 0, **overrides):
        key = (task, tokenizer, seed, repr(sorted(overrides.items())))
        return _built_once(tmp_path_factory, f"ckpt-{task}-{tokenizer}", key,
                           lambda dest: build_tiny_checkpoint(dest, task=task, tokenizer=tokenizer, seed=seed,
                                                              **overrides))

    return make


@pytest.fixture(scope="session")
def shared_export(tmp_path_factory):
    """shared_export(checkpoint, options) -> ExportResult of ``export(checkpoint, OUT, options)``, exported once
    per test run for every test that exports the same checkpoint with the same options (``result.out`` is
    OUT). The folder is shared: tests read it; one that changes files copies it first. At the end of the
    run every shared folder must hold exactly what its export wrote."""
    from mobile_export import export

    used: dict[Path, dict[str, str]] = {}

    def build(ckpt, options):
        def run(dest: Path):
            result = export(ckpt, dest / "o", options)
            (dest / "digests.json").write_text(json.dumps(_digests(dest / "o")))
            return result

        return run

    def make(ckpt, options):
        result = _built_once(tmp_path_factory, "export", (str(ckpt), repr(options)), build(ckpt, options))
        used[result.out] = json.loads((result.out.parent / "digests.json").read_text())
        return result

    yield make
    changed = [str(out) for out, digests in used.items() if _digests(out) != digests]
    assert not changed, f"a test changed a shared export folder (copy it first): {changed}"


@pytest.fixture(scope="session")
def demo_int8(tmp_path_factory):
    """What `make demo` exports (the demo's int8 .pte and .onnx, parity on the whole test split), without measuring
    RAM, built once per run: (ExportResult, the split file, its number of texts)."""
    from mobile_export import ExportOptions, Quant, export
    from mobile_export.demo import MODEL_DIR
    from mobile_export.demo.data import write_split

    def build(dest: Path):
        data = dest / "test.tsv"
        n = write_split("test", data)
        result = export(MODEL_DIR, dest / "out", ExportOptions(quant=Quant.INT8, data=str(data), measure_memory=False))
        return result, data, n

    return _built_once(tmp_path_factory, "demo-int8", ("int8", "test split"), build)


@pytest.fixture(scope="session")
def demo_quantized(tmp_path_factory):
    """The demo exported to int8 and int4 (.pte and .onnx, gates on): {quant: folder}, built once per run."""
    from mobile_export.cli.main import main
    from mobile_export.demo import MODEL_DIR

    def build(dest: Path) -> dict[str, Path]:
        for quant in ("int8", "int4"):
            assert main(["export", str(MODEL_DIR), "--out", str(dest / quant), "--quant", quant, "--no-memory", "--quiet"]) == 0
        return {quant: dest / quant for quant in ("int8", "int4")}

    return _built_once(tmp_path_factory, "demo-quantized", ("int8", "int4"), build)


def _module_digest(module) -> str:
    """What decides an artifact's bytes inside ``module``: every submodule's type and plain attributes
    (heads, pooling, output names, the model config) and every parameter and buffer's bytes."""
    import torch

    h = hashlib.sha256()

    def value(v) -> None:
        if isinstance(v, torch.Tensor):
            h.update(f"{v.dtype}{tuple(v.shape)}".encode())
            h.update(v.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
        elif hasattr(v, "to_json_string"):
            h.update(v.to_json_string().encode())
        else:
            h.update(repr(v).encode())

    for name, sub in module.named_modules():
        h.update(f"{name}:{type(sub).__module__}.{type(sub).__qualname__}".encode())
        for key, v in sorted(vars(sub).items()):
            if key not in ("_parameters", "_buffers", "_modules") and not key.startswith("_"):
                h.update(key.encode())
                value(v)
    for key, v in sorted(module.state_dict(keep_vars=False).items()):
        h.update(key.encode())
        value(v)
    return h.hexdigest()


_LOWER_FRESH = [False]  # set while a test that patches anything runs: its exports lower for real


@pytest.fixture(scope="session", autouse=True)
def _artifact_cache(tmp_path_factory):
    """Each artifact lowered once per test run: ``lowering.lower`` (torch.export / ONNX export, quantization,
    lowering) for the same backend, module (weights, structure, head) and precision options gives the same
    bytes (exports are deterministic, tested in subprocesses by test_cli), so every later export of it in
    any worker copies the first one's files. A test that uses ``monkeypatch`` exports fresh."""
    from mobile_export import backends
    from mobile_export.exporter import lowering

    real = lowering.lower

    def lower(run, backend, wrapper, keep=(), widen=()):
        if _LOWER_FRESH[0]:
            return real(run, backend, wrapper, keep, widen)
        key = (backend.value, _module_digest(wrapper), repr(run.plan(backend, keep, widen)))

        def build(dest: Path):
            staged = real(dataclasses.replace(run, staging=dest), backend, wrapper, keep, widen)
            # every file the lowering left: the artifact's, and what the export reads after it (the NPU file's float
            # model, for its diagnosis)
            files = [str(p) for p in sorted(dest.iterdir()) if p.is_file()]
            assert set(files) >= {str(p) for p in backends.artifact_files(staged.path)}
            return files, staged.path.name, staged.stats, staged.seconds

        files, name, stats, seconds = _built_once(tmp_path_factory, f"artifact-{backend.value}", key, build)
        for f in files:
            shutil.copyfile(f, run.staging / Path(f).name)
        return lowering.Lowered(backend, run.staging / name, stats, seconds)

    lowering.lower = lower
    yield
    lowering.lower = real


@pytest.fixture(autouse=True)
def _fresh_lowering_when_patched(request):
    _LOWER_FRESH[0] = "monkeypatch" in request.fixturenames
    yield
    _LOWER_FRESH[0] = False


# A model wide enough that one weight matrix stands far above graph overhead (sharing and int4 size tests).
WIDE = dict(hidden_size=256, intermediate_size=1024, num_attention_heads=4, embedding_size=32,
            max_position_embeddings=64, initializer_range=0.02)
WIDE_LAYER_PARAMS = 4 * 256 * 256 + 2 * 256 * 1024  # one (shared) layer's Linear weights


@pytest.fixture(scope="session")
def wide_export(tiny_checkpoint, shared_export):
    """wide_export(backend, quant, layers=1) -> ExportResult of the WIDE feature-extraction ALBERT, exported
    once per argument set for the whole run (int4 with the limits its random weights allow, see test_int4)."""
    from mobile_export import ExportOptions, Quant, Thresholds

    def make(backend, quant, layers: int = 1):
        ckpt = tiny_checkpoint("feature-extraction", "wordpiece", num_hidden_layers=layers, **WIDE)
        limits = (Thresholds(min_agreement=0.98, min_sqnr_db=5.0, min_example_sqnr_db=3.0)
                  if quant is Quant.INT4 else None)
        return shared_export(ckpt, ExportOptions(backends=(backend,), quant=quant, measure_memory=False,
                                                 thresholds=limits))

    return make


# Headline suites that need tools from outside PyPI. Without the tool the suite is skipped locally
# (and named at the end of the run with the command that installs it); under CI (CI=true) a missing
# tool fails those tests instead, so CI can never pass by skipping them.
_TOOLS = {
    "java": ("the Java tokenizer parity and JUnit suites",
             lambda: shutil.which("javac") is not None and os.path.exists("/usr/share/java/com.android.json.jar")
             and os.path.exists("/usr/share/java/junit4.jar"),
             "apt-get install -y default-jdk-headless junit4 libandroid-json-java"),
    "chromium": ("the HTML report rendering test",
                 lambda: any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")),
                 "apt-get install -y chromium"),
    "cjk-font": ("the check that Chinese text in a report renders as glyphs",
                 lambda: shutil.which("fc-list") is not None and subprocess.run(
                     ["fc-list", ":lang=zh"], capture_output=True, text=True).stdout.strip() != "",
                 "apt-get install -y fonts-wqy-microhei"),
}


# Files by measured test time, longest first (`make test` with --durations=0 on an idle 2-core host, BENCHMARKS.md
# "CI inside its budget"). The Makefile's xdist runs keep collection order (--no-loadscope-reorder)
# and hand each worker whole files, so the long files start first and the short ones fill in at the end: ordered by
# test count instead, a one-test file of a minute ran alone at the end of the run. Files not listed follow in
# collection order.
LONGEST_FIRST = (
    "test_matrix.py", "test_one_file.py", "test_sharing.py", "test_qnn.py", "test_repair.py",
    "test_tied_embeddings.py", "test_litert.py", "test_int4.py", "test_cli.py", "test_run.py", "test_families.py",
    "test_heads.py", "test_output.py", "test_pte_entry.py", "test_shapes.py", "test_parity_scale.py", "test_roundtrip.py",
    "test_delegate_passes.py", "test_size.py",
    # `make test-arm64`: with each worker holding one file ahead, this order splits its ~900 s of tests about evenly
    "test_arm64.py", "test_arm64_sme2.py", "test_arm64_repair.py", "test_arm64_families.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's tests keep their order


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_tool(name): needs a tool from outside PyPI (see conftest._TOOLS)")


def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs_tool"):
        name = mark.args[0]
        what, available, install = _TOOLS[name]
        if available():
            continue
        if os.environ.get("CI") == "true":
            pytest.fail(f"{what} need {name}, which is missing on this CI machine; .ci/run must `{install}`")
        pytest.skip(f"needs {name}: {install}")


def pytest_terminal_summary(terminalreporter):
    # counted from the skip reports, which reach the controller from every xdist worker
    counts: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else ""
        for name in _TOOLS:
            if reason.startswith(f"Skipped: needs {name}:") or reason.startswith(f"needs {name}:"):
                counts[name] = counts.get(name, 0) + 1
    for name, count in sorted(counts.items()):
        what, _, install = _TOOLS[name]
        terminalreporter.write_line(f"SKIPPED SUITE: {what} ({count} tests) need {name}; install it with: {install}")
