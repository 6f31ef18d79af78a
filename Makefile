# Set-up and the main jobs. `make run` and `make test` create .venv and install the project first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
EXTRAS ?= test

MIN_VENV := .venv-min
MIN_STAMP := $(MIN_VENV)/.installed-stamp
# The fast half of the tests, run at the lowest declared versions (make test-min): statistics
# (scipy, statsmodels), plugins (pluggy), the tracks' data (scikit-learn, statsmodels, scipy),
# figures (matplotlib, Pillow), export (pandas, pyarrow), tables and the docs' commands (rich).
MIN_TESTS ?= tests/test_stats.py tests/test_aggregate.py tests/test_registry.py \
	tests/test_track_tabular.py tests/test_track_vision.py tests/test_track_dynamics.py \
	tests/test_report_figures.py tests/test_export.py tests/test_progress.py tests/test_docs.py \
	tests/test_mixers.py

.PHONY: install run test test-min browser lint format clean

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

# A second venv with every dependency at the lowest version pyproject.toml declares
# (.ci/floors.py), torch and torchvision shared with the main venv (a .pth line: only they are
# not installed here, so everything else resolves to the floor versions first).
$(MIN_STAMP): pyproject.toml .ci/floors.py $(STAMP)
	rm -rf $(MIN_VENV)
	$(PYTHON) -m venv $(MIN_VENV)
	$(BIN)/python .ci/floors.py > $(MIN_VENV)/floors.txt
	$(MIN_VENV)/bin/python -m pip install --quiet --only-binary :all: -r $(MIN_VENV)/floors.txt \
		"setuptools>=70.1"  # builds the plugin distributions of the tests
	$(MIN_VENV)/bin/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
		> "$$($(MIN_VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/main-venv-torch.pth"
	touch $(MIN_STAMP)

test-min: $(MIN_STAMP)
	$(MIN_VENV)/bin/python .ci/floors.py --check
	$(MIN_VENV)/bin/python -m pytest -m "not slow" -p no:cacheprovider $(MIN_TESTS)

# Chromium for tests/test_browser.py (Debian's package; apt-get needs root, as in CI).
browser:
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

lint: $(STAMP)
	$(BIN)/python -m ruff check benchsuite plugins tracks tests benchmarks
	$(BIN)/python -m ruff format --check benchsuite plugins tracks tests benchmarks

format: $(STAMP)
	$(BIN)/python -m ruff format benchsuite plugins tracks tests benchmarks

clean:
	rm -rf benchsuite-results .pytest_cache .ruff_cache $(MIN_VENV)
