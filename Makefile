# Set-up and the main jobs. `make run` and `make test` create .venv and install the project first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
EXTRAS ?= test

.PHONY: install run test lint format clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/benchsuite run

test: $(STAMP)
	$(BIN)/python -m ruff check benchsuite plugins tracks tests benchmarks
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/python -m ruff check benchsuite plugins tracks tests benchmarks
	$(BIN)/python -m ruff format --check benchsuite plugins tracks tests benchmarks

format: $(STAMP)
	$(BIN)/python -m ruff format benchsuite plugins tracks tests benchmarks

clean:
	rm -rf benchsuite-results .pytest_cache .ruff_cache
