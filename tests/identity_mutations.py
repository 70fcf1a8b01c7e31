"""The identity rules' audit: each condition of what earns "exact" or "proven", the loosening that
drops it, and the tests that must fail under that loosening (docs/identity.md, "What holds each
rule", lists the same).

Each `Mutation` is one textual change to one file of `offsets/` (`old`, found exactly once, becomes
`new`): a rule made looser by one step. `run(m)` applies it to a copy of the checkout (hard links,
the one file rewritten) and runs `m.tests` there; the mutation is *caught* when pytest fails.
tests/test_identity_audit.py checks the catalogue is current (each `old` is in its file once, each
test exists, the doc lists each mutation); tests/prove/test_identity_mutations.py runs every one.

    python tests/identity_mutations.py             # every mutation: caught or SURVIVED, and by which tests
    python tests/identity_mutations.py 3 7          # those two
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EARNING, CHOICE, PROOFS, DEPENDS = ("offsets/runtime/earning.py", "offsets/runtime/choice.py",
                                    "offsets/runtime/proof_cache.py", "offsets/layout/compact_depends.py")
ID = "tests/test_identity.py::"
FIRST = "tests/test_first_lookup.py::"
CORE = "offsets/runtime/core.py"


class Mutation:
    """One loosening: in `file`, `old` becomes `new`; `rule` says in words what it drops; `tests`
    are pytest node ids (or files) that must fail."""

    __slots__ = ("name", "file", "old", "new", "rule", "tests", "equivalent")

    def __init__(self, name, file, old, new, rule, tests, equivalent: str = "") -> None:
        self.name, self.file, self.old, self.new, self.rule, self.tests = name, file, old, new, rule, tuple(tests)
        self.equivalent = equivalent      # why no test can catch it: another condition refuses the same cases


MUTATIONS = [
    # ------------------------------------------------ earning(): which tables are for the build at all
    Mutation("version", EARNING,
             '(b.version, b.hexversion, b.flags, b.triple, b.pointer_size) != \\',
             '(me.version, b.hexversion, b.flags, b.triple, b.pointer_size) != \\',
             "a table is for the build only with its version string",
             [ID + "test_each_identity_key_is_compared_by_the_one_rule[version]"]),
    Mutation("hexversion", EARNING,
             '(b.version, b.hexversion, b.flags, b.triple, b.pointer_size) != \\',
             '(b.version, me.hexversion, b.flags, b.triple, b.pointer_size) != \\',
             "a table is for the build only with its hexversion (another patch level is only proven)",
             [ID + "test_each_identity_key_is_compared_by_the_one_rule[hexversion]"]),
    Mutation("flags", EARNING,
             '(b.version, b.hexversion, b.flags, b.triple, b.pointer_size) != \\',
             '(b.version, b.hexversion, me.flags, b.triple, b.pointer_size) != \\',
             "a table is for the build only with its layout flags (Py_DEBUG, Py_GIL_DISABLED, ...)",
             [ID + "test_each_identity_key_is_compared_by_the_one_rule[config]"]),
    Mutation("triple", EARNING,
             '(b.version, b.hexversion, b.flags, b.triple, b.pointer_size) != \\',
             '(b.version, b.hexversion, b.flags, me.triple, b.pointer_size) != \\',
             "a table is for the build only with its target triple",
             [ID + "test_each_identity_key_is_compared_by_the_one_rule[triple]"]),
    Mutation("pointer-size", EARNING,
             '(b.version, b.hexversion, b.flags, b.triple, b.pointer_size) != \\',
             '(b.version, b.hexversion, b.flags, b.triple, me.pointer_size) != \\',
             "a table is for the build only with its pointer size",
             [ID + "test_each_identity_key_is_compared_by_the_one_rule[pointer_size]"]),
    # ------------------------------------------------ earning(): how a table of the build may be exact
    Mutation("build-id", EARNING,
             'if me.build_id and me.build_id in b.build_ids:',
             'if me.build_id and (me.build_id in b.build_ids or b.build_ids):',
             "exact by build-id only with this binary's build-id (not any recorded one)",
             [ID + "test_another_binarys_build_id_vouches_for_nothing"]),
    Mutation("defines-known", EARNING,
             'if b.defines is None:',
             'if False:',
             "exact by inputs only when the table knows its core's defines",
             [ID + "test_a_table_without_defines_is_not_exact_by_its_inputs"]),
    Mutation("package-vendor", EARNING,
             ' and b.vendor == me.vendor:',
             ':',
             "exact by package only with the same package version",
             [ID + "test_without_headers_only_the_same_distributor_package_is_exact"]),
    Mutation("package-upstream", EARNING,
             'if distributor(me.vendor) != UPSTREAM and b.vendor',
             'if b.vendor',
             "no package rule for upstream (python.org's version pins no inputs)",
             [ID + "test_an_upstream_build_without_headers_is_never_exact_by_package"]),
    # ------------------------------------------------ the first lookup's short way (earning.by_build_id_alone, core.py)
    Mutation("alone-version", EARNING,
             '(shown.version, shown.hexversion, shown.pointer_size)',
             '(b.version, shown.hexversion, shown.pointer_size)',
             "the short way takes a table of this build-id only for the version the interpreter shows",
             [FIRST + "test_a_table_of_this_build_id_for_another_build_than_the_interpreter_shows_takes_the_whole_way"]),
    Mutation("alone-hexversion", EARNING,
             '(shown.version, shown.hexversion, shown.pointer_size)',
             '(shown.version, b.hexversion, shown.pointer_size)',
             "the short way takes a table of this build-id only for the hexversion the interpreter shows",
             [FIRST + "test_a_table_of_this_build_id_for_another_build_than_the_interpreter_shows_takes_the_whole_way"]),
    Mutation("alone-pointer-size", EARNING,
             '(shown.version, shown.hexversion, shown.pointer_size)',
             '(shown.version, shown.hexversion, b.pointer_size)',
             "the short way takes a table of this build-id only for the pointer size the interpreter shows",
             [FIRST + "test_a_table_of_this_build_id_for_another_build_than_the_interpreter_shows_takes_the_whole_way"]),
    Mutation("alone-shown-flags", EARNING,
             'if any(b.on(flag) != bool(value) for flag, value in shown.shown.items()):',
             'if False:',
             "the short way takes a table of this build-id only with the layout flags the interpreter shows",
             [FIRST + "test_a_table_of_this_build_id_for_another_build_than_the_interpreter_shows_takes_the_whole_way"]),
    Mutation("alone-build-id", EARNING,
             'if not build_id or build_id not in b.build_ids:',
             'if not build_id:',
             "the short way's table records this binary's build-id",
             [], equivalent="core.Runtime.by_build_id hands it only the one entry that records the build-id "
                            "(`alone-one-table`)"),
    Mutation("alone-one-table", CORE,
             'if len(named) != 1:',
             'if not named:',
             "the short way only where exactly one table records this build-id (of this build's own tables where "
             "it has any, else of the shipped ones)",
             [FIRST + "test_a_build_id_no_table_records_takes_the_whole_way",
              FIRST + "test_own_tables_that_do_not_name_one_take_the_whole_way[two record it]"]),
    Mutation("alone-own-table", CORE,
             'if own:                     # they rank first',
             'if False:',
             "where this build has tables of its own of its version (they rank first), the short way takes one of "
             "them or none",
             [FIRST + "test_an_own_table_of_this_version_takes_the_whole_way",
              FIRST + "test_an_own_table_that_records_this_build_id_is_taken_by_the_short_way"]),
    # ------------------------------------------------ struct by struct
    Mutation("no-set-vendor", EARNING,
             'return self.whole() and (self.same_vendor or not source_dependent(row.defined_in, row.origin))',
             'return self.whole()',
             "a struct of a .c file without a set needs the same vendor",
             [ID + "test_a_vendor_mismatch_leaves_only_source_dependent_structs_to_the_live_check"]),
    Mutation("set-source-vendor", EARNING,
             '        if source and not self.same_vendor:\n            return False\n',
             '',
             "a set with source-tree files needs the same vendor",
             [ID + "test_a_set_with_source_files_needs_the_same_vendor"]),
    Mutation("set-leaves", EARNING,
             'return all(mine.leaf(n) == view.values[n] for n in leaves) and \\',
             'return all(True for n in leaves) and \\',
             "every leaf macro of a set has the build's value",
             [ID + "test_a_leaf_macro_that_differs_makes_the_structs_that_depend_on_it_not_exact"]),
    Mutation("set-digests", EARNING,
             '            all(mine.digest(f, len(view.digests[f])) == view.digests[f] for f in files)',
             '            all(True for f in files)',
             "every installed file of a set has the build's text",
             [ID + "test_a_header_a_struct_reaches_that_differs_makes_it_not_exact_and_no_other"]),
    Mutation("set-missing-file", EARNING,
             '            all(mine.digest(f, len(view.digests[f])) == view.digests[f] for f in files)',
             '            all(mine.digest(f, len(view.digests[f])) in (view.digests[f], None) for f in files)',
             "a file of a set the build lacks is not the same",
             [ID + "test_a_header_the_build_lacks_makes_the_structs_that_need_it_not_exact"]),
    Mutation("whole-known", EARNING,
             'self._whole = bool(mine) and (inputs.get("pyconfig_h"), inputs.get("headers")) == \\',
             'self._whole = (inputs.get("pyconfig_h"), inputs.get("headers")) == \\',
             "the whole-build rule needs this build's inputs (none read: never exact)",
             [], equivalent="a build whose inputs are not read has no defines to compare, and a table without "
                            "defines is never exact by inputs (`defines-known`); with none read at all, "
                            "`mine.get` fails before anything is exact"),
    Mutation("whole-pyconfig", EARNING,
             '(inputs.get("pyconfig_h"), inputs.get("headers")) == \\\n                (mine.get("pyconfig_h"), mine.get("headers"))',
             '(inputs.get("headers"),) == \\\n                (mine.get("headers"),)',
             "the whole-build rule compares pyconfig.h",
             [ID + "test_a_table_without_dependency_data_is_exact_only_by_the_whole_builds_inputs"]),
    Mutation("whole-headers", EARNING,
             '(inputs.get("pyconfig_h"), inputs.get("headers")) == \\\n                (mine.get("pyconfig_h"), mine.get("headers"))',
             '(inputs.get("pyconfig_h"),) == \\\n                (mine.get("pyconfig_h"),)',
             "the whole-build rule compares every header",
             [ID + "test_a_table_without_dependency_data_needs_this_builds_headers_and_core_defines[headers]"]),
    Mutation("whole-defines", EARNING,
             ' and self.build.defines == mine.get("defines")',
             '',
             "the whole-build rule compares the core's defines",
             [ID + "test_a_table_without_dependency_data_needs_this_builds_headers_and_core_defines[defines]"]),
    Mutation("same-vendor", EARNING,
             'return self.build is not None and self.me is not None and self.build.vendor == self.me.vendor',
             'return True',
             "the same vendor is the same package version",
             [ID + "test_each_package_version_is_its_own_vendor_for_c_structs"]),
    # ------------------------------------------------ constants
    Mutation("constant-pyconfig", EARNING,
             'return integer(self.me.files.leaf(name.split("@", 1)[0])) == value',
             'return True',
             "a pyconfig.h constant is exact only by the build's own value",
             [ID + "test_a_pyconfig_constant_depends_on_itself"]),
    Mutation("constant-source-vendor", EARNING,
             'return self.whole() and (self.same_vendor or defined_in.startswith("Include/"))',
             'return self.whole()',
             "a source tree's constant needs the same vendor",
             [ID + "test_a_source_trees_constant_needs_the_same_vendor"]),
    # ------------------------------------------------ the choice of tables (choice.py)
    Mutation("near-minor", CHOICE,
             'if e["hexversion"] >> 16 == me.hexversion >> 16',
             'if True',
             "only tables of the same minor version are candidates for a proof",
             [ID + "test_a_proof_is_sought_only_among_tables_of_the_same_minor_flags_and_target"]),
    Mutation("near-target", CHOICE,
             'and (identity.flag_set(e["config"]), e["triple"], e["pointer_size"]) == mine]',
             ']',
             "only tables of the same layout flags, target and pointer size are candidates for a proof",
             [ID + "test_a_proof_is_sought_only_among_tables_of_the_same_minor_flags_and_target"]),
    Mutation("proof-passes", CHOICE,
             '        if result.ok:\n            t.near',
             '        if True:\n            t.near',
             "a table answers as proven only when its proof passed",
             [ID + "test_a_failed_live_check_falls_through_to_the_next_candidate"]),
    Mutation("strict", CHOICE,
             '    if candidates and strict:',
             '    if False:',
             "OFFSETS_STRICT refuses every table that is not exact",
             [ID + "test_strict_mode_refuses_what_is_only_proven"]),
    Mutation("earned-proven", CHOICE,
             'if t.earned(key, path) == "proven":',
             'if t.earned(key, path) is not None or True:',
             "a table answers a name it does not have exactly only where its proof read it",
             [ID + "test_a_struct_nothing_proves_is_refused"]),
    # ------------------------------------------------ the proof cache's key (proof_cache.py)
    Mutation("proof-key-table", PROOFS,
             '        h.update(_stat(table.source).encode())\n',
             '',
             "a proof is kept per table file",
             [ID + "test_a_proof_kept_for_one_table_is_not_used_for_another"]),
    Mutation("proof-key-binary", PROOFS,
             '        h.update(_stat(binary).encode())\n',
             '',
             "a proof is kept per binary file",
             [ID + "test_a_proof_kept_for_one_binary_is_not_used_for_another"]),
    Mutation("proof-key-build-id", PROOFS,
             'sys.abiflags if hasattr(sys, "abiflags") else "",\n                                        build_id)',
             'sys.abiflags if hasattr(sys, "abiflags") else "",\n                                        None)',
             "a proof is kept per build-id of the image in memory",
             [ID + "test_a_proof_kept_for_one_binary_is_not_used_for_another"]),
    Mutation("proof-key-code", PROOFS,
             '        for p in code_files():\n',
             '        for p in []:\n',
             "a proof is kept per version of the check's code and data",
             [ID + "test_a_proof_kept_for_other_check_code_is_not_used"]),
    Mutation("proof-load-key", PROOFS,
             '        if doc.get("key") != k:\n            return None\n',
             '',
             "an entry of another key (a 32-digit name clash) is a miss",
             [ID + "test_a_proof_entry_of_another_key_is_a_miss"]),
    Mutation("proof-load-ok", PROOFS,
             'return r if r.ok else None',
             'return r',
             "only a passing check is read back",
             [ID + "test_a_proof_entry_of_another_key_is_a_miss"]),
    # ------------------------------------------------ another process's headers (remote/installed.py)
    Mutation("identify-escaping", "offsets/remote/installed.py",
             '    if leaks:\n        out["note"]',
             '    if False:\n        out["note"]',
             "a process's headers that link out of its root are not digested (no table exact by them)",
             ["tests/test_process_root.py::test_a_header_linking_out_of_the_root_makes_no_table_exact_by_headers"]),
    # ------------------------------------------------ dependency sets as the compact form stores them
    Mutation("set-c-library", DEPENDS,
             '                names.update(self.c_library)\n',
             '                pass\n',
             "`*` in a set stands for every C library macro of pyconfig.h",
             [ID + "test_a_c_library_macro_that_differs_makes_its_structs_not_exact"]),
    Mutation("set-base", DEPENDS,
             '                names.update(base[0])\n                named.update(base[1])\n',
             '',
             "`^K` in a set holds everything set K holds",
             [ID + "test_a_file_of_a_base_set_that_differs_makes_the_sets_built_on_it_not_exact"]),
    Mutation("set-base-source", DEPENDS,
             '                source = source or base[2]\n',
             '',
             "a set built on a set with source-tree files has source-tree files",
             [ID + "test_a_set_built_on_one_with_source_files_has_them_too"]),
    # ------------------------------------------------ the running build's triple (layout/identity.py)
    Mutation("c-library", "offsets/layout/identity.py",
             '    if not rest.startswith("gnu") or glibc:\n',
             '    if True:\n',
             "on Linux the triple names the C library the process loaded: a glibc table never answers under musl",
             ["tests/test_c_library.py::test_a_glibc_build_s_tables_do_not_answer_where_the_c_library_is_not_glibc"]),
]


def _copy(dest: Path) -> None:
    """The checkout at `dest`, hard-linked (what a test writes is a new file, never the linked one)."""
    skip = {".git", ".venv", ".cache", "build", ".pytest_cache"}
    for entry in REPO.iterdir():
        if entry.name in skip or entry.name.endswith(".egg-info"):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name, copy_function=os.link, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            os.link(entry, dest / entry.name)


def applied(m: Mutation, dest: Path) -> None:
    """`m` written into the copy at `dest` (a new file, not the linked original)."""
    path = dest / m.file
    text = path.read_text()
    if text.count(m.old) != 1:
        raise SystemExit(f"{m.name}: the text to change is {text.count(m.old)} times in {m.file}, not once: "
                         f"update tests/identity_mutations.py")
    path.unlink()
    path.write_text(text.replace(m.old, m.new))


def _pytest(tests, mutation=None, python: str = sys.executable) -> tuple:
    """(pytest's exit status, its last lines): `tests` run on a copy of the checkout with `mutation`
    applied (if any), on a fresh cache and tables directory."""
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        dest = Path(tmp) / "repo"
        dest.mkdir()
        _copy(dest)
        if mutation is not None:
            applied(mutation, dest)
        env = dict(os.environ, OFFSETS_CACHE=str(Path(tmp) / "cache"), OFFSETS_TABLES=str(Path(tmp) / "tables"),
                   PYTHONDONTWRITEBYTECODE="1")
        env.pop("PYTHONPATH", None)
        proc = subprocess.run([python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
                              cwd=dest, env=env, capture_output=True, text=True, timeout=900)
        return proc.returncode, "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])


def baseline(python: str = sys.executable) -> tuple:
    """(whether every test the catalogue names passes without a mutation, pytest's last lines): a
    test that fails anyway would count every mutation it is named for as caught."""
    tests = sorted({t for m in MUTATIONS for t in m.tests})
    status, tail = _pytest(tests, python=python)
    return status == 0, tail


def run(m: Mutation, python: str = sys.executable) -> tuple:
    """(caught, pytest's last lines) of mutation `m`: its tests fail with it applied."""
    status, tail = _pytest(m.tests, m, python)
    if status not in (0, 1):
        raise RuntimeError(f"{m.name}: pytest could not run its tests (exit {status}):\n{tail}")
    return status == 1, tail


def main(argv) -> int:
    chosen = [MUTATIONS[int(a)] for a in argv] if argv else MUTATIONS
    ok, tail = baseline()
    print(f"without a mutation, the catalogue's tests {'pass' if ok else 'FAIL'}: {tail.splitlines()[-1]}", flush=True)
    if not ok:
        print(tail)
        return 1
    survived = 0
    for m in chosen:
        if m.equivalent:
            print(f"{MUTATIONS.index(m):>2} {m.name:<24} equivalent: {m.equivalent}")
            continue
        caught, tail = run(m)
        survived += not caught
        print(f"{MUTATIONS.index(m):>2} {m.name:<24} {'caught' if caught else 'SURVIVED'}  by {', '.join(m.tests)}",
              flush=True)
    run_ = [m for m in chosen if not m.equivalent]
    print(f"{len(run_) - survived} of {len(run_)} loosenings caught ({len(chosen) - len(run_)} equivalent)")
    return 1 if survived else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
