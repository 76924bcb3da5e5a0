# Every target sets up its own virtual environment, so a fresh clone needs only Python 3.11+.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-node peers lint bench bench-ingest bench-scale sample vectors runtime-js runtime-npm dist clean

$(STAMP): pyproject.toml calib/core/version.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

## demo: ingest the bundled sample, score, fit and export calibration.json
demo: $(STAMP)
	$(BIN)/calib fit datasets/sample --db out/demo.duckdb --out out/calibration.json

## test: lint, type-check, check the layers (import-linter), run the whole test suite, then the
## TypeScript runtime's tests in Node (build, drift of the shipped JavaScript, conformance vectors)
test: $(STAMP)
	$(BIN)/ruff check calib tests
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(MAKE) --no-print-directory peers
	$(BIN)/pytest -q
	$(MAKE) --no-print-directory test-node

## peers: the pinned ccusage the tests compare calib with (tests/peers); without npm, or offline, those
## comparisons skip
peers:
	@if command -v npm >/dev/null 2>&1; then \
		cd tests/peers && npm install --no-package-lock --no-audit --no-fund --loglevel=error \
			|| echo "ccusage could not be installed: the comparisons with it skip"; \
	else \
		echo "SKIPPED: ccusage needs npm, which is not on PATH: the comparisons with it skip"; \
	fi

## test-node: the pinned TypeScript compiler from npm (tests/node/package-lock.json), then node --test
test-node:
	@if command -v npm >/dev/null 2>&1; then \
		cd tests/node && npm ci --no-audit --no-fund --loglevel=error && npm test; \
	else \
		echo "SKIPPED: the TypeScript runtime's tests need Node.js 18+ and npm, which are not on PATH"; \
	fi

## vectors: regenerate the runtimes' conformance vectors from calib/runtime.py
vectors: $(STAMP)
	$(BIN)/python -m calib.synth.runtime_vectors tests/conformance/runtime_vectors.json

## runtime-js: rebuild calib/calib-runtime.mjs and .d.mts from calib/runtime.ts (commit both)
runtime-js:
	cd tests/node && npm ci --no-audit --no-fund --loglevel=error && npm run ship

## runtime-npm: the same build as the npm package calib-runtime, packed to dist/calib-runtime-VERSION.tgz
## (VERSION: calib/runtime-npm/package.json's; npm install that file; needs Node.js 18+ and npm, not .venv)
runtime-npm:
	cd tests/node && npm ci --no-audit --no-fund --loglevel=error && npm run --silent pack-runtime

## dist: the sdist and the wheel in dist/, which `pipx install`, `uv tool install` and `pip install` take
## (built from the sdist in an isolated environment, so the wheel holds only what the sdist does)
dist: $(STAMP)
	rm -f dist/calib-*.whl dist/calib-*.tar.gz
	$(BIN)/python -m build --outdir dist .
	@ls -l dist/calib-*

lint: $(STAMP)
	$(BIN)/ruff check calib tests
	$(BIN)/ruff format --check calib tests

bench: $(STAMP)
	$(BIN)/calib bench

## bench-ingest: cold and warm `calib ingest` of a 317 MB gemini-cli corpus beside ccusage (developers')
bench-ingest: $(STAMP)
	$(BIN)/python tests/benchmarks/bench_ingest.py

## bench-scale: wall time and peak memory of ingest, score, fit, report and replay at 1x, 4x and 10x
## that corpus, beside ccusage (developers'; 10x needs about 8 GB free under .bench/ and takes a while).
## Other scales or options: make bench-scale SCALES=1,4 BENCH_ARGS='--repeats 1 --texts copied'
SCALES ?= 1,4,10
BENCH_ARGS ?=
bench-scale: $(STAMP)
	$(BIN)/python tests/benchmarks/bench_scale.py --scales $(SCALES) $(BENCH_ARGS)

## sample: regenerate the bundled synthetic dataset (datasets/README.md lists these commands)
sample: $(STAMP)
	rm -rf datasets/sample
	$(BIN)/calib sample --tool gemini-cli --layout gemini-jsonl --sessions 8 --seed 101 --out datasets/sample/gemini-cli-jsonl
	$(BIN)/calib sample --tool gemini-cli --layout gemini-json-parts --sessions 6 --seed 102 --out datasets/sample/gemini-cli-json
	$(BIN)/calib sample --tool opencode --layout opencode-db --sessions 8 --seed 206 --out datasets/sample/opencode-db
	$(BIN)/calib sample --tool opencode --layout opencode-export --sessions 6 --seed 202 --out datasets/sample/opencode-export
	$(BIN)/calib sample --tool dexto --layout dexto-log --sessions 8 --seed 302 --out datasets/sample/dexto-log
	$(BIN)/calib sample --tool claude-code --layout claude-code-jsonl --sessions 6 --seed 404 --out datasets/sample/claude-code
	$(BIN)/calib sample --tool codex --layout codex-jsonl --sessions 6 --seed 505 --out datasets/sample/codex
	$(BIN)/calib sample --tool qwen-code --layout qwen-code-jsonl --sessions 6 --seed 609 --out datasets/sample/qwen-code
	$(BIN)/calib sample --tool llxprt --layout llxprt-chats-usage --sessions 6 --seed 707 --out datasets/sample/llxprt
	$(BIN)/calib sample --tool cline --layout cline-sdk --sessions 6 --seed 803 --out datasets/sample/cline-sdk
	$(BIN)/calib sample --tool cline --layout cline-task --sessions 4 --seed 851 --out datasets/sample/cline-task
	$(BIN)/calib sample --tool roo-code --layout roo-code-task --sessions 6 --seed 903 --out datasets/sample/roo-code

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache tests/node/node_modules tests/node/build tests/peers/node_modules build dist
