"""offsets/tools/chained_pch.py: the reproduction behind the shared preamble's end at Python.h."""
import re

from offsets.tools import chained_pch


def test_the_reproduction_loads_its_base_header_and_names_what_the_chained_one_does(capsys):
    """The base precompiled header must load (else the harness, not libclang, is at fault); the
    chained one's line says how a unit parsed on it ended."""
    assert chained_pch.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "base.pch: loads", lines
    assert re.fullmatch(r"chained\.pch: (loads|loads with \d+ errors|crashes \(\w+\)|fails: .+)", lines[1]), lines
