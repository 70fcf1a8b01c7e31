# Two commands set everything up on a fresh machine: `make run` and `make test`.
# PYTHON is the interpreter `make run` scans; VENV_PYTHON (3.8+) the one the venv runs on.
PYTHON ?= python3
VENV_PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Downloads and scan results are cached in $OFFSETS_CACHE (default ~/.cache/offsets).
RUNNING := .cache/running.yaml

.PHONY: run test bench tables venv clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py
	@# gcc checks tables and builds the C extension; dpkg-dev unpacks Debian packages by name
	@command -v gcc >/dev/null && command -v dpkg-source >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq gcc dpkg-dev; }
	@# the aarch64 cross gcc checks aarch64 tables (tests/test_probe_pyenv.py skips without it)
	@command -v aarch64-linux-gnu-gcc >/dev/null || [ "$$(uname -m)" != x86_64 ] || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc-aarch64-linux-gnu; } || \
	  echo "no aarch64 cross gcc: the aarch64 compiler check will be skipped"
	@# dtrace makes the pydtrace_probes.h a --with-dtrace build (Debian's) generates; ceval.c and others include it
	@command -v dtrace >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends systemtap-sdt-dev; } || \
	  echo "no dtrace: source units that include pydtrace.h will be skipped (with that reason)"
	@$(VENV_PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 8))' || \
	  { echo "$(VENV_PYTHON) is older than 3.8, which offsets needs: give VENV_PYTHON=python3.X"; exit 2; }
	@# a venv made by an unsupported interpreter (an older Makefile used PYTHON) is made again
	@$(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null || rm -rf $(VENV)
	$(VENV_PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

# The main job: scan the running interpreter, then show where well-known fields live.
run: venv
	@mkdir -p .cache
	$(BIN)/offsets scan --python $(PYTHON) -o $(RUNNING)
	@for name in PyListObject.ob_item PyThreadState.interp listiterobject.it_index; do \
	  printf '%-28s ' $$name; $(BIN)/offsets get $$name -t $(RUNNING) || true; done

test: venv
	$(BIN)/python -m pytest -q -ra tests

bench: venv
	$(BIN)/python -m offsets.bench

# Regenerate generated/ (tables, index, C headers) and the package's compact tables.
tables: venv
	$(BIN)/python -m offsets.matrix
	$(BIN)/python -m offsets.c_header --write
	$(BIN)/python -m offsets.compact --write

clean:
	rm -rf $(VENV) build *.egg-info
