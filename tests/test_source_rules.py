"""The rules of a source plan (sources.py), one by one, on Debian's real bookworm python3.11 tree.

Each expected answer is read from the build's own files, independently of the planner: the text of
Makefile.pre.in, Modules/Setup.*.in, debian/rules and the `.c` files themselves (the tree is
fetched by package name into $OFFSETS_CACHE and never modified). No clang is run: these are fast.
"""
from __future__ import annotations

import re

import pytest

from offsets.scan import build_inputs as build, sources
from offsets.scan.source_reads import Reads, witness_holds


@pytest.fixture(scope="module")
def tree(debian311):
    """The rules' input for the x86_64 release build of the tree (its reads recorded)."""
    b = build.from_source(debian311.tree, debian311.pyconfig("amd64", "x86_64-linux-gnu"))
    return sources.read_tree(b, Reads())


def text(tree, rel: str) -> str:
    return (tree.source / rel).read_text(errors="replace")


def only(tree, rel: str, rule):
    """The plan `rule` gives `rel`, after checking it is the first rule of the planner that applies."""
    p = rule(tree, rel)
    assert p is not None and sources.classify(tree, rel) == p
    return p


def test_core_rule_compiles_an_object_of_makefile_pre_in_with_its_recipe(tree):
    makefile = text(tree, "Makefile.pre.in")
    # Makefile.pre.in lists Objects/listobject.o in OBJECT_OBJS and builds .c.o with PY_CORE_CFLAGS,
    # which holds -DPy_BUILD_CORE
    assert re.search(r"^OBJECT_OBJS=(.*\\\n)*\s*Objects/listobject\.o", makefile, re.M)
    assert re.search(r"^\.c\.o:\n\t\$\(CC\) -c \$\(PY_CORE_CFLAGS\)", makefile, re.M)
    assert re.search(r"^PY_CORE_CFLAGS=.*-DPy_BUILD_CORE\b", makefile, re.M)
    p = only(tree, "Objects/listobject.c", sources.core_rule)
    assert p.how == "Makefile.pre.in" and "-DPy_BUILD_CORE" in p.flags and not p.skip
    # its own recipe adds -DSOABI='"$(SOABI)"' to Python/dynload_shlib.o
    assert re.search(r"^Python/dynload_shlib\.o:.*\n(\t.*\n)*\t\t-DSOABI='\"\$\(SOABI\)\"'", makefile, re.M)
    assert '-DSOABI="cpython-311-x86_64-linux-gnu"' in only(tree, "Python/dynload_shlib.c", sources.core_rule).flags
    assert sources.core_rule(tree, "Modules/_testcapimodule.c") is None     # not an object of Makefile.pre.in


def test_module_rule_reads_the_sections_of_the_setup_files(tree):
    # Setup.bootstrap.in: `atexit atexitmodule.c` after *static*: built in, with the core's builtin flag
    bootstrap = text(tree, "Modules/Setup.bootstrap.in")
    assert re.search(r"^\*static\*\n(.*\n)*atexit atexitmodule\.c$", bootstrap, re.M)
    p = only(tree, "Modules/atexitmodule.c", sources.module_rule)
    assert p.how == "built-in module" and "-DPy_BUILD_CORE_BUILTIN" in p.flags
    # Setup.stdlib.in: _testcapimodule.c under *@MODULE_BUILDTYPE@* (shared on Linux): no core flag at all
    stdlib = text(tree, "Modules/Setup.stdlib.in")
    assert re.search(r"^\*@MODULE_BUILDTYPE@\*\n(.*\n)*@MODULE__TESTCAPI_TRUE@_testcapi _testcapimodule\.c$",
                     stdlib, re.M)
    p = only(tree, "Modules/_testcapimodule.c", sources.module_rule)
    assert p.how == "shared module" and not any(f.startswith("-DPy_BUILD_CORE") for f in p.flags)
    assert sources.module_rule(tree, "Objects/listobject.c") is None


def test_unbuilt_rule_follows_debian_rules_configure_options(tree):
    # debian/rules configures --with-system-expat; LIBEXPAT_OBJS lists the bundled Modules/expat/xmlparse.o
    assert "--with-system-expat" in text(tree, "debian/rules")
    assert re.search(r"^LIBEXPAT_OBJS=(.*\\\n)*\s*Modules/expat/xmlparse\.o", text(tree, "Makefile.pre.in"), re.M)
    p = only(tree, "Modules/expat/xmlparse.c", sources.unbuilt_rule)
    assert p.skip == "not compiled: debian/rules configures --with-system-expat, so the bundled copy is not built"
    assert sources.unbuilt_rule(tree, "Objects/listobject.c") is None


def test_included_rule_finds_the_including_file(tree):
    assert '#include "_ssl/cert.c"' in text(tree, "Modules/_ssl.c")
    p = only(tree, "Modules/_ssl/cert.c", sources.included_rule)
    assert p.skip == "not compiled on its own (#included by Modules/_ssl.c)"


def test_generated_rule_for_an_object_whose_c_file_the_build_makes(tree):
    # Makefile.pre.in links Modules/config.o and makes Modules/config.c from Modules/config.c.in
    makefile = text(tree, "Makefile.pre.in")
    assert re.search(r"^\t+Modules/config\.o \\$", makefile, re.M) and "Modules/config.c: Makefile.pre" in makefile
    assert (tree.source / "Modules/config.c.in").is_file() and not (tree.source / "Modules/config.c").exists()
    p = only(tree, "Modules/config.c", sources.generated_rule)
    assert p.skip == "generated during the build (not in the source tree)"


def test_platform_rule_and_the_rule_of_last_resort(tree):
    # configure.ac sets _scproxy "not available" on other systems; Setup.stdlib.in lists it behind its switch
    assert re.search(r"PY_STDLIB_MOD_SET_NA\(\[_scproxy\]", text(tree, "configure.ac"))
    assert only(tree, "Modules/_scproxy.c", sources.platform_rule).skip.startswith("not compiled on Linux: built only on macOS")
    # Modules/xxmodule.c (an example module, installed for tests) is no object of Makefile.pre.in and
    # on no Setup line of this tree
    setups = "".join(text(tree, f"Modules/{s}") for s in ("Setup.bootstrap.in", "Setup.stdlib.in"))
    assert "xxmodule.o" not in text(tree, "Makefile.pre.in") and not re.search(r"^[^#]*xxmodule\.c", setups, re.M)
    assert only(tree, "Modules/xxmodule.c", sources.unlisted_rule).skip.startswith("not compiled by the build on Linux")


def test_inputs_rule_skips_a_unit_that_needs_a_generated_header(tree):
    # getpath.c includes a header Makefile.pre.in generates (a rule whose target it is); the tree lacks it
    assert '#include "../Python/frozen_modules/getpath.h"' in text(tree, "Modules/getpath.c")
    assert re.search(r"^Python/frozen_modules/getpath\.h:", text(tree, "Makefile.pre.in"), re.M)
    assert not (tree.source / "Python/frozen_modules/getpath.h").exists()
    compiled = only(tree, "Modules/getpath.c", sources.core_rule)
    assert not compiled.skip
    assert sources.inputs_rule(tree, compiled).skip == \
        "not scanned: needs Python/frozen_modules/getpath.h, which the build generates"
    listobject = sources.classify(tree, "Objects/listobject.c")
    assert sources.inputs_rule(tree, listobject) == listobject


def test_the_recorder_holds_what_the_rules_read(tree):
    """Everything the rules read is in the recorder's witness, and holds for the unchanged tree."""
    w = tree.reads.witness
    assert ("sha256", str(tree.source / "Makefile.pre.in")) in w
    assert ("sha256", str(tree.source / "Modules/Setup.bootstrap.in")) in w
    assert ("isfile", str(tree.source / "Modules/config.c")) in w          # generated_rule asked
    assert all(witness_holds(kind, p, v) for (kind, p), v in w.items())
    assert not witness_holds("sha256", str(tree.source / "Makefile.pre.in"), "0" * 64)
