# Quick start: `make demo`, `make test`. Everything installs into .venv with pip.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-all clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

# Until the trained demo model lands, the demo exports a tiny seeded ALBERT built in code.
demo: install
	$(BIN)/python -m mobile_export.tiny out/demo-checkpoint >/dev/null
	$(BIN)/mobile-export export out/demo-checkpoint --out out/demo --overwrite

test: install
	$(BIN)/python -m pytest -q

test-all: install
	$(BIN)/python -m pytest -q -m ''

clean:
	rm -rf out build *.egg-info
