"""The package's layout: subpackages by concept, imports only downward, no import cycle.

The order is derived from the imports themselves (every ``import`` and ``from ... import`` in every
module, including those inside functions and under ``TYPE_CHECKING``), then compared with the order the
"Where things are" in docs/contributing.md lists the subpackages in, bottom first.
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


def _modules(package: Path | None = None) -> dict[str, Path]:
    """Every module of ``package`` (default: ``mobile_export/``) by its dotted name."""
    found = {}
    for path in sorted((package or PACKAGE).rglob("*.py")):
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


def _graph(package: Path | None = None) -> dict[str, set[str]]:
    known = _modules(package)
    return {name: _imports(name, path, known) for name, path in known.items()}


def _unit(module: str) -> str:
    """The subpackage a module belongs to (``core``, ``backends``, ...)."""
    return module.split(".")[1]


LAYOUT_DOC = "docs/contributing.md"  # its "Where things are" table lists the subpackages, bottom first


def _readme_order() -> list[str]:
    text = (ROOT / LAYOUT_DOC).read_text(encoding="utf-8")
    section = text.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)/` \|", section, flags=re.M)


@pytest.mark.parametrize("package", ["mobile_export", "quantize"])
def test_no_module_imports_in_a_cycle(package):
    """Module level: the import graph (inside functions too) of ``mobile_export/`` and of ``quantize/`` is a DAG."""
    folder = ROOT / package
    try:
        order = list(TopologicalSorter(_graph(folder)).static_order())
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")
    assert len(order) == len(_modules(folder))


def test_every_module_lives_in_a_subpackage():
    """Nothing but the public names and the console entry sits at the top of ``mobile_export/``."""
    loose = sorted(m for m, path in _modules().items()
                   if m.count(".") == 1 and m not in FACADE and path.name != "__init__.py")
    assert loose == [], f"modules outside a subpackage: {loose}"


def test_subpackages_import_only_downward_in_the_readme_order():
    """Package level: no cycle, and every import goes to a package listed below it in docs/contributing.md."""
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
    assert sorted(declared) == sorted(derived), f"{LAYOUT_DOC}'s 'Where things are' must list every subpackage once"
    rank = {name: i for i, name in enumerate(declared)}
    upward = sorted(f"{a} -> {b}" for a, deps in packages.items() for b in deps if rank[b] > rank[a])
    assert upward == [], f"imports that run upward against docs/contributing.md's order: {upward}"


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
    (tmp_path / "docs").mkdir()
    (tmp_path / LAYOUT_DOC).write_text("## Where things are\n\n| `model/` | m |\n| `core/` | c |\n")
    with _planted(tmp_path):
        with pytest.raises(pytest.fail.Exception, match="import cycle"):
            test_no_module_imports_in_a_cycle("mobile_export")
        (fake / "core/b.py").write_text("x = 1\n")
        test_no_module_imports_in_a_cycle("mobile_export")
        with pytest.raises(AssertionError, match="upward"):
            test_subpackages_import_only_downward_in_the_readme_order()
        (tmp_path / LAYOUT_DOC).write_text("## Where things are\n\n| `core/` | c |\n| `model/` | m |\n")
        test_subpackages_import_only_downward_in_the_readme_order()


# the runtimes' and converters' own libraries: imported only inside a format's package
RUNTIME_LIBRARIES = {"executorch", "onnx", "onnxruntime", "onnxruntime_qnn", "ai_edge_litert", "ai_edge_quantizer",
                     "litert_quantizer", "litert_torch", "mediapipe", "tflite_runtime"}


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


def _trees(*packages: str) -> Iterator[tuple[str, Path, ast.Module]]:
    """(dotted module name, path, parsed tree) of every module of ``packages`` under ``ROOT``."""
    for package in packages:
        for name, path in _modules(ROOT / package).items():
            yield name, path, ast.parse(path.read_text(encoding="utf-8"))


def _classes_defined_twice() -> dict[str, list[str]]:
    """Class names defined in more than one place of ``mobile_export/`` and ``quantize/``, with where."""
    where: dict[str, list[str]] = {}
    for name, _, tree in _trees("mobile_export", "quantize"):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(name)
    return {k: v for k, v in where.items() if len(v) > 1}


def test_no_class_name_is_defined_twice():
    """One name, one class: a reader (and a traceback) never has to ask which ``Runner`` is meant."""
    assert _classes_defined_twice() == {}


def _unit_of(module: str) -> str:
    """The package a private name stays inside: a format's own package (``mobile_export.backends.qnn``), else the
    subpackage (``mobile_export.parity``), else the top package (``quantize``)."""
    parts = module.split(".")
    depth = 3 if parts[:2] == ["mobile_export", "backends"] and len(parts) > 3 else 2
    return ".".join(parts[:depth])


def _private_imports() -> list[str]:
    """``from X import _name`` (or of a ``_module``) where X is the project's and lies in another package."""
    found = []
    for name, path, tree in _trees("mobile_export", "quantize"):
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            if module.split(".")[0] not in ("mobile_export", "quantize"):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") or any(p.startswith("_") for p in module.split(".")[1:])
                if private and _unit_of(module + "." + alias.name) != _unit_of(name):
                    found.append(f"{name} imports {module}.{alias.name}")
    return found


def test_no_private_name_is_imported_across_packages():
    """A ``_name`` is its package's own: another package that needs it gets a public name."""
    assert _private_imports() == []


def _format_named_outside_backends() -> list[str]:
    """Modules outside ``backends/`` that name a format: ``Backend.<NAME>``, or a format's file suffix in a string
    that is not a docstring (help, messages, file names: each must come from the registry)."""
    from mobile_export import backends

    suffixes = {info.suffix for info in backends.BACKENDS.values()} | {
        Path(info.file_name).suffix for info in backends.BACKENDS.values()}
    pattern = re.compile(r"(" + "|".join(re.escape(s) for s in sorted(suffixes, key=len, reverse=True))
                         + r")(?![\w.])")
    found = []
    for name, _, tree in _trees("mobile_export"):
        if name == "mobile_export.backends" or name.startswith("mobile_export.backends."):
            continue
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Backend" \
                    and node.attr.isupper():
                found.append(f"{name}:{node.lineno} Backend.{node.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                    and pattern.search(node.value):
                found.append(f"{name}:{node.lineno} {pattern.search(node.value).group(0)!r}")
    return found


def test_no_format_is_named_outside_backends():
    """A new format touches its package and its registry entry only: nothing outside ``backends/`` branches on a
    format (``Backend.<NAME>``) or spells its file suffix; they ask the registry (``BackendInfo``, capabilities)."""
    assert _format_named_outside_backends() == []


MAX_MODULE_LINES = 450  # past it a module holds several concepts: split it along them


def _long_modules() -> list[str]:
    """Modules of ``mobile_export/`` and ``quantize/`` longer than ``MAX_MODULE_LINES``, with their length."""
    return [f"{name} ({n} lines)" for name, path, _ in _trees("mobile_export", "quantize")
            if (n := path.read_text(encoding="utf-8").count("\n")) > MAX_MODULE_LINES]


def test_no_module_is_over_the_line_limit():
    assert _long_modules() == []


def test_the_structure_checks_catch_what_they_look_for(tmp_path):
    """Each check above fails on a planted case and passes once it is fixed: a class defined twice, a private name
    imported across packages, a format named outside ``backends/`` (a branch and a suffix), a ``quantize`` cycle, a
    module over the line limit."""
    fake = _plant(tmp_path, {
        "backends/__init__.py": "class Backend:\n    QNN = 'qnn'\n",
        "backends/npu/__init__.py": "def _helper():\n    pass\nclass Runner:\n    pass\n",
        "parity/run.py": "from ..backends.npu import _helper\nclass Runner:\n    pass\n",
        "measure/size.py": '"""Docstrings may say .onnx."""\nfrom ..backends import Backend\n'
                           "X = Backend.QNN\nNAME = 'model.onnx'\n",
    })
    (tmp_path / "quantize").mkdir()
    (tmp_path / "quantize" / "__init__.py").write_text("")
    (tmp_path / "quantize" / "a.py").write_text("from . import b\n")
    (tmp_path / "quantize" / "b.py").write_text("def f():\n    from .a import x\n")
    with _planted(tmp_path):
        assert _classes_defined_twice() == {"Runner": ["mobile_export.backends.npu", "mobile_export.parity.run"]}
        assert _private_imports() == ["mobile_export.parity.run imports mobile_export.backends.npu._helper"]
        assert [f.split(" ", 1)[1] for f in _format_named_outside_backends()] == ["Backend.QNN", "'.onnx'"]
        with pytest.raises(pytest.fail.Exception, match="import cycle"):
            test_no_module_imports_in_a_cycle("quantize")
        (fake / "parity/run.py").write_text("from ..backends import npu\n")
        (fake / "measure/size.py").write_text('"""Docstrings may say .onnx."""\nfrom .. import backends\n')
        (tmp_path / "quantize" / "b.py").write_text("X = 1\n")
        assert _classes_defined_twice() == {} and _private_imports() == []
        assert _format_named_outside_backends() == []
        test_no_module_imports_in_a_cycle("quantize")
        (fake / "measure/long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
        assert _long_modules() == [f"mobile_export.measure.long ({MAX_MODULE_LINES + 1} lines)"]
