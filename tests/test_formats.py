"""Every registered format implements the contract of ``backends.base.Format``, with its signatures."""

from __future__ import annotations

import inspect

import pytest

from mobile_export import backends
from mobile_export.backends.base import CONTRACT, Format
from mobile_export.config import Backend


@pytest.mark.parametrize("backend", list(backends.BACKENDS), ids=lambda b: b.value)
def test_format_package_implements_the_contract(backend: Backend):
    module = backends.load(backend)
    missing = [name for name in CONTRACT if not hasattr(module, name)]
    assert not missing, f"{backend.value} lacks {missing}"
    for name in CONTRACT:
        if name == "Runner":
            assert "run" in vars(module.Runner) or hasattr(module.Runner, "run")
            continue
        want = [p for p in inspect.signature(getattr(Format, name)).parameters if p != "self"]
        got = list(inspect.signature(getattr(module, name)).parameters)
        assert got == want, f"{backend.value}.{name}{tuple(got)} is not the contract's {tuple(want)}"


def test_contract_lists_every_member_of_the_protocol():
    members = {n for n in vars(Format) if not n.startswith("_")} | set(Format.__annotations__)
    assert members == set(CONTRACT)
