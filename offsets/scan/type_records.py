"""Every type's own record of its layout, read from the sources' initializers: which struct a type's
instances have (`"list", sizeof(PyListObject)`, `offsetof(PyCodeObject, co_code_adaptive)`), and
which field each of its members is (`{"co_argcount", Py_T_INT, OFF(co_argcount), Py_READONLY}`).

A textual read of the `.c` files of a source tree: `PyTypeObject NAME = {...}` (positional, in the
order of the table's own `PyTypeObject` members, or designated), `PyType_Spec` with its
`PyType_Slot` list (`{Py_tp_members, NAME}`) and `PyMemberDef NAME[] = {...}`, with the macros the
same file defines before the initializer expanded (`#define OFF(x) offsetof(PyCodeObject, x)`).
Only what reads unambiguously is recorded: an initializer with a preprocessor conditional inside,
an expression of anything but `sizeof`, `offsetof`, integers and `+`/`-`, a member type or flag that
is no constant of the table, or a struct or field the table does not have, is left out. Two types of
one `tp_name` with different records are both left out. The scan's tests compare the records with
the compiled binary of the same sources (a live interpreter's own `tp_basicsize` and `PyMemberDef`s).

A record: `{"symbol", "basicsize", "itemsize", "members"}` by `tp_name`; a size is a list of
terms `[coefficient, kind, struct, path]` (kind `size`: sizeof(struct); `offset`: offsetof(struct,
path); `pointer`: a pointer's size; `int`: the coefficient alone); a member is `[name, type code,
flags, struct, path]`; a struct is named as the table names it (`name@FILE` where it qualifies it).
A size of 0 (inherited from the base by PyType_Ready) or a negative spec size (relative to the
base's) is left out.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Optional

from .source_text import BLOCK_COMMENT, CHARACTER, STRING

SOURCE_DIRS = ("Objects", "Python", "Modules", "Parser")
_COMMENT = re.compile(rf"{BLOCK_COMMENT}|//[^\n]*|({STRING}|{CHARACTER})", re.S)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*(define|undef)[ \t]+(\w+)(\([^)]*\))?(.*(?:\\\n.*)*)$", re.M)
_TYPE = re.compile(r"PyTypeObject\s+(\w+)\s*=\s*\{")
_SPEC = re.compile(r"PyType_Spec\s+(\w+)\s*=\s*\{")
_SLOTS = re.compile(r"PyType_Slot\s+(\w+)\s*\[\s*\w*\s*\]\s*=\s*\{")
_MEMBERS = re.compile(r"PyMemberDef\s+(\w+)\s*\[\s*\w*\s*\]\s*=\s*\{")
_HEAD = re.compile(r"^\s*Py(?:Var)?Object_HEAD_INIT\s*\(")
_STRING = re.compile(r'^"((?:[^"\\]|\\.)*)"$')


def _strip_comments(text: str) -> str:
    return _COMMENT.sub(lambda m: m.group(1) or " ", text)


class _Macros:
    """The macros a file defines, each valid from its `#define` to its `#undef` or redefinition."""

    def __init__(self, text: str) -> None:
        self.defs: dict = {}
        for m in _DEFINE.finditer(text):
            kind, name, params, body = m.groups()
            params = None if params is None else [p.strip() for p in params[1:-1].split(",") if p.strip()]
            self.defs.setdefault(name, []).append((m.start(), None if kind == "undef" else
                                                   (params, body.replace("\\\n", " ").strip())))

    def at(self, name: str, pos: int):
        found = None
        for start, d in self.defs.get(name, ()):
            if start < pos:
                found = d
        return found

    def expand(self, expr: str, pos: int, depth: int = 0) -> str:
        if depth > 8:
            raise ValueError("macros nested too deep")
        out, i = [], 0
        for m in re.finditer(r"\b[A-Za-z_]\w*\b", expr):
            d = self.at(m.group(), pos)
            if d is None or m.start() < i:
                continue
            params, body = d
            end = m.end()
            if params is not None:
                rest = expr[end:]
                call = re.match(r"\s*\(", rest)
                if not call:
                    continue
                args, stop = _call_args(rest, call.end())
                if len(args) != len(params):
                    raise ValueError(f"{m.group()} takes {len(params)} arguments")
                body = re.sub(r"\b\w+\b", lambda p: args[params.index(p.group())] if p.group() in params
                              else p.group(), body)
                end += stop
            out.append(expr[i:m.start()])
            out.append(f"({self.expand(body, pos, depth + 1)})")
            i = end
        out.append(expr[i:])
        return "".join(out)


def _call_args(text: str, start: int) -> tuple:
    """The comma-separated arguments of a call whose '(' ends at `start`, and where its ')' ends."""
    depth, args, cur = 1, [], start
    for i in range(start, len(text)):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[cur:i].strip())
                return [a for a in args if a], i + 1
        elif ch == "," and depth == 1:
            args.append(text[cur:i].strip())
            cur = i + 1
    raise ValueError("unbalanced parentheses")


def _body(text: str, open_brace: int) -> tuple:
    """The text inside the braces opening at `open_brace`, and where it ends."""
    depth = 0
    for i in range(open_brace, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[open_brace + 1:i], i
    raise ValueError("unbalanced braces")


def _elements(body: str) -> list:
    """The top-level comma-separated elements of an initializer's body."""
    return _call_args(body + ")", 0)[0]


def _terms(expr: str) -> list:
    """An integer expression of sizeof/offsetof as terms; ValueError for anything else."""
    e = re.sub(r"\s+", " ", expr).strip()
    while e.startswith("(") and _call_args(e, 1)[1] == len(e):
        e = e[1:-1].strip()
    terms, sign, i = [], 1, 0
    while i < len(e):
        if e[i] == " ":
            i += 1
            continue
        if e[i] in "+-":
            sign = -1 if e[i] == "-" else 1
            i += 1
            continue
        m = re.match(r"\(?\s*(?:Py_ssize_t|size_t|int)\s*\)\s*", e[i:])       # a cast of what follows
        if m:
            i += m.end()
            continue
        m = re.match(r"(sizeof|offsetof)\s*\(", e[i:])
        if m:
            args, stop = _call_args(e[i:], m.end())
            i += stop
            if m.group(1) == "sizeof":
                (what,) = args
                what = re.sub(r"^(struct|union)\s+", "", what.strip("() "))
                if what.endswith("*"):
                    terms.append([sign, "pointer", None, None])
                elif re.fullmatch(r"\w+", what):
                    terms.append([sign, "size", what, None])
                else:
                    raise ValueError(f"sizeof({what})")
            else:
                struct, path = (a.strip() for a in args)
                struct = re.sub(r"^(struct|union)\s+", "", struct)
                if not re.fullmatch(r"\w+", struct) or not re.fullmatch(r"\w+(\.\w+)*", path.replace(" ", "")):
                    raise ValueError(f"offsetof({struct}, {path})")
                terms.append([sign, "offset", struct, path.replace(" ", "")])
            continue
        m = re.match(r"\(\s*(\d+)\s*\)|(\d+)[uUlL]*", e[i:])
        if m:
            terms.append([sign * int(m.group(1) or m.group(2)), "int", None, None])
            i += m.end()
            continue
        if e[i] == "(":
            args, stop = _call_args(e[i:], 1)
            if len(args) != 1:
                raise ValueError(expr)
            inner = _terms(args[0])
            terms += [[sign * t[0], *t[1:]] for t in inner]
            i += stop
            continue
        raise ValueError(f"not a size: {expr}")
    return terms


class _File:
    """One `.c` file as the records read it, none of it the table's (so it is read while the units
    parse: `prepare_tree`): its macros, and its initializers of types, specs, slot lists and member
    lists; `typed` whether it names a type initializer's type at all."""

    def __init__(self, rel: str, text: str) -> None:
        self.rel = rel
        text = _strip_comments(text)
        self.typed = "PyTypeObject" in text or "PyType_Spec" in text
        self.macros = _Macros(text)
        self._found = {p.pattern: _initializers(text, p) for p in (_TYPE, _SPEC, _SLOTS, _MEMBERS)} if self.typed else {}

    def initializers(self, pattern) -> dict:
        return self._found[pattern.pattern]


def _initializers(text: str, pattern) -> dict:
    """name -> (body, position, has a conditional inside) of every initializer `pattern` finds in
    `text`; a body with a preprocessor conditional is cut before it (what follows depends on the build)."""
    out = {}
    for m in pattern.finditer(text):
        if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
            continue        # the word ends another name (the patterns lead with a literal: fast)
        try:
            body, _ = _body(text, m.end() - 1)
        except ValueError:
            continue
        body, cond = _conditionals(body)
        out[m.group(1)] = (body, m.start(), cond)
    return out


#: stands for an element a preprocessor conditional chooses (unreadable, but it keeps its place)
CHOSEN = "__chosen_by_a_conditional__"


def _conditionals(body: str) -> tuple:
    """(body, whether it had a conditional): each `#if ... #else ... #endif` (not nested) whose
    branches have the same number of elements becomes that many `CHOSEN` elements, so the elements
    after it keep their places; at anything else the body is cut before the conditional."""
    lines, out, group, cond = body.split("\n"), [], None, False
    for line in lines:
        d = re.match(r"\s*#\s*(\w+)", line)
        if not d:
            (group[-1] if group is not None else out).append(line)
            continue
        cond = True
        word = d.group(1)
        if word in ("if", "ifdef", "ifndef") and group is None:
            group = [[]]
        elif word in ("elif", "else") and group is not None:
            group.append([])
        elif word == "endif" and group is not None:
            counts = {len(_elements("\n".join(b) + ",")) if "".join(b).strip() else 0 for b in group}
            if len(counts) != 1 or len(group) < 2:
                return "\n".join(out), True
            out.append(f"{CHOSEN}," * counts.pop())
            group = None
        elif word in ("define", "undef", "include"):
            continue
        else:
            return "\n".join(out), True
    return "\n".join(out), cond


def _value(f: _File, expr: str, pos: int, constants: dict):
    """An int of an expression of integers, constants and `|`; None when it is anything else."""
    text = f.macros.expand(expr, pos)
    total = 0
    for part in re.split(r"\|", text):
        part = part.strip().strip("()").strip()
        if re.fullmatch(r"\d+", part):
            total |= int(part)
        elif part in constants and isinstance(constants[part], int):
            total |= constants[part]
        else:
            return None
    return total


def _members(f: _File, constants: dict) -> dict:
    """PyMemberDef array name -> [member...] of a file (arrays with a conditional inside are left out)."""
    out = {}
    for name, (body, pos, cond) in f.initializers(_MEMBERS).items():
        if cond:
            continue
        members = []
        for entry in _elements(body):
            if not entry.startswith("{"):
                break
            try:
                fields = _elements(_body(entry, 0)[0])
            except ValueError:
                break
            if not fields or not _STRING.match(fields[0].strip()):
                break           # the sentinel ({NULL}, {0}) ends the array
            if len(fields) < 4:
                continue
            mname = _STRING.match(fields[0].strip()).group(1)
            code, flags = _value(f, fields[1], pos, constants), _value(f, fields[3], pos, constants)
            try:
                terms = _terms(f.macros.expand(fields[2], pos))
            except ValueError:
                continue
            if code is None or flags is None or len(terms) != 1 or terms[0][:2] != [1, "offset"]:
                continue
            members.append([mname, code, flags, terms[0][2], terms[0][3]])
        out[name] = members
    return out


def _positional(elements: list, order: list) -> dict:
    """PyTypeObject member -> its element, of an initializer written in member order."""
    if elements and _HEAD.match(elements[0]):
        head = elements[0]
        _, stop = _call_args(head, _HEAD.match(head).end())
        rest = head[stop:].strip()
        return dict(zip(order[1:], ([rest] if rest else []) + elements[1:]))
    return dict(zip(order, elements))


def _designated(elements: list) -> dict:
    out = {}
    for e in elements:
        m = re.match(r"\.\s*(\w+)\s*=\s*(.*)$", e, re.S)
        if m:
            out[m.group(1)] = m.group(2).strip()
    return out


def _record(f: _File, pos: int, values: dict, member_lists: dict) -> tuple:
    """(tp_name, record) of a type initializer's values (tp_name, tp_basicsize...), or None."""
    name = _STRING.match(re.sub(r'"\s*"', "", f.macros.expand(values.get("tp_name", ""), pos).strip("() ")))
    if not name:
        return None
    rec = {"file": f.rel}
    for key in ("basicsize", "itemsize"):
        expr = values.get(f"tp_{key}")
        if expr is not None:
            try:
                rec[key] = _terms(f.macros.expand(expr, pos))
            except ValueError:
                pass
    members = values.get("tp_members", "").strip()
    if re.fullmatch(r"\w+", members) and members in member_lists:
        rec["members"] = member_lists[members]
    return name.group(1), rec


def read_file(rel: str, text: str, type_order: list, constants: dict) -> dict:
    """tp_name -> record of every type one `.c` file initializes (`type_order`: PyTypeObject's
    members in order, from the table; `constants`: the table's constant values by name)."""
    f = prepare(rel, text)
    return {} if f is None else _records(f, type_order, constants)


def prepare(rel: str, text: str) -> Optional[_File]:
    """What `read_file` reads of a file before it needs the table; None for a file that names no
    type initializer's type."""
    if "PyTypeObject" not in text and "PyType_Spec" not in text:
        return None         # nor without its comments: never read them out
    f = _File(rel, text)
    return f if f.typed else None


def _records(f: _File, type_order: list, constants: dict) -> dict:
    member_lists = _members(f, constants)
    found: dict = {}
    for symbol, (body, pos, cond) in f.initializers(_TYPE).items():
        elements = _elements(body)
        designated = bool(elements) and elements[0].startswith(".")
        if designated and cond:
            continue        # which designators the build keeps depends on the conditional
        values = _designated(elements) if designated else _positional(elements, type_order)
        got = _record(f, pos, values, member_lists)
        if got:
            got[1]["symbol"] = symbol
            found.setdefault(got[0], []).append(got[1])
    slots = {name: dict(_slot_pairs(body)) for name, (body, _, cond) in f.initializers(_SLOTS).items() if not cond}
    for symbol, (body, pos, cond) in f.initializers(_SPEC).items():
        if cond:
            continue
        elements = _elements(body)
        spec = _designated(elements) if elements and elements[0].startswith(".") else \
            dict(zip(("name", "basicsize", "itemsize", "flags", "slots"), elements))
        values = {"tp_name": spec.get("name", ""), "tp_basicsize": spec.get("basicsize"),
                  "tp_itemsize": spec.get("itemsize"), "tp_members": slots.get(spec.get("slots", "").strip(), {}).get(
                      "Py_tp_members", "")}
        got = _record(f, pos, values, member_lists)
        if got:
            found.setdefault(got[0], []).append(got[1])
    return found


def _slot_pairs(body: str):
    for entry in _elements(body):
        if entry.startswith("{"):
            try:
                parts = _elements(_body(entry, 0)[0])
            except ValueError:
                continue
            if len(parts) == 2:
                yield parts[0].strip(), parts[1].strip()


def source_files(source: Path) -> list:
    """The `.c` files `read` reads."""
    return [path for d in SOURCE_DIRS for path in (sorted((source / d).rglob("*.c")) if (source / d).is_dir() else ())]


def _text(data: bytes) -> str:
    """A file's bytes as text, as `open(path, errors="replace")` reads it (universal newlines)."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def prepare_tree(job: tuple) -> dict:
    """str(path) -> (digest of the bytes read, `prepare`d file or None) of each file of `job` =
    (source tree, its `source_files`) that can be read: the records' part that needs no table,
    made in a worker while the units parse (`scanner.SideTask`)."""
    source, files = job
    out = {}
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        out[str(path)] = ("sha256:" + hashlib.sha256(data).hexdigest(), prepare(str(path.relative_to(source)), _text(data)))
    return out


def read(source: Path, table, files: Optional[list] = None, prepared: Optional[dict] = None) -> dict:
    """tp_name -> record of the types a source tree's `.c` files (`files`, else `source_files`)
    initialize, checked against `table` (a `model.Table` of those sources): every struct and field
    a record names is in it. `prepared`: what `prepare_tree` made of those files."""
    from ..layout.names import aliases, find_struct, struct_key

    order = [f.path for f in find_struct(table, "PyTypeObject").fields if "." not in f.path]
    groups = aliases()
    constants = {name: c.value for name, c in table.constants.items()}
    if prepared is None:
        prepared = prepare_tree((source, source_files(source) if files is None else files))
    found: dict = {}
    for path in source_files(source) if files is None else files:
        f = prepared.get(str(path), (None, None))[1]
        for name, recs in ({} if f is None else _records(f, order, constants)).items():
            found.setdefault(name, []).extend(recs)

    def key(struct, path, file):
        """The table's name for `struct` (qualified by `file` where the table qualifies it), or None
        when the table has no such struct, or no such field in it."""
        for candidate in (struct, f"{struct}@{file}"):
            found = struct_key(candidate, table.structs, table.names, groups)
            if found is None:
                continue
            s = table.structs[found]
            if path is None or any(x.path == path for x in s.fields):
                return candidate
            return None
        return None

    out = {}
    for name, recs in sorted(found.items()):
        if len(recs) != 1:
            continue        # one tp_name, several types: which one a type object is would be a guess
        rec, kept = recs[0], {}
        for size in ("basicsize", "itemsize"):
            terms = rec.get(size)
            # 0 is inherited from the base (PyType_Ready), a negative spec size is relative to it
            if not terms or terms[0][0] < 0 or all(t[1] == "int" and t[0] <= 0 for t in terms):
                continue
            named = [[c, kind, None if s is None else key(s, p if kind == "offset" else None, rec["file"]), p]
                     for c, kind, s, p in terms]
            if all(t[2] is not None or t[1] in ("int", "pointer") for t in named):
                kept[size] = named
        members = [[m[0], m[1], m[2], key(m[3], m[4], rec["file"]), m[4]] for m in rec.get("members", ())]
        if any(m[3] for m in members):
            kept["members"] = [m for m in members if m[3]]
        if kept:
            out[name] = dict(kept, symbol=rec["symbol"]) if "symbol" in rec else kept
    return out
