"""Just enough of make to read CPython's Makefile.pre.in: variables, rules and recipes, expansion
(`$(VAR)`, `$(VAR:.c=.o)`, `$(if ...)`), and the -D/-U/-I/-std options of a compile command."""
from __future__ import annotations

import fnmatch
import re
import shlex
from pathlib import Path

from ..errors import BuildError


class Makefile:
    """Just enough of make to read Makefile.pre.in: variables, rules and their recipes, expansion."""

    def __init__(self, text: str, values: dict) -> None:
        text = re.sub(r"@(\w+)@", lambda m: values.get(m.group(1), ""), text)
        self.vars: dict = {}
        self.rules: list = []           # (targets, prerequisites, [recipe lines])
        current = None
        for line in _logical_lines(text):
            if line.startswith("\t"):
                body = line.strip()
                if current is not None and body and not body.startswith("#"):
                    current[2].append(body)
                continue
            line = re.sub(r"(?<!\\)#.*", "", line).rstrip()
            if not line.strip():
                continue
            m = re.match(r"^\s*([A-Za-z_][\w.]*)\s*(\+=|:=|\?=|=)\s*(.*)$", line)
            if m:
                name, op, value = m.groups()
                if op == "+=":
                    self.vars[name] = self.vars.get(name, "") + " " + value
                elif op != "?=" or name not in self.vars:
                    self.vars[name] = value
                current = None
                continue
            m = re.match(r"^([^:=]+?)\s*::?(?!=)\s*(.*)$", line)
            if m and not m.group(1).startswith(("ifeq", "ifneq", "ifdef", "ifndef", "include")):
                targets, rest = m.groups()
                prereqs, _, inline = rest.partition(";")
                current = (targets, prereqs, [inline.strip()] if inline.strip() else [])
                self.rules.append(current)
            else:
                current = None

    def expand(self, s: str, depth: int = 0) -> str:
        if depth > 40:
            raise BuildError(f"Makefile.pre.in: variables nest too deep while expanding {s[:60]!r}")
        out, i = [], 0
        while i < len(s):
            c = s[i]
            if c != "$" or i + 1 >= len(s):
                out.append(c)
                i += 1
                continue
            n = s[i + 1]
            if n == "$":
                out.append("$")
                i += 2
            elif n in "({":
                close, level, j = ")" if n == "(" else "}", 1, i + 2
                while j < len(s) and level:
                    level += (s[j] == n) - (s[j] == close)
                    j += 1
                out.append(self._reference(s[i + 2:j - 1], depth))
                i = j
            else:
                out.append(s[i:i + 2])      # $@, $<, $^: automatic variables stay as they are
                i += 2
        return "".join(out)

    def _reference(self, inner: str, depth: int) -> str:
        m = re.match(r"(\w+)\s+(.*)$", inner, re.S)
        if m and m.group(1) == "if":
            args = _split_args(m.group(2))
            cond = self.expand(args[0], depth + 1).strip()
            return self.expand(args[1] if cond else (args[2] if len(args) > 2 else ""), depth + 1)
        if m:
            return ""                       # $(shell ...), $(wildcard ...): nothing the flags need
        name = self.expand(inner, depth + 1)
        if ":" in name and "=" in name:     # substitution reference $(VAR:.c=.o)
            var, _, pattern = name.partition(":")
            old, _, new = pattern.partition("=")
            words = self.expand(self.vars.get(var, ""), depth + 1).split()
            return " ".join(w[:-len(old)] + new if old and w.endswith(old) else w for w in words)
        return self.expand(self.vars.get(name, ""), depth + 1)

    def words(self, s: str) -> list[str]:
        """The words of `s` expanded, split with shell rules (`srcdir` is shell-quoted: it may hold spaces)."""
        text = self.expand(s)
        try:
            return shlex.split(text)
        except ValueError:
            return text.split()


def _logical_lines(text: str):
    buf = ""
    for raw in text.splitlines():
        if raw.endswith("\\"):
            buf += raw[:-1] + " "
            continue
        yield buf + raw
        buf = ""
    if buf:
        yield buf


def _split_args(s: str) -> list[str]:
    args, level, cur = [], 0, ""
    for c in s:
        if c == "," and level == 0:
            args.append(cur)
            cur = ""
            continue
        level += (c == "(") - (c == ")")
        cur += c
    return args + [cur]


def relative(path: str, source: Path) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return str(p.relative_to(source))
        except ValueError:
            return path
    return str(Path(path))


def flags_of(cmd: str, source: Path, builddir: list[Path], what: str) -> tuple[str, ...]:
    """The -D/-U/-I/-std options of a compiler command line, with -I directories made absolute."""
    cmd = re.sub(r"`[^`]*`", "", cmd)
    try:
        tokens = shlex.split(cmd)
    except ValueError as e:
        raise BuildError(f"{what}: cannot split the compiler command {cmd[:80]!r}: {e}") from None
    out, it = [], iter(tokens)
    for t in it:
        if t in ("-I", "-D", "-U"):
            t += next(it, "")
        if t.startswith(("-D", "-U", "-std=")) and len(t) > 2:
            out.append(t)
        elif t.startswith("-I") and len(t) > 2:
            d = t[2:]
            if Path(d).is_absolute():
                dirs = [Path(d)]
            elif d == ".":
                dirs = builddir
            else:
                dirs = [source / d]
            out += [f"-I{x}" for x in dirs]
    return tuple(dict.fromkeys(out))        # first occurrence wins, as with the compiler


def _rules_by_target(mk: Makefile, source: Path) -> dict:
    """target (relative to the tree) -> [(prerequisites, compile lines)], made once per Makefile."""
    index = getattr(mk, "_by_target", None)
    if index is None:
        index = {}
        for targets, pre, body in mk.rules:
            cc = [l for l in body if " -c " in f" {l} "]
            entry = ([relative(p, source) for p in mk.words(pre)], cc)
            for t in mk.words(targets):
                index.setdefault(relative(t, source), []).append(entry)
        mk._by_target = index
    return index


def compile_command(mk: Makefile, obj: str, source: Path) -> tuple[str, list[str]]:
    """The recipe line compiling `obj` (explicit rule, else a pattern or suffix rule), and the
    prerequisites its rules list."""
    index = _rules_by_target(mk, source)
    recipe, prereqs = None, []
    for pre, cc in index.get(obj, []):
        prereqs += pre
        if cc and recipe is None:
            recipe = cc[0]
    if recipe is None:
        for t, entries in index.items():
            if t == ".c.o" or ("%" in t and fnmatch.fnmatch(obj, t.replace("%", "*"))):
                recipe = next((cc[0] for _, cc in entries if cc), None)
                if recipe is not None:
                    break
    if recipe is None:
        raise BuildError(f"{source}/Makefile.pre.in: no rule compiles {obj}")
    return mk.expand(recipe.replace("$<", shlex.quote(str(source / obj[:-2]) + ".c"))), prereqs
