# pitwatch: the commands of the README, each doing its own set-up.
#   make demo   virtual environment, install, simulate a gaming day, replay it, print the findings
#   make check  every test not marked slow (-m "not slow": none that runs a Beam pipeline, kills a real
#               process, waits on a real clock or builds a wheel), on both cores; the loop to run while
#               working (1,726 tests in 89 s on a quiet 2-core machine)
#   make lint   ruff on the whole tree, mypy on the packages whose types allow it (CI runs it before the tests)
#   make test   virtual environment, install with the test extras, run the whole test suite (a worker per core
#               and one more)
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

# every test, on one worker more than the machine has cores (pytest-xdist; every test keeps to its own
# tmp_path, ports and processes): many slow tests wait on a real pitwatch process, a killed one's restart or
# a real clock, and the extra worker computes meanwhile.  Work stealing: a worker that runs out takes tests
# from the others, so the run does not end on one worker's queue of Beam tests.  On this 2-core machine:
# 11 min 41 s (3 workers, stealing) against 13 min 38 s (2 workers, a module per worker), same session.
WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))

test: install
	$(BIN)/python -m pytest -q -n $(WORKERS) --dist worksteal

# ruff (errors, unused names, import order) on everything; mypy on the subpackages .ci/mypy.py lists
lint: install
	$(BIN)/ruff check .
	$(BIN)/python .ci/mypy.py

clean:
	rm -rf $(VENV) build dist *.egg-info demo-out 
