"""The export: the pipeline as a story (``pipeline``) over one run's context (``context``) and its options
(``options``); lowering each format (``lowering``), the runtime check of artifacts against the fp32 reference
(``check``, also the ``parity`` command), the int8 repairs (``repair/``) and what lands beside the artifacts
(``outputs``: assets, sizes, reports, the manifest, publishing)."""
