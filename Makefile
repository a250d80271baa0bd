# pitwatch: the commands of the README, each doing its own set-up.
#   make demo   virtual environment, install, simulate a gaming day, replay it, print the findings
#   make check  every test not marked slow (-m "not slow": none that runs a Beam pipeline, kills a real
#               process, waits on a real clock or builds a wheel), on both cores; the loop to run while
#               working (1,726 tests in 89 s on a quiet 2-core machine)
#   make lint   ruff on the whole tree, mypy on the packages whose types allow it (CI runs it before the tests)
#   make test   virtual environment, install with the test extras, run the whole test suite (on every core)
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo check test lint install clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/pitwatch demo

# every test under tests/ but those marked slow (pyproject.toml says which; tests/conftest.py fails a test
# that runs a Beam pipeline in its own process unmarked), on both cores (pytest-xdist)
CHECK = tests

check: install
	$(BIN)/python -m pytest -q -n 2 -m "not slow" $(CHECK)

# every test, on every core (pytest-xdist: most tests wait on a real pitwatch process or a Beam pipeline's
# workers, and every test keeps to its own tmp_path, ports and processes)
test: install
	$(BIN)/python -m pytest -q -n auto

# ruff (errors, unused names, import order) on everything; mypy on the subpackages .ci/mypy.py lists
lint: install
	$(BIN)/ruff check .
	$(BIN)/python .ci/mypy.py

clean:
	rm -rf $(VENV) build dist *.egg-info demo-out 
