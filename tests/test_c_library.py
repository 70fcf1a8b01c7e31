"""The C library a Linux process loaded is part of its identity: musl's layouts are not glibc's
(pthread_mutex_t is 40 bytes against 48 on aarch64), and a build may not say which it was made for
(CPython built by zig's compiler names none in MULTIARCH or HOST_GNU_TYPE). What the rule reads,
`confstr(_CS_GNU_LIBC_VERSION)`, is checked against the C libraries themselves: glibc answers it,
musl (zig's, a static program run here) fails it with EINVAL."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import missing_tool
from offsets.layout import identity

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = r"""
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    char buf[64];
    errno = 0;
    size_t n = confstr(_CS_GNU_LIBC_VERSION, buf, sizeof buf);
    printf("%zu %d %s\n", n, errno, n ? buf : "-");
    return 0;
}
"""


def _confstr_of(cc: list, tmp_path: Path) -> str:
    (tmp_path / "p.c").write_text(PROGRAM)
    subprocess.run([*cc, "-o", str(tmp_path / "p"), str(tmp_path / "p.c")], check=True, capture_output=True,
                   cwd=tmp_path)
    return subprocess.run([str(tmp_path / "p")], capture_output=True, text=True, check=True).stdout.split()


def test_glibc_answers_what_the_rule_reads_and_musl_fails_it(tmp_path):
    assert _confstr_of(["gcc"], tmp_path)[2] == os.confstr("CS_GNU_LIBC_VERSION").split()[0]
    assert identity.loaded_c_library() == "glibc"
    if importlib.util.find_spec("ziglang") is None:
        missing_tool("zig", "pip install ziglang (make test installs it)")
    n, err, _ = _confstr_of([sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl"], tmp_path)
    assert (n, err) == ("0", "22")          # musl: no answer, EINVAL (what os.confstr raises as OSError)


@pytest.mark.parametrize("triple,musl", [("x86_64-linux-gnu", "x86_64-linux-musl"),
                                         ("aarch64-linux-gnu", "aarch64-linux-musl"),
                                         ("arm-linux-gnueabihf", "arm-linux-musleabihf"),
                                         ("x86_64-linux-musl", "x86_64-linux-musl"),
                                         ("x86_64-pc-windows-msvc", "x86_64-pc-windows-msvc"),
                                         ("darwin", "darwin")])
def test_a_triple_says_its_c_library(triple, musl):
    assert identity.with_c_library(triple, glibc=True) == triple
    assert identity.with_c_library(triple, glibc=False) == musl


AS_IF_MUSL = r"""
import json, os, sys
def musl(name):
    raise OSError(22, "Invalid argument")       # what musl's confstr answers (the test above)
os.confstr = musl
from offsets.runtime import binary
from offsets.runtime.core import RUNTIME
binary.interpreter = lambda: (None, None, "hidden by the test")   # no build-id to name the binary,
RUNTIME.by_build_id = lambda: None                                # on either way to the first table
import offsets
from offsets.layout import identity
out = {"triple": identity.running_target()["triple"]}
try:
    out["answer"] = offsets.get("PyListObject.ob_item")
except offsets.OffsetsError as e:
    out["refused"] = type(e).__name__
print(json.dumps(out))
"""


def test_a_glibc_build_s_tables_do_not_answer_where_the_c_library_is_not_glibc():
    """This very interpreter, its build-id hidden, answers exactly from its shipped table by its inputs
    (test_c_header_proofs.py); with the C library answering as musl does, it is an x86_64-linux-musl
    build, and no glibc table answers for it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OFFSETS_AUTOSCAN": "0"}
    proc = subprocess.run([sys.executable, "-c", AS_IF_MUSL], capture_output=True, text=True, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out == {"triple": f"{os.uname().machine}-linux-musl", "refused": "NoMatchingTable"}, out
    same = subprocess.run([sys.executable, "-c", AS_IF_MUSL.replace("os.confstr = musl", "")],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    assert json.loads(same.stdout).get("answer") == 24, same.stdout + same.stderr[-2000:]


def test_another_process_s_binary_is_glibc_s_only_where_it_needs_libc_so_6(tmp_path):
    """remote/elf.py reads the C library from the binary itself: gcc's program needs glibc's
    `libc.so.6` (x86_64-linux-gnu); zig's musl program, static as zig makes it (as the CPython zig
    builds), needs none: not glibc's (x86_64-linux-musl). Alpine's need `libc.musl-<cpu>.so.1`."""
    from offsets.remote.elf import Elf

    (tmp_path / "p.c").write_text(PROGRAM)
    subprocess.run(["gcc", "-o", str(tmp_path / "glibc"), str(tmp_path / "p.c")], check=True, cwd=tmp_path)
    assert Elf(str(tmp_path / "glibc")).triple == "x86_64-linux-gnu"
    if importlib.util.find_spec("ziglang") is None:
        missing_tool("zig", "pip install ziglang (make test installs it)")
    zig = [sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-linux-musl"]
    subprocess.run([*zig, "-o", str(tmp_path / "musl"), str(tmp_path / "p.c")], check=True, cwd=tmp_path)
    elf = Elf(str(tmp_path / "musl"))
    assert not elf.links_glibc() and elf.triple == "x86_64-linux-musl", elf.linked_names()


def test_the_choice_never_crosses_between_glibc_and_musl():
    """A musl table (made from python.org's sources configured for musl) is near only to a musl
    build of its version, and a glibc table never answers for a musl build, nor a musl table for glibc."""
    from offsets import runtime
    from offsets.errors import NoMatchingTable
    from offsets.runtime import choice

    entries = runtime.shipped_index()["tables"]
    musl = [e for e in entries if e["triple"].endswith("-linux-musl")]
    glibc = [e for e in entries if e["triple"].endswith("-linux-gnu")]
    assert musl and glibc
    e = musl[0]
    me_musl = runtime.running_identity().replace(version=e["version"], hexversion=e["hexversion"], triple=e["triple"])
    me_glibc = me_musl.replace(triple=e["triple"].replace("-linux-musl", "-linux-gnu"))
    assert {x["triple"] for x in choice.near(me_musl, entries)} == {e["triple"]}
    assert {x["triple"] for x in choice.near(me_glibc, entries)} == {me_glibc.triple}
    for who, others in ((me_musl, glibc), (me_glibc, musl)):
        with pytest.raises(NoMatchingTable):
            runtime.select(who, others, load=runtime.load_shipped)
