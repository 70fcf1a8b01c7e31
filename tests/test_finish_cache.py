"""The scan's last steps (type records, dependency sets: scan/finish.py) from the cache give the
table a scan without the cache gives, cold and warm; a file they read that changed, or a damaged,
planted or forged entry, is a miss."""
from __future__ import annotations

import hashlib
import shutil

from conftest import own_cache
from offsets.layout import table_yaml

MAKEFILE = ("OBJECT_OBJS= Objects/a.o\nPY_CPPFLAGS= -I. -I$(srcdir)/Include -I$(srcdir)/Include/internal\n"
            "PY_CORE_CFLAGS= $(PY_CPPFLAGS) -DPy_BUILD_CORE\n.c.o:\n\t$(CC) -c $(PY_CORE_CFLAGS) -o $@ $<\n")
#: a type initializer in a file no unit compiles: only the type records read it
OTHER = ('#include "Python.h"\nstatic PyTypeObject Other_Type = {\n    PyVarObject_HEAD_INIT(NULL, 0)\n'
         '    "m.other", sizeof(SIZE), 0,\n};\n')


def _tree(tmp_path, debian311):
    tree = tmp_path / "src"
    shutil.copytree(debian311.tree / "Include", tree / "Include")
    (tree / "Objects").mkdir()
    (tree / "Makefile.pre.in").write_text(MAKEFILE)
    (tree / "Objects/a.c").write_text('#include "Python.h"\ntypedef struct { PyObject_HEAD long v; } spaced;\n')
    (tree / "Objects/b.c").write_text(OTHER.replace("SIZE", "spaced"))
    return tree


def test_the_finished_table_from_the_cache_is_the_one_a_scan_makes(tmp_path, monkeypatch, debian311):
    from offsets.scan import build_inputs as build, scanner

    pyconfig = debian311.pyconfig("amd64", "x86_64-linux-gnu")     # fetched into the session's cache
    own_cache(monkeypatch, tmp_path / "cache")
    tree = _tree(tmp_path, debian311)
    b = build.from_source(tree, pyconfig)

    def scan(use_cache=True):
        return table_yaml.dumps(scanner.scan(b, scanner.ScanOptions(jobs=1, use_cache=use_cache)))

    def entries():
        return sorted((tmp_path / "cache" / "finish").glob("*/*.json"))

    truth = scan(use_cache=False)
    assert not entries()
    assert scan() == truth and len(entries()) == 1             # cold: computed, remembered
    assert scan() == truth and len(entries()) == 1             # warm: the entry
    t = scanner.scan(b, scanner.ScanOptions(jobs=1))
    # the record is the initializer's text: tp_basicsize is sizeof(spaced)
    assert t.types["m.other"]["basicsize"] == [[1, "size", "spaced", None]]
    # a set's file digest is the file's own sha256
    assert "Objects/a.c" in t.structs["spaced"].depends.files
    assert t.dependencies.files["Objects/a.c"] == "sha256:" + hashlib.sha256((tree / "Objects/a.c").read_bytes()).hexdigest()

    # a file only the type records read changes: a miss (its entry rewritten), and the record follows the text
    (tree / "Objects/b.c").write_text(OTHER.replace("SIZE", "PyObject"))
    changed = scan()
    assert changed == scan(use_cache=False) != truth and len(entries()) == 1
    assert scanner.scan(b, scanner.ScanOptions(jobs=1)).types["m.other"]["basicsize"] == [[1, "size", "PyObject", None]]

    # damaged (digest left as it was): a miss
    (entry,) = entries()
    entry.write_bytes(entry.read_bytes().replace(b'"Objects/a.c"', b'"Objects/z.c"'))
    assert scan() == changed
    # forged, digest recomputed, sets still sorted: a set naming a macro the table gives no value is a miss
    digest, _, body = entry.read_bytes().partition(b"\n")
    at = body.index(b'["spaced",[[') + len(b'["spaced",[[')
    forged = body[:at] + b'"AAAA_NOT_A_LEAF"' + (b"" if body[at:at + 1] == b"]" else b",") + body[at:]
    entry.write_bytes(hashlib.sha256(forged).hexdigest().encode() + b"\n" + forged)
    assert scan() == changed


def test_the_type_records_read_a_file_s_bytes_as_open_reads_its_text(tmp_path):
    """The records made while the units parse read bytes (their digest is the entry's), then text
    as `open(errors="replace")` gives it: universal newlines, bad UTF-8 replaced."""
    from offsets.scan import type_records

    path = tmp_path / "x.c"
    path.write_bytes(b"a\r\nb\rc\n\xff\xfe d \xe2\x82 \r\r\n")
    (got, prepared), = type_records.prepare_tree((tmp_path, [path])).values()
    assert got == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() and prepared is None
    assert type_records._text(path.read_bytes()) == path.read_text(encoding="utf-8", errors="replace")
