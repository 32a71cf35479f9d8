# Two commands do all the setup: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test lint format typecheck unit bench services clean

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

unit: install services
	$(PY) -m pytest

test: lint typecheck unit

bench: install services
	bash bench/run.sh

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
