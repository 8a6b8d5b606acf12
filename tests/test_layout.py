"""The package's layout: subpackages by concept, imports only downward, no import cycle.

The order is derived from the imports themselves (every ``import`` and ``from ... import`` in every
module, including those inside functions and under ``TYPE_CHECKING``), then compared with the order the
README's "Where things are" lists the subpackages in, bottom first.
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mobile_export"
FACADE = {"mobile_export", "mobile_export.__main__"}  # the public names and the console entry: above all


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (a name imported from a package counts as its submodule)."""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            submodules = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in known]
            targets.update(submodules if len(submodules) == len(node.names) else [module, *submodules])
    edges = set()
    for target in targets:
        while target not in known and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in known and target != name:
            edges.add(target)
    return edges


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def _unit(module: str) -> str:
    """The subpackage a module belongs to (``core``, ``backends``, ...)."""
    return module.split(".")[1]


def _readme_order() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)/` \|", section, flags=re.M)


def test_no_module_imports_in_a_cycle():
    """Module level: the import graph (inside functions too) is a DAG."""
    try:
        order = list(TopologicalSorter(_graph()).static_order())
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")
    assert len(order) == len(_modules())


def test_every_module_lives_in_a_subpackage():
    """Nothing but the public names and the console entry sits at the top of ``mobile_export/``."""
    loose = sorted(m for m, path in _modules().items()
                   if m.count(".") == 1 and m not in FACADE and path.name != "__init__.py")
    assert loose == [], f"modules outside a subpackage: {loose}"


def test_subpackages_import_only_downward_in_the_readme_order():
    """Package level: no cycle, and every import goes to a package listed below it in the README."""
    packages: dict[str, set[str]] = {}
    for module, targets in _graph().items():
        if module in FACADE:
            assert not any(_unit(t) == module for t in targets)
            continue
        for target in targets:
            assert target not in FACADE, f"{module} imports the package's public facade {target}; import the module"
            if _unit(target) != _unit(module):
                packages.setdefault(_unit(module), set()).add(_unit(target))
        packages.setdefault(_unit(module), set())
    try:
        derived = list(TopologicalSorter(packages).static_order())
    except CycleError as exc:
        pytest.fail(f"subpackage cycle: {' -> '.join(exc.args[1])}")
    declared = _readme_order()
    assert sorted(declared) == sorted(derived), "README's 'Where things are' must list every subpackage once"
    rank = {name: i for i, name in enumerate(declared)}
    upward = sorted(f"{a} -> {b}" for a, deps in packages.items() for b in deps if rank[b] > rank[a])
    assert upward == [], f"imports that run upward against the README's order: {upward}"


def _plant(root: Path, files: dict[str, str]) -> Path:
    """A fake ``mobile_export`` package under ``root``: ``files`` (path -> text), each folder with an ``__init__``."""
    fake = root / "mobile_export"
    for rel, text in {"__init__.py": "", **files}.items():
        path = fake / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for folder in path.relative_to(fake).parents:
            init = fake / folder / "__init__.py"
            if not init.exists():
                init.write_text("")
    return fake


@contextlib.contextmanager
def _planted(root: Path) -> Iterator[None]:
    """The checks of this file read the fake package under ``root`` while inside."""
    globals()["ROOT"], globals()["PACKAGE"] = root, root / "mobile_export"
    try:
        yield
    finally:
        globals()["ROOT"], globals()["PACKAGE"] = Path(__file__).resolve().parents[1], Path(__file__).resolve().parents[1] / "mobile_export"


def test_layout_check_catches_a_cycle_and_an_upward_import(tmp_path):
    """The checks above fail on a planted cycle and on a planted upward import."""
    fake = _plant(tmp_path, {
        "core/a.py": "from . import b\n",
        "core/b.py": "def f():\n    from .a import x\n",
        "model/m.py": "from ..core.a import y\n",
    })
    (tmp_path / "README.md").write_text("## Where things are\n\n| `model/` | m |\n| `core/` | c |\n")
    with _planted(tmp_path):
        with pytest.raises(pytest.fail.Exception, match="import cycle"):
            test_no_module_imports_in_a_cycle()
        (fake / "core/b.py").write_text("x = 1\n")
        test_no_module_imports_in_a_cycle()
        with pytest.raises(AssertionError, match="upward"):
            test_subpackages_import_only_downward_in_the_readme_order()
        (tmp_path / "README.md").write_text("## Where things are\n\n| `core/` | c |\n| `model/` | m |\n")
        test_subpackages_import_only_downward_in_the_readme_order()


# the runtimes' and converters' own libraries: imported only inside a format's package
RUNTIME_LIBRARIES = {"executorch", "onnx", "onnxruntime", "onnxruntime_qnn", "ai_edge_litert", "ai_edge_quantizer",
                     "litert_torch", "mediapipe", "tflite_runtime"}


def _format_reach() -> list[str]:
    """Modules outside ``backends/`` that import a format's package (``backends.<format>``) or a runtime's library:
    a stage must ask the registry for a capability (``backends.base.Capability``) instead."""
    known = _modules()
    formats = {m for m in known if m.count(".") == 2 and m.startswith("mobile_export.backends.")
               and known[m].name == "__init__.py"}
    found = []
    for name, path in known.items():
        if name.startswith("mobile_export.backends"):
            continue
        for target in sorted(_imports(name, path, known)):
            if any(target == f or target.startswith(f + ".") for f in formats):
                found.append(f"{name} -> {target}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            found += [f"{name} -> {n}" for n in names if n.split(".")[0] in RUNTIME_LIBRARIES]
    return found


def test_only_the_registry_reaches_a_format():
    """No module outside ``backends/`` imports a format's package or its runtime: a new format is one package plus
    one registry entry."""
    assert _format_reach() == []


def test_format_reach_check_catches_a_planted_import(tmp_path):
    """The check above fails on a stage that imports a format's module, and on one that imports a runtime."""
    _plant(tmp_path, {
        "backends/__init__.py": "import importlib\n",
        "backends/npu/__init__.py": "import onnxruntime\n",
        "backends/npu/ranges.py": "X = 1\n",
        "exporter/ok.py": "from .. import backends\n",
        "exporter/bad.py": "def f():\n    from ..backends.npu.ranges import X\n",
        "measure/run.py": "import onnxruntime as ort\n",
    })
    with _planted(tmp_path):
        assert sorted(_format_reach()) == ["mobile_export.exporter.bad -> mobile_export.backends.npu.ranges",
                                           "mobile_export.measure.run -> onnxruntime"]


def test_every_public_name_says_what_it_is():
    """``mobile_export.__all__``: each name imports and has its own docstring (not one inherited)."""
    import mobile_export

    missing = []
    for name in mobile_export.__all__:
        obj = getattr(mobile_export, name)
        doc = obj.__doc__
        inherited = isinstance(obj, type) and any(doc == base.__doc__ for base in obj.__mro__[1:])
        if not doc or not doc.strip() or inherited:
            missing.append(name)
    assert missing == []
    assert {"export", "parity_check", "size_report", "write_tokenizer", "load", "Predictor", "LoadedModel",
            "Classification", "MobileExportError", "ExitCode"} <= set(mobile_export.__all__)
