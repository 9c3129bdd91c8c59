# One-command entry points; each creates .venv and installs the project first if needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install check test demo lint typecheck pytest bench lab lab-quick clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@# An editable install leaves pyproject.toml's data-files out (PEP 660 does not ask for
	@# them): the man pages and completions are linked from the checkout instead, where
	@# `python -m docgen` keeps them current.
	mkdir -p $(VENV)/share/man/man1 $(VENV)/share/man/man5 $(VENV)/share/bash-completion/completions
	ln -sf $(CURDIR)/man/*.1 $(VENV)/share/man/man1/
	ln -sf $(CURDIR)/man/*.5 $(VENV)/share/man/man5/
	ln -sf $(CURDIR)/completion/* $(VENV)/share/bash-completion/completions/
	touch $@

## check: lint, type-check and run the tests not marked slow (the edit-test loop: under
## three minutes; the slow ones are daemon processes, crashes, fuzz, tshark, the lab, systemd
## and the property tests over every legal form)
check: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest -m "not slow"

## test: lint, type-check and run the whole test suite, slow tests included (what CI runs)
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

## lab: the two-site DiffServ lab at 512 kbit/s, every profile (root; about 20 minutes; docs/lab.md)
lab: install
	$(BIN)/python -m lab

## lab-quick: the same at 4 Mbit/s with smaller messages (root; about a minute)
lab-quick: install
	$(BIN)/python -m lab --quick

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
