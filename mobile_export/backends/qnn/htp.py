"""ONNX Runtime sessions on Qualcomm's HTP (the Hexagon NPU) through the QNN execution provider plugin: on a
Snapdragon phone the NPU, here the x86-64 HTP backend of the QNN SDK, which simulates its fixed-point
arithmetic. CPU fallback is disabled, so a session that loads runs every node on the HTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .socs import SIMULATED, Soc

EP_NAME = "QNNExecutionProvider"
MASKED = -100.0  # the additive attention mask: bounded, so real scores keep their resolution beside it (BENCHMARKS.md)

_registered: list[bool] = []


def _devices(ort: Any) -> list:
    import onnxruntime_qnn

    if not _registered:
        try:
            ort.register_execution_provider_library(EP_NAME, onnxruntime_qnn.get_library_path())
        except Exception as exc:  # registered already by someone else in this process
            if "already" not in str(exc).lower():
                raise
        _registered.append(True)
    return [d for d in ort.get_ep_devices() if d.ep_name == EP_NAME]


def available() -> bool:
    """Whether the QNN execution provider (the ``[qnn]`` extra, onnxruntime-qnn) is installed here."""
    import importlib.util

    return importlib.util.find_spec("onnxruntime_qnn") is not None


def _options(soc: Soc, config: dict[str, str], severity: int = 3):
    import onnxruntime as ort
    import onnxruntime_qnn

    ort.set_default_logger_severity(severity)  # the provider's capability notes go to the process' default logger
    devices = _devices(ort)
    if not devices:
        raise RuntimeError("ONNX Runtime lists no QNN device; reinstall the [qnn] extra (onnxruntime-qnn)")
    options = ort.SessionOptions()
    options.log_severity_level = severity
    options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    for key, value in config.items():
        options.add_session_config_entry(key, value)
    options.add_provider_for_devices(
        devices,
        {"backend_path": onnxruntime_qnn.get_qnn_htp_path(), "soc_model": soc.soc_model, "htp_arch": soc.htp_arch},
    )
    return options


def session(source: Path | bytes, soc: Soc = SIMULATED, severity: int = 3):
    """An ONNX Runtime session of the model at ``source`` (a QDQ model, or one precompiled for ``soc``; or its
    serialized bytes) with every node on the HTP of ``soc`` (no CPU fallback); ONNX Runtime's log from
    ``severity`` up (0: verbose, QNN's own log included)."""
    import onnxruntime as ort

    model = source if isinstance(source, bytes) else str(source)
    return ort.InferenceSession(model, sess_options=_options(soc, {}, severity))


def compile_context(path: Path, dest: Path, soc: Soc) -> None:
    """The QDQ model at ``path`` compiled by QNN for ``soc``'s HTP and written to ``dest`` as an EPContext model
    with the context binary inside it (one file; the model metadata, assets included, carried over)."""
    import onnxruntime as ort

    config = {"ep.context_enable": "1", "ep.context_embed_mode": "1", "ep.context_file_path": str(dest)}
    ort.InferenceSession(str(path), sess_options=_options(soc, config))


def version() -> str:
    """onnxruntime-qnn's version, the QNN SDK it carries, and the HTP architecture and SoC its sessions target."""
    import onnxruntime
    import onnxruntime_qnn

    sdk = getattr(onnxruntime_qnn, "build_and_package_info", None)
    qnn = getattr(sdk, "qnn_version", None) if sdk is not None else None
    sdk_version = f" (QNN SDK {qnn})" if qnn else ""
    return (
        f"onnxruntime {onnxruntime.__version__}, onnxruntime-qnn {onnxruntime_qnn.__version__}{sdk_version}; "
        f"HTP v{SIMULATED.htp_arch} of {SIMULATED.name}"
    )
