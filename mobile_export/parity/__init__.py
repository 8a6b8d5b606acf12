"""The parity check's parts: texts and data files, the checker (texts through the fp32 reference and the
runtimes in bounded windows), streamed accumulators and metrics, top-k agreement, plot samples, one
artifact's result, which weight the int8 error comes from (``attribution``), Ray workers
(``distributed``) and the emulated ARM64 runtimes (``arm64/``). The command that composes them is
``exporter.check``."""
