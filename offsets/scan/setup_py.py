"""Just enough of setup.py (CPython 3.11 and older) to know how it compiles each `.c` file on Linux.

setup.py is read, never run: its `Extension(...)` calls are found in the syntax tree and their
arguments evaluated from literals and the variables assigned before them (`extra_compile_args =
['-DPy_BUILD_CORE_MODULE']`, `os.path.join(self.srcdir, ...)`, `'_codecs_%s.c' % loc` in a loop
over a literal). An `if` whose test is known on Linux (`MACOS`, `HOST_PLATFORM == 'sunos5'`,
`'--with-system-expat' in sysconfig.get_config_var("CONFIG_ARGS")`, a `HAVE_*` of pyconfig.h) takes
its one branch; any other `if` takes both, so a value set differently in the two is *ambiguous*:
the file is then reported with why, never given a guessed flag.

Why an interpreter of setup.py rather than a reviewed table of its results in
data/source_units.yaml (weighed when 3.11 and older builds were added): the table would not be one list per version but one
per build, since setup.py's answer depends on pyconfig.h and configure's options: for Debian's
3.9.2 its Extensions name 98 files as release and 97 as debug (`xxlimited` and its
`-DPy_LIMITED_API=0x03050000` only without Py_DEBUG), 30 of them with flags of their own and 25
with flags setup.py decides by probing the machine; for 3.11.2, 91 (one with flags). That is some
three hundred hand-reviewed rows, and the test that keeps them from drifting against the real
setup.py would need this same reader, so the table adds a copy to review without removing the code
to trust. Reading the real file keeps one source of truth, fails closed (an unknown value is
reported, never guessed), and is checked from outside: clang must parse every unit planned with
its flags without an error (a missing `-DPy_BUILD_CORE_MODULE` is one in 3.9's
`_asynciomodule.c`), and tests/test_sources.py checks its answers against setup.py's own text.
"""
from __future__ import annotations

import ast
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

KEYWORDS = ("include_dirs", "define_macros", "undef_macros", "extra_compile_args")
_LIMIT = 256            # possible values kept per name before it counts as unknown


class Unknown(Exception):
    """An expression setup.py computes at build time (its text says which)."""


@dataclass(eq=False)
class Ext:
    """One `Extension(...)` call: its name, its possible source lists and keyword values."""

    line: int
    name: frozenset
    sources: frozenset
    kw: dict = field(default_factory=dict)       # keyword -> frozenset of tuples, or Unknown


@dataclass(frozen=True)
class SetupFlags:
    """How setup.py compiles one file: its -I/-D/-U flags, or why they cannot be known here."""

    module: str
    flags: tuple[str, ...] = ()
    unresolved: str = ""         # "" when every flag is known
    partial: tuple[str, ...] = ()  # the flags every possibility shares (when unresolved)


class ConfigArgs:
    """`sysconfig.get_config_var("CONFIG_ARGS")` where only membership is known: `opt in` it is
    True for `present`, False for anything else when `complete`, and unknown otherwise."""

    def __init__(self, present: frozenset, complete: bool) -> None:
        self.present, self.complete = present, complete

    def __contains__(self, opt) -> bool:
        if opt in self.present:
            return True
        if self.complete:
            return False
        raise Unknown(f"whether configure was given {opt}")


class _Ref:
    """An `Extension` object bound to a name (`ext = Extension(...)`)."""

    def __init__(self, ext: Ext) -> None:
        self.ext = ext


def _product(sets):
    out = set()
    for combo in itertools.product(*sets):
        out.add(combo)
        if len(out) > _LIMIT:
            raise Unknown("too many possible values")
    return frozenset(out)


class _Reader:
    def __init__(self, srcdir: str, facts: dict, config: dict) -> None:
        self.srcdir = srcdir
        self.facts = facts          # module-level names fixed on Linux (HOST_PLATFORM ...)
        self.config = config        # sysconfig.get_config_var() values known here
        self.exts: list[Ext] = []

    # -- expressions: each evaluates to a frozenset of possible values, or raises Unknown

    def ev(self, node, env) -> frozenset:
        text = lambda: ast.unparse(node)[:80]
        if isinstance(node, ast.Constant):
            return frozenset([node.value])
        if isinstance(node, (ast.List, ast.Tuple)):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return self._starred(node, env)
            return _product([self.ev(e, env) for e in node.elts])
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise Unknown(text())
            return frozenset(tuple(zip(k, v)) for k, v in zip(
                _product([self.ev(k, env) for k in node.keys]), _product([self.ev(v, env) for v in node.values])))
        if isinstance(node, ast.Name):
            v = env.get(node.id, self.facts.get(node.id))
            if v is None or isinstance(v, Unknown):
                raise Unknown(node.id)
            return v
        if isinstance(node, ast.Attribute) and ast.unparse(node) == "self.srcdir":
            return frozenset([self.srcdir])
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            left, right = self.ev(node.left, env), self.ev(node.right, env)
            out = set()
            for a, b in itertools.product(left, right):
                try:
                    out.add(a + b if isinstance(node.op, ast.Add) else a % b)
                except TypeError:
                    raise Unknown(text()) from None
            return frozenset(out)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return frozenset(not v for v in self.ev(node.operand, env))
        if isinstance(node, ast.BoolOp):
            values = [self.ev(v, env) for v in node.values]
            pick = all if isinstance(node.op, ast.And) else any
            return frozenset(pick(bool(x) for x in combo) for combo in itertools.product(*values))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = node.ops[0]
            table = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
                     ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
            f = table.get(type(op))
            if f is None:
                raise Unknown(text())
            out = set()
            for a, b in itertools.product(self.ev(node.left, env), self.ev(node.comparators[0], env)):
                try:
                    out.add(f(a, b))
                except TypeError:
                    raise Unknown(text()) from None
            return frozenset(out)
        if isinstance(node, ast.IfExp):
            t = self.test(node.test, env)
            if t is None:
                return self.ev(node.body, env) | self.ev(node.orelse, env)
            return self.ev(node.body if t else node.orelse, env)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        raise Unknown(text())

    def _starred(self, node, env) -> frozenset:
        parts = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                parts.append(self.ev(e.value, env))
            else:
                parts.append(frozenset((v,) for v in self.ev(e, env)))
        return frozenset(sum(combo, ()) for combo in _product(parts))

    def _call(self, node, env) -> frozenset:
        func = ast.unparse(node.func)
        if node.keywords and func != "Extension":
            raise Unknown(ast.unparse(node)[:80])
        if func == "Extension":
            return frozenset([_Ref(self.extension(node, env))])
        args = [self.ev(a, env) for a in node.args]
        if func in ("os.path.join", "os.path.abspath", "os.path.normpath"):
            fn = {"os.path.join": os.path.join, "os.path.abspath": os.path.normpath,
                  "os.path.normpath": os.path.normpath}[func]
            return frozenset(fn(*combo) for combo in _product(args))
        if func == "sysconfig.get_config_var" and len(args) == 1 and len(args[0]) == 1:
            name = next(iter(args[0]))
            if name in self.config:
                return frozenset([self.config[name]])
            raise Unknown(f"sysconfig.get_config_var({name!r})")
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("startswith", "endswith", "split"):
            out = set()
            for obj in self.ev(node.func.value, env):
                for combo in _product(args):
                    if not isinstance(obj, str):
                        raise Unknown(ast.unparse(node)[:80])
                    v = getattr(obj, node.func.attr)(*combo)
                    out.add(tuple(v) if isinstance(v, list) else v)
            return frozenset(out)
        raise Unknown(ast.unparse(node)[:80])

    def test(self, node, env):
        """True or False when the test is known on Linux, None when setup.py decides it at build time."""
        try:
            values = {bool(v) for v in self.ev(node, env)}
        except Unknown:
            return None
        return values.pop() if len(values) == 1 else None

    def extension(self, node, env) -> Ext:
        def value(expr):
            try:
                return self.ev(expr, env)
            except Unknown as e:
                return e
        args = list(node.args)
        kws = {k.arg: k.value for k in node.keywords if k.arg}
        ext = Ext(node.lineno, value(args[0] if args else kws.get("name")),
                  value(args[1] if len(args) > 1 else kws.get("sources", ast.List([]))))
        for k in node.keywords:
            if k.arg is None:       # **kwargs: a dict of keyword values
                d = value(k.value)
                for kw in KEYWORDS:
                    ext.kw[kw] = d if isinstance(d, Unknown) else _kw_from_dicts(d, kw)
        for kw in KEYWORDS:
            if kw in kws:
                ext.kw[kw] = value(kws[kw])
        self.exts.append(ext)
        return ext

    # -- statements: env maps a name to its possible values (or an Unknown)

    def run(self, stmts, env: dict) -> dict:
        for st in stmts:
            env = self.stmt(st, env)
        return env

    def stmt(self, st, env: dict) -> dict:
        if isinstance(st, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            return env
        if isinstance(st, ast.If):
            t = self.test(st.test, env)
            if t is None:
                return _merge(self.run(st.body, dict(env)), self.run(st.orelse, dict(env)))
            return self.run(st.body if t else st.orelse, env)
        if isinstance(st, ast.For):
            try:
                seqs = self.ev(st.iter, env)
            except Unknown:
                seqs = None
            if seqs is None or len(seqs) != 1 or not isinstance(next(iter(seqs)), tuple) \
                    or not isinstance(st.target, ast.Name):
                self._calls(st.iter, env)
                inner = dict(env)
                if isinstance(st.target, ast.Name):
                    inner[st.target.id] = Unknown(ast.unparse(st.iter)[:80])
                return _merge(env, self.run(st.body, inner))
            for item in next(iter(seqs)):
                env = self.run(st.body, {**env, st.target.id: frozenset([item])})
            return env
        if isinstance(st, (ast.While, ast.With)):
            return _merge(env, self.run(st.body, dict(env))) if isinstance(st, ast.While) else self.run(st.body, env)
        if isinstance(st, ast.Try):
            body = self.run(st.body, dict(env))
            for h in st.handlers:
                body = _merge(body, self.run(h.body, dict(env)))
            return self.run(st.finalbody, body)
        if isinstance(st, ast.Assign):
            try:
                v = self.ev(st.value, env)
            except Unknown as e:
                self._calls(st.value, env)
                v = e
            for target in st.targets:
                if isinstance(target, ast.Name):
                    if target.id not in self.facts:
                        env[target.id] = v
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    env = self._set_item(target, v, env)
                elif isinstance(target, ast.Tuple):
                    for t in target.elts:
                        if isinstance(t, ast.Name):
                            env[t.id] = Unknown(ast.unparse(st.value)[:80])
            return env
        if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) and isinstance(st.op, ast.Add):
            env[st.target.id] = self._combine(env.get(st.target.id), st.value, env, lambda a, b: a + b)
            return env
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            return self._mutate(st.value, env)
        for child in ast.iter_child_nodes(st):
            if isinstance(child, ast.expr):
                self._calls(child, env)
        return env

    def _calls(self, node, env) -> None:
        """Record the Extension calls inside an expression that is otherwise not evaluated."""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and ast.unparse(sub.func) == "Extension":
                self.extension(sub, env)

    def _combine(self, old, expr, env, fn):
        if old is None or isinstance(old, Unknown):
            return old or Unknown(ast.unparse(expr)[:80])
        try:
            add = self.ev(expr, env)
            out = frozenset(fn(a, b) for a, b in itertools.product(old, add))
        except (Unknown, TypeError) as e:
            return e if isinstance(e, Unknown) else Unknown(ast.unparse(expr)[:80])
        return out if len(out) <= _LIMIT else Unknown("too many possible values")

    def _set_item(self, target, v, env):
        name = target.value.id
        old = env.get(name)
        try:
            keys = self.ev(target.slice, env)
        except Unknown as e:
            env[name] = e
            return env
        if old is None or isinstance(old, Unknown) or isinstance(v, Unknown) or len(keys) != 1:
            env[name] = old if isinstance(old, Unknown) else Unknown(ast.unparse(target)[:80])
            return env
        key = next(iter(keys))
        env[name] = frozenset(tuple((k, x) for k, x in d if k != key) + ((key, val),) for d in old for val in v)
        return env

    def _mutate(self, call, env) -> dict:
        """`name.append(x)`, `name.extend(x)`, `ext.kw.append(x)`; any other call: its Extensions."""
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr in ("append", "extend") and len(call.args) == 1:
            grow = (lambda a, b: a + (b,)) if f.attr == "append" else (lambda a, b: a + tuple(b))
            if isinstance(f.value, ast.Name):
                name = f.value.id
                env[name] = self._combine(env.get(name), call.args[0], env, grow)
                return env
            if isinstance(f.value, ast.Attribute) and isinstance(f.value.value, ast.Name) \
                    and f.value.attr in KEYWORDS:
                refs = env.get(f.value.value.id)
                if isinstance(refs, frozenset):
                    for ref in refs:
                        if isinstance(ref, _Ref):
                            key = _ext_key(ref.ext, f.value.attr)
                            env[key] = self._combine(env.get(key, ref.ext.kw.get(f.value.attr, frozenset([()]))),
                                                     call.args[0], env, grow)
                    return env
        self._calls(call, env)
        return env

    def read(self, tree) -> list[Ext]:
        module = self.run(tree.body, {})
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                final = self.run(node.body, dict(module))
                for key, v in final.items():        # ext.kw.append(...) after the Extension call
                    if isinstance(key, tuple):
                        ext, kw = key
                        ext.kw[kw] = v
        return self.exts


def _ext_key(ext: Ext, kw: str):
    return (ext, kw)


def _kw_from_dicts(dicts: frozenset, kw: str) -> frozenset:
    return frozenset(dict(d).get(kw, ()) for d in dicts)


def _merge(a: dict, b: dict) -> dict:
    out = {}
    for k in a.keys() | b.keys():
        x, y = a.get(k), b.get(k)
        if x is None or y is None:
            # set on one path only: absent on the other; for an extension keyword, its creation value
            x = x if x is not None else (k[0].kw.get(k[1], frozenset([()])) if isinstance(k, tuple) else None)
            y = y if y is not None else (k[0].kw.get(k[1], frozenset([()])) if isinstance(k, tuple) else None)
            if x is None or y is None:
                out[k] = Unknown(f"{k} is set on one path only")
                continue
        if isinstance(x, Unknown) or isinstance(y, Unknown):
            out[k] = x if isinstance(x, Unknown) else y
        else:
            out[k] = x | y
    return out


def _flags(kw: str, value: tuple, srcdir: str) -> list[str]:
    if kw == "include_dirs":
        return [f"-I{d if os.path.isabs(d) else os.path.join(srcdir, d)}" for d in value]
    if kw == "define_macros":
        return [f"-D{m[0]}" if m[1] is None else f"-D{m[0]}={m[1]}" for m in value]
    if kw == "undef_macros":
        return [f"-U{m}" for m in value]
    out, it = [], iter(value)
    for a in it:        # extra_compile_args: the preprocessor options only
        if a in ("-I", "-D", "-U"):
            a += next(it, "")
        if a.startswith(("-D", "-U", "-I")) and len(a) > 2:
            out.append(a)
    return out


def compiled(setup: Path, srcdir: Path, facts: dict, config: dict) -> dict[str, SetupFlags]:
    """`Modules/x.c` -> how setup.py compiles it on Linux, for every source its Extensions name."""
    tree = ast.parse(setup.read_text(errors="replace"), str(setup))
    exts = _Reader(str(srcdir), facts, config).read(tree)
    per_file: dict = {}
    for ext in exts:
        if isinstance(ext.sources, Unknown):
            continue                # names no file we can know; its files stay "not compiled"
        module = "/".join(sorted(ext.name)) if isinstance(ext.name, frozenset) else f"line {ext.line}"
        files = {s for srcs in ext.sources for s in srcs if isinstance(s, str) and s.endswith(".c")}
        for src in files:
            per_file.setdefault(str(Path("Modules") / src), []).append((module, ext))
    out = {}
    for rel, entries in sorted(per_file.items()):
        options, why = [], ""
        for module, ext in entries:
            sets = []
            for kw in KEYWORDS:
                v = ext.kw.get(kw, frozenset([()]))
                if isinstance(v, Unknown):
                    why = why or f"setup.py computes {module}'s {kw} at build time ({v})"
                    v = frozenset([()])
                sets.append(frozenset(tuple(_flags(kw, x, str(srcdir))) for x in v))
            options += [sum(combo, ()) for combo in itertools.product(*sets)]
        module = "/".join(sorted({m for m, _ in entries}))
        distinct = set(options)
        if len(distinct) == 1 and not why:
            out[rel] = SetupFlags(module, options[0])
            continue
        common = tuple(f for f in options[0] if all(f in o for o in options))
        why = why or (f"setup.py compiles it with flags it decides at build time "
                      f"({len(distinct)} possible sets, e.g. {' '.join(sorted(set().union(*distinct) - set(common)))[:80]})")
        out[rel] = SetupFlags(module, common, why, common)
    return out
