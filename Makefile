# Goldkey: `make demo` and `make test` do all the setup on a fresh Debian machine with Python 3.11.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8000
# Every package, pinned with its hashes: runtime + tests (requirements.lock is the runtime half, for the image).
LOCK ?= requirements-test.lock

.PHONY: venv test demo lint bench bench-ls lock clean

# The project itself is not installed: it runs from this folder, and everything it needs is in the lock
# (--require-hashes: a package whose file does not match its recorded hash is refused).
$(VENV)/.installed: $(LOCK)
	@command -v $(PYTHON) >/dev/null 2>&1 || { \
	    echo "$(PYTHON) not found. On Debian: apt-get install python3.11 python3.11-venv"; \
	    echo "(or point PYTHON at one: make PYTHON=/path/to/python3.11 ...)"; exit 1; }
	@$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
	    echo "'$(PYTHON) -m venv' failed: the venv module (ensurepip) is missing."; \
	    echo "On Debian: apt-get install python3.11-venv   then run make again."; exit 1; }
	$(PIP) install --quiet --require-hashes --no-deps -r $(LOCK)
	touch $@

venv: $(VENV)/.installed

# The suite runs in one process per core (pytest-xdist), a test file to a process so that a file's shared
# fixtures are built once; TEST_PROCESSES=0 runs it in this process alone.
TEST_PROCESSES ?= auto
test: venv
	$(PY) -m pytest -n $(TEST_PROCESSES) --dist loadfile

# Web server + a separate Celery worker on SQLite and the file-system broker; Ctrl-C stops both.
demo: venv
	PY=$(PY) HOST=$(HOST) PORT=$(PORT) bash scripts/demo.sh

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# Goldkey and Label Studio side by side on the same generated Track B data (bench/bench_ls.py): import,
# next item over HTTP, freeze + export, in alternating pairs. Label Studio is pip-installed (pinned) into
# var/bench-ls/ on the first run, or skipped with a message. A quick run: make bench-ls BENCH_LS_ARGS="--items 2000".
BENCH_LS_ARGS ?=
bench-ls: venv
	$(PY) bench/bench_ls.py $(BENCH_LS_ARGS)

# Re-resolve both lock files after changing the dependencies in pyproject.toml (needs the package registry).
lock: venv
	$(PIP) install --quiet pip-tools==7.6.2
	$(VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
	    --no-emit-find-links -o requirements.lock pyproject.toml
	$(VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
	    --no-emit-find-links --extra test -o requirements-test.lock pyproject.toml

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache
