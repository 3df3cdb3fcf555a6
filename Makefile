# make demo / make test work on a fresh machine with Python 3.11: they build .venv first.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test docs clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or run: make PYTHON=python3 ...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/redmem demo

test: $(STAMP)
	$(BIN)/python -m pytest
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $$(mktemp -d)

docs: $(STAMP)
	$(BIN)/mkdocs serve

clean:
	rm -rf $(VENV) site .hypothesis
