# Goldkey: `make demo` and `make test` do all the setup on a fresh Debian machine with Python 3.11.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: venv test demo lint bench clean

$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; set PYTHON=/path/to/python3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[test]"
	touch $@

venv: $(VENV)/.installed

test: venv
	$(PY) -m pytest

# Web server + a separate Celery worker on SQLite and the file-system broker; Ctrl-C stops both.
demo: venv
	PY=$(PY) HOST=$(HOST) PORT=$(PORT) bash scripts/demo.sh

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache
