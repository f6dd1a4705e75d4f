# Each user-facing target sets up what it needs itself: a virtual environment in
# $(VENV) with the package installed in editable mode (Cython modules compiled in place).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SOURCES := pyproject.toml setup.py $(shell find sklearn_ext -name '*.pyx' -o -name '*.pxd' 2>/dev/null)

.PHONY: install demo test lint bench docs docs-linkcheck clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(SOURCES) | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "setuptools>=68" "Cython>=3.0.10" "numpy>=1.25" "scipy>=1.10" wheel
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

# The documentation site, built from scratch with warnings as errors (the gallery's
# examples run), then checked page by page (docs/check_site.py: links, anchors, API
# links of the guide pages, real thumbnails): entry page docs/_build/html/index.html. Links to the scikit-learn,
# Optuna, NumPy and Python docs need the network: `make docs INTERSPHINX=1`.
DOCS_STAMP := $(VENV)/.docs-installed
INTERSPHINX ?= 0

$(DOCS_STAMP): docs/requirements.txt $(STAMP)
	$(BIN)/python -m pip install --quiet -r docs/requirements.txt
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	rm -rf docs/_build docs/generated docs/auto_examples docs/_api_lists.rst
	OPTUNA_TREECV_DOCS_INTERSPHINX=$(INTERSPHINX) $(BIN)/python -m sphinx -b html \
		-W --keep-going -q docs docs/_build/html
	$(BIN)/python docs/check_site.py docs/_build/html
	@echo "Built docs/_build/html/index.html"

# Checks the links of the built pages, external ones included: needs the network,
# so it is not part of CI.
docs-linkcheck: $(DOCS_STAMP)
	OPTUNA_TREECV_DOCS_INTERSPHINX=$(INTERSPHINX) $(BIN)/python -m sphinx -b linkcheck \
		-q docs docs/_build/linkcheck

clean:
	rm -rf build $(VENV) *.egg-info
	rm -rf docs/_build docs/generated docs/auto_examples docs/_api_lists.rst
	find sklearn_ext -name '*.so' -delete -o -name '*.c' -delete
