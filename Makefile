# twentyone: `make run` sets up and starts the main job; `make test` sets up and runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test lint typecheck pytest clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/twentyone serve

test: $(STAMP) lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy src/twentyone

# Two parts (tests/conftest.py says why): the tests that may share the machine, one worker per core, then those
# that run alone. Both run whatever the first part's verdict, and either's failure fails the target.
pytest: $(STAMP)
	@status=0; \
	$(BIN)/pytest -m "not serial" -n auto --dist loadfile || status=$$?; \
	$(BIN)/pytest -m serial || status=$$?; \
	exit $$status

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
