"""An export used without its checkpoint: the folder (manifest, checksums, labels, tokenizer), the
``Predictor`` behind ``mobile_export.load``, decoding of task outputs by transformers' pipelines' rules,
and the typed results."""
