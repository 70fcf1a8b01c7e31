"""`offsets scan --python` describes an interpreter by running offsets/layout/identity.py in it as a
script, isolated (`build_inputs.describe`): in every pyenv CPython from 3.6, with an empty cache and
again with the digests' memo the first run left there. A memo only one of the two runs exercises
broke 3.6 unnoticed (issue 25): the cache a warm run finds decides which code runs.

The truths: the committed table of each build (generated/, checked against gcc and the build's
DWARF when it was made) records what the build's headers say (their digests, the core's defines,
version, config, target); and what the cache did is seen from outside, by its files: the first run
left something in the empty cache, a run that finds it writes nothing (a run that misses writes
it again, as the control shows).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from conftest import PYENV_MINORS, REPO, committed_table, missing_input, pyenv_python
from offsets.layout import identity
from offsets.scan import build_inputs
from offsets.tools import build_copy


def files_of(cache: Path) -> dict:
    """relative path -> (inode, size, mtime) of every file under `cache`: a file written again,
    even with the same bytes, is another inode or another mtime."""
    out = {}
    for d, _, names in os.walk(cache):
        for n in names:
            st = os.stat(os.path.join(d, n))
            out[os.path.relpath(os.path.join(d, n), cache)] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def described(python, cache: Path, monkeypatch) -> dict:
    monkeypatch.setenv("OFFSETS_CACHE", str(cache))
    return build_inputs.describe(str(python))


def table_of(me: dict):
    """The committed table of the described build (the same name `make tables` gave it)."""
    name = identity.table_name(me["version"], me["config"], me["triple"], me["vendor"] or identity.UPSTREAM)
    path = REPO / "generated" / f"{name}.yaml"
    if not path.is_file():
        missing_input(f"no committed table {path.name} for {me['executable']} (`make tables`)")
    return committed_table(path)


@pytest.mark.parametrize("minor", PYENV_MINORS)
def test_describe_gives_one_identity_with_an_empty_cache_and_with_its_memo(minor, tmp_path, monkeypatch):
    python = pyenv_python(minor)
    if python is None:
        missing_input(f"pyenv has no CPython {minor} on this machine")
    cache = tmp_path / "cache"
    cold = described(python, cache, monkeypatch)
    made = files_of(cache)
    assert made, f"{python} described itself but kept nothing in the empty cache"
    warm = described(python, cache, monkeypatch)
    assert warm == cold
    assert files_of(cache) == made, "the second run did not use what the first kept: it wrote again"
    # what the headers say, as the committed table of this build records it
    t = table_of(cold)
    b = t.build
    assert (cold["version"], cold["hexversion"], cold["triple"], cold["pointer_size"]) == \
        (b.version, b.hexversion, b.target.triple, b.target.pointer_size)
    assert cold["config"] == b.config and (cold["vendor"] or identity.UPSTREAM) == b.vendor
    assert cold["inputs"] == {"pyconfig_h": b.inputs["pyconfig_h"], "headers": b.inputs["headers"],
                              "defines": b.defines}
    # the control: without what the first run kept, a run writes it again (so a miss is visible above)
    for rel in made:
        os.unlink(cache / rel)
    assert described(python, cache, monkeypatch) == cold
    again = files_of(cache)
    assert set(again) == set(made) and again != made


def test_a_changed_header_is_described_anew_with_the_memo_of_the_old_one(tmp_path, monkeypatch):
    """A memo never changes a result: a build whose header changed after its memo was kept (a
    copy of this interpreter's build with its own include directory, tools/build_copy.py) is
    described as a fresh cache describes it, not as the memo remembers it."""
    base = Path(sys.base_prefix)
    if not build_copy.base_python(base).is_file():
        missing_input(f"{sys.base_prefix} has no {build_copy.base_python(base).name} to copy")
    python = build_copy.copy_build(base, tmp_path / "build", unshipped=False)
    cache = tmp_path / "cache"
    before = described(python, cache, monkeypatch)
    assert described(python, cache, monkeypatch) == before
    header = Path(before["include"]) / "Python.h"
    assert header.is_file() and str(header).startswith(str(tmp_path)), header   # the copy's own headers
    header.write_text(header.read_text() + build_copy.UNSHIPPED_LINE)
    after = described(python, cache, monkeypatch)
    fresh = described(python, tmp_path / "empty-cache", monkeypatch)
    assert after == fresh
    assert after["inputs"]["headers"] != before["inputs"]["headers"]
    assert after["inputs"]["pyconfig_h"] == before["inputs"]["pyconfig_h"]


#: identity.py run as describe runs it, in an interpreter without CPython's builtin sha256 modules
#: (`_sha256` before 3.12, `_sha2` after: a build that left them out), so hashlib's is used.
WITHOUT_BUILTIN_SHA = ("import runpy, sys; sys.modules.update(_sha256=None, _sha2=None); sys.argv[1:] = []; "
                       "runpy.run_path(%r, run_name='__main__')")


@pytest.mark.parametrize("minor", ["3.7", "3.11", "3.13"])
def test_digests_without_the_builtin_sha256_module_are_the_same(minor, tmp_path):
    """identity.py picks CPython's builtin sha256 module by version and falls back to hashlib's: the
    committed table's digests either way, in the oldest pyenv build whose hashlib has OpenSSL's
    (pyenv's 3.6 has none: its builtin module is its only sha256), the last with `_sha256` and the
    newest (`_sha2`)."""
    import json
    import subprocess

    python = pyenv_python(minor)
    if python is None:
        missing_input(f"pyenv has no CPython {minor} on this machine")
    proc = subprocess.run([str(python), "-I", "-S", "-c", WITHOUT_BUILTIN_SHA % identity.__file__],
                          capture_output=True, text=True, env=dict(os.environ, OFFSETS_CACHE=str(tmp_path / "cache")))
    assert proc.returncode == 0, proc.stderr
    me = json.loads(proc.stdout)
    b = table_of(me).build
    assert me["inputs"] == {"pyconfig_h": b.inputs["pyconfig_h"], "headers": b.inputs["headers"], "defines": b.defines}
