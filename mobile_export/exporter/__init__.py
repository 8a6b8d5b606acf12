"""The export: the pipeline in named steps (``pipeline``), the manifest an app reads (``manifest``) and the
runtime check of artifacts against the fp32 reference (``check``, also the ``parity`` command)."""
