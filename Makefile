# The README's two commands: `make demo` and `make test`.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=
# Three pytest workers on two cores: the SLURM tests mostly wait on the scheduler, so a third worker keeps both
# cores busy (worksteal evens out the long tests). PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 3
XDIST := $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist worksteal)

.PHONY: install demo test test-all golden clean

$(VPY):
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

# Reinstall only when pyproject.toml changed since the last install.
$(STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install -q -e '.[dev]'
	test -f .cache/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl || $(VPY) -m pip download -q --no-deps bfcl-eval==2026.3.23 -d .cache/bfcl || echo "warning: BFCL data wheel not downloaded; the bfcl benchmark is unavailable"
	touch $(STAMP)

# The jail for generated tool code (bubblewrap): installed if missing, checked every time.
install: $(STAMP)
	@synth/envs/sandbox-setup.sh || echo "warning: generated tool code cannot be isolated here; toolscale envs check will refuse to run it"

demo: install
	$(VENV)/bin/toolscale demo

# The tests marked `slurm` need the one-node dev cluster: bring it up (or reuse a running one),
# run pytest with the markers given, and stop it again only if this target started it, keeping
# pytest's exit code. TOOLSCALE_SKIP_SLURM=1 runs without it (the slurm tests are then skipped).
define pytest_with_cluster
	@was_up=1; \
	if [ "$${TOOLSCALE_SKIP_SLURM:-0}" != 1 ]; then \
	  slurm/dev-cluster.sh status >/dev/null 2>&1 || was_up=0; \
	  slurm/dev-cluster.sh up || { echo "make $@: the dev SLURM cluster did not start (TOOLSCALE_SKIP_SLURM=1 skips its tests)"; \
	    [ $$was_up = 1 ] || slurm/dev-cluster.sh down; exit 1; }; \
	  eval "$$(slurm/dev-cluster.sh env)"; \
	fi; \
	$(VPY) -m pytest -m "$(1)" $(XDIST) $(PYTEST_ARGS); rc=$$?; \
	[ $$was_up = 1 ] || slurm/dev-cluster.sh down; \
	exit $$rc
endef

# The default suite (what CI runs).
test: install
	$(call pytest_with_cluster,not slow and not gpu)

# Everything but GPU tests: the default suite plus the slow ones, with the same dev cluster.
test-all: install
	$(call pytest_with_cluster,not gpu)

# The one way to regenerate golden files (designs, report, sbatch file, synthesized rows) after an intended
# change: every test using the `golden` fixture rewrites its file, then compares with it. Review the diff.
golden: install
	$(VPY) -m pytest -m golden --regen-golden -q $(PYTEST_ARGS)

clean:
	rm -rf demo_out runs toolscale.duckdb
