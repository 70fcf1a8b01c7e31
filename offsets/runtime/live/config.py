"""Part of the live check (`runner.py`): `PyConfig`, as the interpreter's own code writes one field by
name. Where it exports `_PyConfig_AsDict` and `_PyConfig_FromDict` (3.12+; `_testinternalcapi`'s
`get_config`/`set_config` round trip), a config of this check's own (a buffer far larger than any
`PyConfig`, made by `PyConfig_InitIsolatedConfig`) is given a value of its own in every field
(`1000 + i`, `"offsets-NAME"`, `["offsets-NAME-0", "offsets-NAME-1"]`; a field whose value the
interpreter refuses keeps its default); each int, wide string and wide string list is then read
through the table and must be that field's value, which no other field holds. The interpreter
writes; the check only reads its own buffer, so a wrong table cannot make anything read a wrong
pointer. `PyConfig_Clear` frees what was set. Nothing of the running interpreter is read or changed.
"""
from __future__ import annotations

from .toolkit import wide_string

#: bytes of the buffer: PyConfig is under 1 KiB in every CPython
BUFFER = 16384
#: PyConfig field types read, as the tables spell them
INTS = {"int", "unsigned long", "unsigned int", "long"}


def _api(name: str, restype, *argtypes):
    import ctypes

    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


def _values(defaults: dict) -> dict:
    out = {}
    for i, (k, v) in enumerate(sorted(defaults.items())):
        if isinstance(v, int):
            out[k] = 1000 + i
        elif isinstance(v, str) or v is None:
            out[k] = f"offsets-{k}"
        elif isinstance(v, list):
            out[k] = [f"offsets-{k}-0", f"offsets-{k}-1"]
    return out


def from_dict(c) -> None:
    import ctypes

    try:
        as_dict = _api("_PyConfig_AsDict", ctypes.py_object, ctypes.c_void_p)
        set_from = _api("_PyConfig_FromDict", ctypes.c_int, ctypes.c_void_p, ctypes.py_object)
    except AttributeError:
        raise LookupError("no _PyConfig_AsDict and _PyConfig_FromDict (before 3.12)") from None
    fields = c.view.fields("PyConfig")
    if fields is None:
        raise LookupError("no PyConfig in the table")
    c.view.take_used()
    buf = ctypes.create_string_buffer(BUFFER)
    base = ctypes.addressof(buf)
    _api("PyConfig_InitIsolatedConfig", None, ctypes.c_void_p)(base)
    try:
        defaults = as_dict(base)
        values = _values(defaults)
        for _ in range(len(values)):
            try:
                set_from(base, values)
                break
            except (ValueError, TypeError) as e:      # "invalid config value: NAME": it keeps its default
                name = str(e).rsplit(": ", 1)[-1]
                if name not in values:
                    raise LookupError(f"_PyConfig_FromDict refuses the check's values: {e}") from None
                del values[name]
                values = {**values, name: defaults[name]}
        else:
            raise LookupError("_PyConfig_FromDict refuses the check's values")
        as_set = as_dict(base)
        for name, want in sorted(values.items()):
            row = fields.get(name)
            if row is None or want == defaults[name] or as_set.get(name) != want:
                continue
            kind = row.type.replace("const ", "").strip()
            c.run(f"PyConfig.{name}", _one, c, base, name, kind, want)
    finally:
        _api("PyConfig_Clear", None, ctypes.c_void_p)(base)


def _one(c, base: int, name: str, kind: str, want) -> None:
    if kind in INTS:
        got = c.field(base, "PyConfig", name, signed=True)
    elif kind == "wchar_t *":
        got = wide_string(c, c.field(base, "PyConfig", name))
    elif kind == "PyWideStringList":
        at = base + c.need("PyConfig", name)
        n = c.field(at, "PyWideStringList", "length", signed=True)
        items = c.field(at, "PyWideStringList", "items")
        got = [wide_string(c, c.ptr(items, i * c.psize)) for i in range(min(n, 8))] if 0 <= n else n
    else:
        raise LookupError(f"PyConfig.{name} is a {kind}")
    c.expect(f"PyConfig.{name}: what _PyConfig_FromDict set, in a config of the check's own", want, got)


def check(c) -> None:
    c.attempt("PyConfig through _PyConfig_FromDict", from_dict, c)
