"""The export folder's file names: what ``export`` writes beside the artifacts and the readers look for.

The artifacts' own names (``model.pte``, ``model.onnx`` + ``model.onnx.data``, ``model.ort``) are the
format registry's (``backends``), the only place a suffix is named.
"""

from __future__ import annotations

MANIFEST = "manifest.json"  # what an app needs: files with checksums, calling conventions, golden examples
LABELS = "labels.json"  # labels by class index and the function from logits to scores
REPORT_JSON = "report.json"  # the stable, versioned report (reports.records.REPORT_SCHEMA)
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
FAILED_REPORT = "report.failed.json"  # written beside (not into) the destination when an export is refused
TOKENIZER_DIR = "tokenizer"  # the tokenizer assets an app needs, in this subfolder
TOKENIZER_SETTINGS = "tokenizer_settings.json"
TOKENIZER_JSON = "tokenizer.json"  # the backend tokenizer exactly as transformers runs it
CHAR_TABLE = "char_table.json"  # the Java tokenizer's Unicode tables, probed
