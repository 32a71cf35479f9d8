# Two commands do all the setup: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test lint format typecheck unit bench services clean adk-ui adk-ui-venv

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(VENV)/bin/baton web examples/

lint: install
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/ruff format --check src tests bench examples

format: install
	$(VENV)/bin/ruff check --fix src tests bench examples
	$(VENV)/bin/ruff format src tests bench examples

typecheck: install
	$(VENV)/bin/pyright

services:
	@bash scripts/services.sh

# google-adk (the reference) in its own venv, for its web UI's files; baton never imports it.
adk-ui-venv:
	@bash scripts/adk_venv.sh

# The reference's web UI at http://127.0.0.1:8001/, calling baton at 127.0.0.1:8000.
adk-ui: install adk-ui-venv
	$(PY) scripts/adk_ui.py --backend http://127.0.0.1:8000 --port 8001

# Compiled first: with PYTHONDONTWRITEBYTECODE set (as on the test hosts), every baton
# process a test starts would compile baton's source again (0.3 s of CPU each).
# Then two test processes (pytest-xdist), each taking the next test when it is free;
# then, alone, the tests in tests/operation that stop and start a database server
# (marked restarts_database), which would break the tests beside them. Both parts run
# even when the first fails.
unit: install services adk-ui-venv
	$(PY) -m compileall -q src tests
	status=0; \
	$(PY) -m pytest -n 2 --dist worksteal -m "not restarts_database" || status=1; \
	$(PY) -m pytest -m restarts_database tests/operation || status=1; \
	exit $$status

test: lint typecheck unit

bench: install services
	bash bench/run.sh

clean:
	rm -rf $(VENV) .venv-adk .pytest_cache .ruff_cache
