# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
# They make .venv with a Python >= 3.12, found in this order: PYTHON=... when given,
# python3.13, python3.12 (each only if it runs: pyenv shims fail unless a version is
# selected), the interpreters under pyenv's versions/ (newest first), python3.
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
MIN_PYTHON := 3.12
PYENV_ROOT ?= $(HOME)/.pyenv
# Prints the interpreter's own path (not a shim's) if it runs and is recent enough.
comma := ,
IS_RECENT := import sys; print(sys.executable) if sys.version_info >= ($(subst .,$(comma),$(MIN_PYTHON))) else sys.exit(1)

.PHONY: demo test docs test-variation format clean

# A .venv made by an older Python (or whose interpreter no longer runs) is made again.
ifneq ($(wildcard $(VENV)),)
  ifeq ($(shell $(BIN)/python -c '$(IS_RECENT)' 2>/dev/null),)
    $(info $(VENV) was not made by a Python >= $(MIN_PYTHON): removing it to make it again)
    $(shell rm -rf $(VENV))
  endif
endif

$(BIN)/python:
	@if [ -n "$(PYTHON)" ]; then \
	  py=$$("$(PYTHON)" -c '$(IS_RECENT)' 2>/dev/null) || { \
	    echo "error: PYTHON=$(PYTHON) does not run or is older than $(MIN_PYTHON)" >&2; exit 1; }; \
	else \
	  py=; \
	  for candidate in python3.13 python3.12 \
	      $$(ls -d "$$(pyenv root 2>/dev/null || echo $(PYENV_ROOT))"/versions/*/bin/python3 2>/dev/null | sort -rV) \
	      python3; do \
	    py=$$("$$candidate" -c '$(IS_RECENT)' 2>/dev/null) && break; py=; \
	  done; \
	  if [ -z "$$py" ]; then \
	    echo "error: no Python >= $(MIN_PYTHON) found (tried python3.13, python3.12, pyenv's versions, python3)." >&2; \
	    echo "Install one (e.g. 'pyenv install 3.12') or run 'make $(or $(MAKECMDGOALS),test) PYTHON=/path/to/python3.12'." >&2; \
	    exit 1; \
	  fi; \
	fi; \
	echo "making $(VENV) with $$py ($$("$$py" --version))"; \
	"$$py" -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall only when the dependency declarations change (the extras' too: they are declared
# in pyproject.toml and pinned in constraints.txt).
$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,docs]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/bayes-slr gap

# The documentation site (Sphinx, MyST, the committed notebooks unexecuted) in docs/_build/html.
DOCS_BUILD := $(BIN)/python -m sphinx -b html -q docs docs/_build/html
docs: $(STAMP)
	$(DOCS_BUILD)
	@echo "open docs/_build/html/index.html"

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(DOCS_BUILD) -E -n -W --keep-going
	$(BIN)/python -m pytest -n 2 --dist loadfile --nbmake tests notebooks

# The whole suite under conditions that change floating-point rounding (one XLA thread, one core,
# another XLA CPU instruction set, each with a cold compilation cache): see tests/variation.sh.
test-variation: $(STAMP)
	tests/variation.sh

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) .pytest_cache docs/_build docs/gallery docs/reference/generated
