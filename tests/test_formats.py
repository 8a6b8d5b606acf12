"""Every registered format implements the contract of ``backends.base.Format``, with its signatures."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from mobile_export import backends
from mobile_export.backends.base import CAPABILITIES, CAPABILITY_PROTOCOLS, CONTRACT, Capability, Format
from mobile_export.backends import Backend


@pytest.mark.parametrize("backend", list(backends.BACKENDS), ids=lambda b: b.value)
def test_format_package_implements_the_contract(backend: Backend):
    module = backends.load(backend)
    missing = [name for name in CONTRACT if not hasattr(module, name)]
    assert not missing, f"{backend.value} lacks {missing}"
    for name in CONTRACT:
        if name == "Runner":
            assert "run" in vars(module.Runner) or hasattr(module.Runner, "run")
            continue
        if name == "Options":  # the format's own export options: frozen, each with a default
            assert dataclasses.is_dataclass(module.Options) and module.Options.__dataclass_params__.frozen
            assert all(f.default is not dataclasses.MISSING for f in dataclasses.fields(module.Options))
            module.Options()
            continue
        want = [p for p in inspect.signature(getattr(Format, name)).parameters if p != "self"]
        got = list(inspect.signature(getattr(module, name)).parameters)
        assert got == want, f"{backend.value}.{name}{tuple(got)} is not the contract's {tuple(want)}"


@pytest.mark.parametrize("backend", list(backends.BACKENDS), ids=lambda b: b.value)
def test_format_package_offers_what_its_entry_declares(backend: Backend):
    """Both ways: each capability the registry entry declares is in the package, with the protocol's signatures,
    and a package carries no capability's members its entry does not declare (a stage would never ask for it)."""
    module = backends.load(backend)
    declared = backends.get_info(backend).capabilities
    for capability, members in CAPABILITIES.items():
        present = [m for m in members if hasattr(module, m)]
        if capability not in declared:
            assert present == [], f"{backend.value} has {present} but does not declare {capability.value}"
            continue
        assert present == list(members), f"{backend.value} declares {capability.value} but lacks some of {members}"
        protocol = CAPABILITY_PROTOCOLS[capability]
        for name in members:
            if isinstance(getattr(module, name), type):
                continue
            want = [p for p in inspect.signature(getattr(protocol, name)).parameters if p != "self"]
            got = list(inspect.signature(getattr(module, name)).parameters)
            assert got == want, f"{backend.value}.{name}{tuple(got)} is not {protocol.__name__}'s {tuple(want)}"


def test_capabilities_name_each_protocol_member():
    """Each capability's members are its protocol's functions (a pool: the class itself)."""
    for capability in Capability:
        protocol = CAPABILITY_PROTOCOLS[capability]
        functions = {n for n, v in vars(protocol).items() if not n.startswith("_") and callable(v)}
        wanted = {protocol.__name__} if capability is Capability.SIMULATOR_POOL else functions
        assert set(CAPABILITIES[capability]) == wanted, capability


def test_registry_asks_for_a_capability_by_entry():
    """A stage's question to the registry follows the entry: the NPU file's length from its stats, none for the
    .onnx (dynamic length) even with the same stats."""
    stats = {"qnn": {"sequence_length": 64}}
    assert backends.sequence_length(Backend.QNN, stats) == 64
    assert backends.sequence_length(Backend.ONNX, stats) is None
    assert backends.host_precision(Backend.EXECUTORCH) is None
    assert backends.host_precision(Backend.ONNX) is not None
    assert backends.precompiling(Backend.ONNX) is None and backends.diagnosing(Backend.ONNX) is None


def test_contract_lists_every_member_of_the_protocol():
    members = {n for n in vars(Format) if not n.startswith("_")} | set(Format.__annotations__)
    assert members == set(CONTRACT)


def test_runners_load_without_the_export_toolchain():
    """The emulated ARM64 worker has the runtimes but not onnx or onnxscript (the export toolchain): loading
    every format's package and its Runner class must not import them."""
    import subprocess
    import sys

    code = ("import sys\n"
            "for name in ('onnx', 'onnxscript'):\n"
            "    sys.modules[name] = None  # any import of them now raises ImportError\n"
            "from mobile_export import backends\n"
            "from mobile_export.parity.arm64 import worker\n"
            "for b in backends.BACKENDS:\n"
            "    assert backends.load(b).Runner\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
