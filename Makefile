# Each user-facing target sets up what it needs itself: a virtual environment in
# $(VENV) with the package installed in editable mode (Cython modules compiled in place).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SOURCES := pyproject.toml setup.py $(shell find sklearn_ext -name '*.pyx' -o -name '*.pxd' 2>/dev/null)

.PHONY: install demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(SOURCES) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "setuptools>=68" "Cython>=3.0.10" "numpy>=1.25" wheel
	$(BIN)/python -m pip install --quiet --no-build-isolation -e ".[test,lint]"
	touch $(STAMP)

install: $(STAMP)

# The main job: a real study (SGD on digits, 10-fold TreeCV, median pruner) stored in
# SQLite, ready for optuna-dashboard. Re-running adds trials to the same study.
demo: $(STAMP)
	$(BIN)/optuna-treecv tune sgd digits --cv 10 --n-trials 30 --pruner median \
		--storage sqlite:///optuna-treecv.db --study-name sgd-digits

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	for script in benchmarks/bench_*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf build $(VENV) *.egg-info
	find sklearn_ext -name '*.so' -delete -o -name '*.c' -delete
