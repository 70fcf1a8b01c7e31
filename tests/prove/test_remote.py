"""`offsets identify` and `offsets stack` on builds no table was made from a process of:
Debian sid's 3.13, 3.14 and 3.15, release and debug (python3.Xd), run through sid's own loader (so
/proc/PID/exe is ld-linux) and as a container runs them (their own root, read through
/proc/PID/root), and python.org's 3.13.15, release and free-threaded, compiled here. Truth: what
each interpreter says of itself.

Each target parks its threads and records its own stacks (tests/fixtures/parked.py); `offsets stack`
must say exactly what it recorded. py-spy and pystack from PyPI read the same processes; the table
of which builds each reads correctly is printed and written to $OFFSETS_CACHE/remote-readers.md
(their results are facts to report, not assertions: they are not ours).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import realbuilds  # noqa: E402
from offsets.data_cache import folder as cache_folder  # noqa: E402
import stack_readers  # noqa: E402
from parked_target import Parked, stacks_of  # noqa: E402

#: build -> (the table that answers for it, how it is earned)
BUILDS = {
    "sid-3.13": ("cpython-3.13.18-debian-x86_64-linux-gnu", "build-id"),
    "sid-3.13d": ("cpython-3.13.18-debian-debug-x86_64-linux-gnu", "build-id"),
    "sid-3.14": ("cpython-3.14.10-debian-x86_64-linux-gnu", "build-id"),
    "sid-3.14d": ("cpython-3.14.10-debian-debug-x86_64-linux-gnu", "build-id"),
    "sid-3.15": ("cpython-3.15.2-debian-x86_64-linux-gnu", "build-id"),
    "sid-3.15d": ("cpython-3.15.2-debian-debug-x86_64-linux-gnu", "build-id"),
    # compiled here: by build-id where the table records this very build's (make tables compiled it on
    # this machine), else exact by the digests of the headers it installed (`_compiled_by`)
    "upstream-3.13.15-release": ("cpython-3.13.15-x86_64-linux-gnu", None),
    "upstream-3.13.15-free-threaded": ("cpython-3.13.15-freethreaded-x86_64-linux-gnu", None),
}
PYENV = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
#: sid's interpreters also run as a container runs them (realbuilds.contained_sid): natively, read
#: through /proc/PID/root (py-spy finds no version in a process whose executable is ld-linux)
CONTAINED = {f"sid-{name} in a container": name for name in ("3.13", "3.13d", "3.14", "3.14d", "3.15", "3.15d")}
_TRUTH = ("import json, sys, sysconfig; print(json.dumps([sys.version.split()[0], sys.hexversion, "
          "bool(sysconfig.get_config_var('Py_DEBUG')), bool(sysconfig.get_config_var('Py_GIL_DISABLED'))]))")


def pyenv_python(minor: str):
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = sorted(root.glob(f"{minor}.*/bin/python{minor}"), key=lambda p: int(p.parts[-3].split(".")[2]))
    return found[-1] if found else None


def _compiled_by(build: str, table: str) -> str:
    """How a build compiled here is earned: "build-id" when its libpython's build-id is one the
    table records (the build make tables compiled, on the same machine), else "headers" (a build
    compiled elsewhere, such as CI's, has other paths in it and so another build-id)."""
    from offsets.scan import dwarf

    lib = next(realbuilds.interpreter(build).parent.parent.glob("lib/libpython3.*.so.1.0"))
    recorded = {b["build_id"] for b in (yaml.safe_load((realbuilds.REPO / "generated" / f"{table}.yaml").read_text())
                                        ["build"].get("binaries") or ())}
    return "build-id" if dwarf.build_id(lib) in recorded else "headers"


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("parked")
    started = {}
    try:
        for build in BUILDS:
            started[build] = Parked(realbuilds.interpreter(build), tmp)
        yield started
    finally:
        for t in started.values():
            t.close()


def offsets_json(*args) -> dict:
    proc = subprocess.run([sys.executable, "-m", "offsets", *args], capture_output=True, text=True,
                          env=realbuilds.clean_env(), cwd=realbuilds.REPO)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("build", BUILDS)
def test_identify_names_the_build(targets, build):
    t = targets[build]
    version, hexversion, debug, free_threaded = json.loads(realbuilds.run_in(realbuilds.interpreter(build), _TRUTH))
    doc = offsets_json("identify", "--pid", str(t.pid), "--json")
    assert (doc["version"], int(doc["hexversion"], 16), doc["debug"], doc["free_threaded"]) == \
        (version, hexversion, debug, free_threaded)
    if build.startswith("sid-"):
        exe = os.readlink(f"/proc/{t.pid}/exe")
        assert exe.endswith("ld-linux-x86-64.so.2")                    # started through sid's loader
        assert doc["binary"].endswith(f"/usr/bin/python{build[4:]}") and doc["vendor"].startswith("debian ")
    table, by = BUILDS[build]
    assert (doc["table"], doc["earned_by"]) == (table, by or _compiled_by(build, table))


@pytest.mark.parametrize("build", BUILDS)
def test_stack_is_what_the_process_recorded_of_itself(targets, build):
    t = targets[build]
    got = stacks_of(offsets_json("stack", "--pid", str(t.pid), "--json"))
    assert got == t.record


@pytest.fixture(scope="module")
def contained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("contained")
    started = {}
    try:
        for name, minor in CONTAINED.items():
            started[name] = realbuilds.contained_sid(minor, tmp)
        yield started
    finally:
        for t in started.values():
            t.close()


@pytest.mark.parametrize("name", CONTAINED)
def test_a_contained_build_is_read_through_its_own_root(contained, name):
    """identify names the binary as the container sees it, Debian's package record under its root and
    the table of that build (by build-id), as for the same build run outside; the stack is what the
    process recorded."""
    t, minor = contained[name], CONTAINED[name].rstrip("d")
    doc = offsets_json("identify", "--pid", str(t.pid), "--json")
    assert os.readlink(f"/proc/{t.pid}/exe") == f"/usr/bin/python{CONTAINED[name]}"      # no loader given
    assert (doc["binary"], doc["prefix"]) == (f"/usr/bin/python{CONTAINED[name]}", "/usr")
    assert doc["vendor"] == f"debian {realbuilds.SID_PYTHON[minor]}" and doc["debug"] == CONTAINED[name].endswith("d")
    assert (doc["table"], doc["earned_by"]) == BUILDS[f"sid-{CONTAINED[name]}"]
    assert stacks_of(offsets_json("stack", "--pid", str(t.pid), "--json")) == t.record


def test_the_readers_side_by_side(targets, contained, tmp_path):
    """offsets, py-spy and pystack on every build: which read every thread as it recorded itself."""
    rows = []
    pyenv = {}
    try:
        for minor in PYENV:
            exe = pyenv_python(minor)
            if exe is not None:
                pyenv[f"pyenv {minor}"] = Parked(exe, tmp_path)
        for name, t in list(pyenv.items()) + list(targets.items()) + list(contained.items()):
            results = {}
            for reader, read in (("offsets", lambda: stacks_of(offsets_json("stack", "--pid", str(t.pid), "--json"))),
                                 ("py-spy", lambda: stack_readers.py_spy(t.pid)),
                                 ("pystack", lambda: stack_readers.pystack(t.pid, t.natives))):
                try:
                    got = read()
                except Exception as e:      # another tool's failure is a result to report
                    got = e
                results[reader] = stack_readers.verdict(t.record, got)
            rows.append((name, results))
    finally:
        for t in pyenv.values():
            t.close()
    table = [f"| build | offsets | py-spy {version('py-spy')} | pystack {version('pystack')} |", "|---|---|---|---|"]
    table += [f"| {name} | {r['offsets']} | {r['py-spy']} | {r['pystack']} |" for name, r in rows]
    text = "\n".join(table) + "\n"
    print("\n" + text)
    out = cache_folder() / "remote-readers.md"
    out.write_text(text)
    assert all(r["offsets"] == "ok" for _, r in rows), text
