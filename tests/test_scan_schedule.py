"""How the scan spends its two cores (offsets/scan/scanner.py): the units after a shared preamble
start heaviest first, so no worker is left parsing Modules/unicodedata.c (1.1 s of Debian 3.11.2's
8) alone at the end; and the table is made from the results with Python's cycle collector paused,
then left as the caller had it."""
from __future__ import annotations

import gc

import pytest

from offsets.scan import scanner, workers
from offsets.scan.clang_scan import Unit, load_libclang

_PYTHON_H = "#ifndef Py_PYTHON_H\n#define Py_PYTHON_H\ntypedef long Py_ssize_t;\n#endif\n"


def _unit(tmp_path, name: str, text: str) -> Unit:
    path = tmp_path / "src" / name
    path.write_text(text)
    return Unit(f"src/{name}", str(path), ("-xc", "--target=x86_64-linux-gnu", f"-I{tmp_path}/inc"),
                ((f"{tmp_path}/", ""),), (f"{tmp_path}/src/",))


def test_a_unit_weighs_its_file_and_the_files_beside_it_that_it_includes(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src/table_db.h").write_text("static const int t[] = {" + "1," * 5000 + "};\n")
    u = _unit(tmp_path, "big.c", '#include "Python.h"\n#include "table_db.h"\n#include "table_db.h"\n'
                                 '#include "absent.h"\n#include <stdio.h>\n')
    own = (tmp_path / "src/big.c").stat().st_size
    assert scanner.weight(u) == own + (tmp_path / "src/table_db.h").stat().st_size     # once each
    assert scanner.weight(Unit("gone.c", str(tmp_path / "gone.c"), (), (), ())) == 0


def test_units_after_a_shared_preamble_start_heaviest_first(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc/Python.h").write_text(_PYTHON_H)
    (tmp_path / "src").mkdir()
    (tmp_path / "src/names_db.h").write_text("static const char names[] = \"" + "x" * 20000 + "\";\n")
    todo = [_unit(tmp_path, f"small{i}.c", f'#include "Python.h"\nstruct s{i} {{ Py_ssize_t n; }};\n')
            for i in range(3)]
    todo.append(_unit(tmp_path, "heavy.c", '#include "Python.h"\n#include "names_db.h"\nstruct h { char c; };\n'))
    with workers.Workers(1, start=load_libclang) as pool:     # one worker: results come as they are taken
        order = [todo[i].name for i, _ in scanner._parse(pool, list(enumerate(todo)), True, str(tmp_path))]
    assert order == ["src/heavy.c", "src/small0.c", "src/small1.c", "src/small2.c"]


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_and_then_as_the_caller_had_it(enabled):
    (gc.enable if enabled else gc.disable)()
    try:
        with scanner.collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() == enabled
        with pytest.raises(KeyError):
            with scanner.collector_paused():
                raise KeyError("a scan that fails")
        assert gc.isenabled() == enabled
    finally:
        gc.enable()


@pytest.fixture(scope="module")
def fixture_scan():
    """One scan of the fixture build (tests/fixtures/fakepy), with the cycle collector on, recording
    whether it was on when the finish began and the names of the units `parse_units` was given."""
    from pathlib import Path

    from offsets.scan import build_inputs, finish

    seen, parsed = [], []
    real_finish, real_parse = finish.finish, scanner.parse_units

    def finishing(*args, **kwargs):
        seen.append(gc.isenabled())
        return real_finish(*args, **kwargs)

    def parsing(unit_list, *args, **kwargs):
        parsed.extend(u.name for u in unit_list)
        return real_parse(unit_list, *args, **kwargs)

    b = build_inputs.from_prefix(Path(__file__).parent / "fixtures" / "fakepy", target="x86_64-linux-gnu")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(finish, "finish", finishing)
        mp.setattr(scanner, "parse_units", parsing)
        gc.enable()
        table = scanner.scan(b, scanner.ScanOptions(use_cache=False))
        enabled_after = gc.isenabled()
    return b, table, seen, parsed, enabled_after


def test_a_scan_finishes_its_table_with_the_collector_paused_and_leaves_it_on(fixture_scan):
    _, table, seen, _, enabled_after = fixture_scan
    assert seen == [False] and enabled_after and table.structs


def test_the_benchmark_floor_parses_every_unit_the_scan_parses(fixture_scan):
    """`make bench` divides the scan by a bare parse of the same units: both header units too (the
    floor once left out the one without Py_BUILD_CORE, which the scan parses)."""
    from offsets.tools import bench

    b, _, _, parsed, _ = fixture_scan
    assert [u.name for u in bench._units(b)] == parsed
    assert "<headers without Py_BUILD_CORE>" in parsed
