"""What the NPU file records about itself in its model metadata (written by ``lowering``, read by the runner, the
checks and the tests): the fixed length, the precisions, the mask, the outputs per token, the calibration."""

from __future__ import annotations

import json
from typing import Any

META_KEY = "mobile_export.qnn"


def facts(model: Any) -> dict[str, Any]:
    """What the export recorded in a QDQ model's metadata (``META_KEY``), {} when absent."""
    for p in model.metadata_props:
        if p.key == META_KEY:
            return json.loads(p.value)
    return {}
