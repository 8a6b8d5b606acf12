"""The demo's NPU file on every one of its 1,667 test reviews, on the HTP simulator, against fp32 PyTorch.

    python benchmarks/npu_demo.py [--out out/npu-demo] [--activations 16|8] [--procs 2] [--limit N]

Exports ``mobile_export/demo/model`` with ``--backend qnn`` and default options (``--activations 8``: w8a8, its gates
loosened so that the file is written whatever it scores), then runs each test review through ``mobile_export.load(OUT,
"qnn")`` (the product's path: tokenizer cut at the file's length, padded, the simulator as SM8650) in ``--procs``
processes side by side, and the fp32 model on the same token ids. Prints accuracy both ways, labels equal, and the
logits' SQNR against fp32 (median and lowest review). Numbers: BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

GATES_OFF = ["--min-agreement", "0", "--min-sqnr", "-1000", "--min-example-sqnr", "-1000", "--repair", "off"]


def worker(out: str, start: int, stop: int) -> None:
    """Print one JSON line per review of ``[start, stop)``: label, the file's logits, fp32's logits."""
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification

    from mobile_export import load
    from mobile_export.demo import MODEL_DIR
    from mobile_export.parity.corpus import load_reviews

    predictor = load(out, "qnn")
    model = AutoModelForSequenceClassification.from_pretrained(str(MODEL_DIR)).eval()
    for text, label in load_reviews()["test"][start:stop]:
        enc, (logits, *_) = predictor._outputs(text)
        ids = torch.from_numpy(enc.ids[None, :])
        with torch.no_grad():
            ref = model(input_ids=ids, attention_mask=torch.ones_like(ids), token_type_ids=torch.zeros_like(ids))
        row = {"label": label, "npu": np.asarray(logits[0]).tolist(), "fp32": ref.logits[0].tolist()}
        print(json.dumps(row), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="out/npu-demo")
    p.add_argument("--activations", type=int, choices=(8, 16), default=16)
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--limit", type=int, default=0, help="the first N reviews only (0: all)")
    p.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        worker(a.worker[0], int(a.worker[1]), int(a.worker[2]))
        return 0
    import numpy as np

    from mobile_export.parity.corpus import load_reviews

    out = Path(a.out) / f"w8a{a.activations}"
    cmd = [sys.executable, "-m", "mobile_export", "export", "mobile_export/demo/model", "--out", str(out)]
    cmd += ["--backend", "qnn", "--qnn-activations", str(a.activations), "--overwrite", "--no-memory"]
    t0 = time.monotonic()
    subprocess.run(cmd + (GATES_OFF if a.activations == 8 else []), check=True)
    export_s = time.monotonic() - t0
    n = len(load_reviews()["test"])
    n = min(n, a.limit) if a.limit else n
    bounds = [round(k * n / a.procs) for k in range(a.procs + 1)]
    t0 = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", str(out), str(lo), str(hi)], stdout=subprocess.PIPE, text=True
        )
        for lo, hi in zip(bounds, bounds[1:])
    ]
    outputs = [proc.communicate()[0] for proc in procs]  # the simulator logs to stdout too: rows are the JSON lines
    rows = [json.loads(line) for text in outputs for line in text.splitlines() if line.startswith("{")]
    wall = time.monotonic() - t0
    labels = np.array([r["label"] for r in rows])
    npu, fp32 = np.array([r["npu"] for r in rows]), np.array([r["fp32"] for r in rows])
    sqnr = 10 * np.log10(np.sum(fp32**2, 1) / np.maximum(np.sum((fp32 - npu) ** 2, 1), 1e-30))
    report = json.loads((out / "report.json").read_text())
    parity = report["artifacts"][0]["parity"]
    print(f"w8a{a.activations}, {len(rows)} test reviews, {a.procs} simulator processes, {wall / 60:.1f} min")
    print(f"accuracy: NPU {np.mean(npu.argmax(1) == labels):.2%}, fp32 {np.mean(fp32.argmax(1) == labels):.2%}")
    print(f"labels equal to fp32's: {int(np.sum(npu.argmax(1) == fp32.argmax(1)))} / {len(rows)}")
    print(f"logits SQNR vs fp32: median {np.median(sqnr):.1f} dB, lowest {np.min(sqnr):.1f} dB")
    print(f"file bytes {(out / 'model.qnn.onnx').stat().st_size:,}; export {export_s:.0f} s; built-in parity "
          f"SQNR {parity['sqnr_db']:.1f} dB, lowest example {parity['min_example_sqnr_db']:.1f} dB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
