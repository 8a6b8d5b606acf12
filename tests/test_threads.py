"""``MOBILE_EXPORT_THREADS``: one place caps the threads a runtime takes when no count is asked for."""

from __future__ import annotations

import pytest

from mobile_export.core.errors import BadInputError
from mobile_export.core.threads import THREADS_ENV, runtime_threads


def test_the_cap_applies_only_when_no_count_is_asked_for(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert runtime_threads() is None and runtime_threads(3) == 3  # the runtime's default, or what was asked
    monkeypatch.setenv(THREADS_ENV, "1")
    assert runtime_threads() == 1 and runtime_threads(2) == 2  # bench --threads still wins


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_value_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(THREADS_ENV, value)
    with pytest.raises(BadInputError, match=f"{THREADS_ENV}=.* is not a thread count"):
        runtime_threads()


def test_onnx_runtime_sessions_take_the_cap(monkeypatch, tmp_path):
    import onnx
    from onnx import TensorProto, helper

    from mobile_export.backends.onnx.precision import session

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    for env, asked, want in (("3", None, 3), ("3", 1, 1), (None, 2, 2)):
        if env is None:
            monkeypatch.delenv(THREADS_ENV, raising=False)
        else:
            monkeypatch.setenv(THREADS_ENV, env)
        assert session(path, asked).get_session_options().intra_op_num_threads == want, (env, asked)
