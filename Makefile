# One-command entry points; each creates .venv and installs the project first if needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install test demo lint typecheck pytest bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

## test: lint, type-check and run the whole test suite
test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest

## demo: two MTAs on loopback, one message of each precedence from site A to site B
demo: install
	deploy/demo.sh

## bench: run the benchmarks and print their tables
bench: install
	$(BIN)/python benchmarks/codec.py
	$(BIN)/python benchmarks/stack.py
	$(BIN)/python benchmarks/cold.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
