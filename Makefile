# dali-dynamic-tutorials: `make run` runs the suite, `make test` tests it; both set it up first.
PYTHON ?= python3
VENV ?= .venv
# torch to install first; CI pins the CPU build (TORCH=torch==2.13.0)
TORCH ?= torch
# set SETUP= to use an interpreter that already has everything (e.g. the GPU runner)
PY ?= $(VENV)/bin/python
SETUP ?= $(VENV)/.installed
KERNEL ?= dali-dynamic-tutorials
OUT ?=

.PHONY: help setup data run test test-gpu bench lab docs clean
.DEFAULT_GOAL := help

help:
	@echo "make run       set up, build the data, run every notebook headless, print a summary"
	@echo "make test      set up and run the tests (CPU tier: unit tests, notebooks at CI scale, nbval)"
	@echo "make data      build the embedded data (MNIST LMDB, photographs) in data/"
	@echo "make lab       JupyterLab with the suite's kernel"
	@echo "make test-gpu  GPU tier: notebooks on the GPU at full size, then nbval (needs a GPU)"
	@echo "make bench     benchmark trials into results/<machine>-<date>.json"
	@echo "make docs      the static site of the committed notebooks into build/site (runs nothing)"

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet "$(TORCH)"
	$(VENV)/bin/python -m pip install --quiet -r requirements.txt -e .
	$(VENV)/bin/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (dali-dynamic-tutorials)" >/dev/null
	touch $@

setup: $(SETUP)

data: $(SETUP)
	$(PY) -m helpers.embedded_data

run: data
	$(PY) -m helpers.suite run $(if $(OUT),--out $(OUT))

test: data
	$(PY) -m pytest

GPU_RUN = $(or $(OUT),build/gpu-run)
SCALE ?= full
test-gpu: data
	$(PY) -m helpers.suite run --device gpu --scale $(SCALE) --out $(GPU_RUN)
	$(PY) -m pytest -p no:cacheprovider tests/test_gpu_run.py --gpu-run $(GPU_RUN)
	$(PY) -m pytest -p no:cacheprovider --nbval-lax $(GPU_RUN)/notebooks

bench: data
	$(PY) -m helpers.suite bench --device auto $(if $(OUT),--out $(OUT))

# the site renders the committed, executed notebooks; it never runs them (docs/mkdocs.yml;
# `mkdocs serve -f docs/mkdocs.yml` while editing)
docs: $(SETUP)
	PYTHONPATH=$(CURDIR) NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict -f docs/mkdocs.yml

lab: data
	$(VENV)/bin/jupyter lab notebooks/

clean:
	rm -rf build .pytest_cache
