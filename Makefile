# Every target sets up its own virtual environment, so a fresh clone needs only Python 3.11+.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench sample clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

## demo: ingest the bundled sample, score, fit and export calibration.json
demo: $(STAMP)
	$(BIN)/calib fit datasets/sample --db out/demo.duckdb --out out/calibration.json

## test: lint, type-check and run the whole test suite
test: $(STAMP)
	$(BIN)/ruff check calib tests
	$(BIN)/mypy
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check calib tests
	$(BIN)/ruff format --check calib tests

bench: $(STAMP)
	$(BIN)/calib bench

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
