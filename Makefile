# pitwatch: the two commands of the README, each doing its own set-up.
#   make demo   virtual environment, install, simulate a gaming day, replay it, print the findings
#   make test   virtual environment, install with the test extras, run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo test install clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/pitwatch demo

test: install
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) build dist *.egg-info demo-out
