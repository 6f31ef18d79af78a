# Set-up and the main jobs. `make run` and `make test` create .venv and install the project first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
EXTRAS ?= test

MIN_VENV := .venv-min
MIN_STAMP := $(MIN_VENV)/.installed-stamp
# pytest-xdist workers for the fast tier (one per core here; `make test WORKERS=0` runs serially);
# a module's tests go to one worker (--dist loadscope), so its module fixtures train once
WORKERS ?= 2
LINTED := benchsuite plugins tracks tests benchmarks

.PHONY: install run test test-slow test-min browser lint format clean

$(STAMP): pyproject.toml
	@echo "installing benchsuite and its dependencies into $(VENV) (torch among them: a few minutes, once)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/benchsuite run

# The fast tier: every test not marked slow (4-9 minutes on 2 cores; docs/testing.md).
test: lint
	$(BIN)/python -m pytest -m "not slow" -n $(WORKERS) --dist loadscope

# The slow tier: end-to-end training runs, Ray, the browser, null calibration, the positive
# control (.ci/run runs both tiers).
test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

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

# The fast tests marked `floors` (statistics, plugins, the tracks' data, figures, export, tables,
# the docs' commands, the mixer contract) at the lowest declared versions.
test-min: $(MIN_STAMP)
	$(MIN_VENV)/bin/python .ci/floors.py --check
	$(MIN_VENV)/bin/python -m pytest -m "floors and not slow" -n $(WORKERS) -p no:cacheprovider

# Chromium for tests/test_browser.py (Debian's package; apt-get needs root, as in CI).
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
		{ echo "installing Chromium (Debian's package, apt-get's log in .browser-install.log)"; \
		  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
			> .browser-install.log 2>&1 || { tail -20 .browser-install.log; exit 1; }; }

# The linter and the formatter as the style: `make format` rewrites, `make lint` checks both.
lint: $(STAMP)
	$(BIN)/python -m ruff check $(LINTED)
	$(BIN)/python -m ruff format --check $(LINTED)

format: $(STAMP)
	$(BIN)/python -m ruff format $(LINTED)

clean:
	rm -rf benchsuite-results .pytest_cache .ruff_cache $(MIN_VENV)
