# The README's two commands: `make demo` and `make test`.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: install demo test test-all clean

$(VPY):
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

# Reinstall only when pyproject.toml changed since the last install.
$(STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install -q -e '.[dev]'
	test -f .cache/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl || $(VPY) -m pip download -q --no-deps bfcl-eval==2026.3.23 -d .cache/bfcl || echo "warning: BFCL data wheel not downloaded; the bfcl benchmark is unavailable"
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/toolscale demo

test: install
	$(VPY) -m pytest -m "not slow and not gpu" $(PYTEST_ARGS)

test-all: install
	$(VPY) -m pytest -m "not gpu" $(PYTEST_ARGS)

clean:
	rm -rf demo_out runs toolscale.duckdb
