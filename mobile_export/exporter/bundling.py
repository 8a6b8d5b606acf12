"""The export's stage that makes each artifact one file to ship: its card (the manifest's word on it, labels, model
summary, checkpoint identity), the tokenizer assets and golden examples bundled as one block, then the artifact's
own content hash written into it (``assets.identity``). After parity: the block is data no computation reads,
and the weights' bytes stay the ones checked."""

from __future__ import annotations

import json

from .. import backends
from ..assets.bundle import ASSETS_KEY, CARD, CARD_SCHEMA, IDENTITY_KEY, pack
from ..assets.identity import PLACEHOLDER, stamp
from ..assets.manifest import Manifest, file_entries
from ..core.files import LABELS, TOKENIZER_DIR
from ..core.fsutil import sha256_file
from ..model.summary import model_summary
from ..parity.checker import Checked
from .context import ExportRun
from .outputs import artifact_entry


def bundle_assets(run: ExportRun, checked: Checked, options: dict, kept: dict[str, list[str]]) -> None:
    """Each .pte and .onnx of ``checked`` rewritten to carry its block and identity (``options``: the options
    record; ``kept``: per file, the Linears a repair kept fp32); the results' bytes and sha256 follow."""
    from importlib.metadata import version

    loaded = run.loaded
    names = [TOKENIZER_DIR, *([LABELS] if (run.staging / LABELS).is_file() else [])]
    entries = file_entries(run.staging, names)
    assets = {e.path: (run.staging / e.path).read_bytes() for e in entries}
    weights = loaded.folder / loaded.weights_file
    common = {
        "card_schema": CARD_SCHEMA,
        "tool": {"name": "mobile-export", "version": version("mobile-export")},
        "checkpoint": {
            "source": loaded.source,
            "weights_file": loaded.weights_file,
            "weights_sha256": sha256_file(weights) if weights.is_file() else None,
        },
        "model": model_summary(loaded),
        "options": options,
    }
    task = loaded.task
    tokenizer = {e.path.split("/", 1)[1]: assets[e.path] for e in entries if e.path.startswith(TOKENIZER_DIR + "/")}
    labels = json.loads(assets[LABELS]).get("labels") if LABELS in assets else None
    with run.progress.step(f"bundling the app's assets ({sum(map(len, assets.values())):,} B) in each artifact"):
        for r in checked.results:
            if not backends.get_info(r.backend).bundles:
                continue
            manifest = Manifest(
                task.name, tuple(task.outputs), task.head, (artifact_entry(r),), entries, tuple(checked.tally.golden)
            )
            card = {**manifest.to_json(), **common, "kept_fp32": kept.get(r.file, [])}
            block = pack({**assets, CARD: json.dumps(card, ensure_ascii=False).encode("utf-8")})
            path = run.staging / r.file
            fmt = backends.load(r.backend)
            fmt.bundle(path, {ASSETS_KEY: block, IDENTITY_KEY: PLACEHOLDER})
            writer = backends.task_metadata(r.backend)
            if writer is not None:  # after our block, before the identity: the hash covers the task's metadata too
                r.stats["task_metadata"] = written = writer.task_metadata(path, task.name, tokenizer, labels)
                for said in (written.get("why"), written.get("differs")):
                    if said:
                        run.progress.say(f"note: {r.file}: {said}")
            files = backends.artifact_files(path)
            identity = stamp(files)
            r.bytes = sum(f.stat().st_size for f in files)
            r.sha256 = sha256_file(path)
            r.stats["bundle"] = {
                "block_bytes": len(block),
                "assets_bytes": sum(len(v) for v in assets.values()),
                "identity": identity,
            }
