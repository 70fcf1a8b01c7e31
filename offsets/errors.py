"""The exceptions of `offsets`: one small hierarchy, turned into one line by the CLI.

Every message says what went wrong, where, and what to do about it.
"""


class OffsetsError(Exception):
    """Base of every error this package raises on purpose."""

    exit_code = 2


class BuildError(OffsetsError):
    """The inputs do not describe a usable CPython build (missing prefix, unreadable pyconfig.h...)."""


class ScanError(OffsetsError):
    """libclang reported an error while parsing a translation unit: the scan is aborted."""


class LayoutError(OffsetsError):
    """libclang could not give a size, alignment or offset (an incomplete or dependent type)."""


class ModelError(OffsetsError):
    """A layout value breaks an invariant of the model (a field outside its struct...)."""


class TableError(OffsetsError):
    """A layout table is malformed, of an unknown schema, or does not match what was asked for."""


class CorruptTableError(TableError):
    """A compact table or its layout pool is not what its format and checksums say."""


class OutputError(OffsetsError):
    """An output cannot be written where it was asked to go (not a regular file, no space...)."""


class NotRegularFile(OffsetsError, OSError):
    """A file to read is a FIFO, a device or a folder (regular_file.py): refused before it is read."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path} is {kind}, not a regular file: give a file")
        self.filename, self.strerror = path, f"{kind}, not a regular file"

    def __str__(self) -> str:      # OSError's would show an errno
        return self.args[0]


class FetchError(OffsetsError):
    """A package or input could not be fetched into the cache."""


class VerifyError(OffsetsError):
    """An independent check (compiler, DWARF, live interpreter) disagrees with a table."""

    exit_code = 1


class NoMatchingTable(OffsetsError):
    """No shipped table matches the running interpreter."""


class ProcessError(OffsetsError):
    """Another process cannot be read (offsets.remote): the base of the errors below."""


class NoSuchProcess(ProcessError):
    """No process has that id (it never existed, or has exited)."""


class ProcessExited(NoSuchProcess):
    """The process exited while it was being read."""


class NotPermitted(ProcessError):
    """This user may not read that process's memory (another user, the ptrace scope, a container)."""


class NotPython(ProcessError):
    """The process (or file) holds no CPython interpreter."""


class NotInTable(OffsetsError, LookupError):
    """Reading another process needs a struct, field or constant the table does not have."""


class RemoteReadError(ProcessError):
    """An address of the process could not be read: it changed while being read, or the table does
    not describe it."""


class UnknownNameError(OffsetsError, KeyError):
    """A struct or field name the table does not know; carries the closest known names. Given as a
    function (`suggestions=lambda: close_matches(...)`), they are searched for when first asked for,
    by `suggestions` or the message: a program that catches the error and tries another name (a JIT
    probing what this version has) never pays for the search. `args` is `(name,)`; set to another
    `(message,)` (the C API's refusal of a huge name, _offsets.c `too_long`), it is the message."""

    def __init__(self, name: str, suggestions=(), where: str = "") -> None:
        self.name, self.where = name, where
        self._suggestions = suggestions if callable(suggestions) else list(suggestions)
        self._text = None               # the message, made when first shown
        super().__init__(name)

    @property
    def suggestions(self) -> list:
        if callable(self._suggestions):
            self._suggestions = list(self._suggestions())
        return self._suggestions

    def _message(self) -> str:
        hint = f"; did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        shown = repr(self.name) if len(self.name) <= 120 else repr(self.name[:100]) + f"... ({len(self.name)} characters)"
        return f"unknown name {shown}{' in ' + self.where if self.where else ''}{hint}"

    def __str__(self) -> str:  # KeyError would repr() its argument
        if self._text is None:
            given = self.args[0] if len(self.args) == 1 else None
            self._text = given if isinstance(given, str) and given != self.name else self._message()
        return self._text

    def __reduce__(self):
        return _unknown_name, (type(self), self.name, self.suggestions, self.where, str(self))


def _unknown_name(cls, name: str, suggestions: list, where: str, text: str) -> UnknownNameError:
    """An `UnknownNameError` (or subclass) as pickled: the same name, suggestions and message."""
    e = UnknownNameError.__new__(cls)
    UnknownNameError.__init__(e, name, suggestions, where)
    e._text = text
    return e


class AmbiguousNameError(UnknownNameError):
    """A name that means several layouts in the build (a tag and a typedef, two `.c` files): only
    its qualified forms (`block@Modules/_collectionsmodule.c`) are answered; they are listed."""

    def __init__(self, name: str, qualified: list, where: str = "", what: str = "layouts") -> None:
        super().__init__(name, qualified, where)
        self._text = (f"{name!r} means {len(qualified)} different {what}{' in ' + where if where else ''}: "
                      f"ask for one of {', '.join(qualified)} (NAME@FILE names the one FILE defines)")


def interpreter_failure(python: str, stderr: str) -> str:
    """The message for an interpreter that failed to run: its own last line, and for a pyenv shim
    with no version selected, what to do."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else "no message"
    if "pyenv" in stderr and ("not found" in stderr or "command exists in these Python versions" in stderr):
        return (f"{python} is a pyenv shim with no version selected ({lines[0] if lines else last}); select one "
                f"(`pyenv shell 3.X.Y`) or give the interpreter's path (`--python $(pyenv root)/versions/3.X.Y/bin/python3`)")
    return f"{python} failed to describe itself: {last}"


#: Names longer than this get no suggestions (difflib's cost grows with the name's length).
SUGGEST_MAX_LEN = 200


def close_matches(word: str, candidates, cutoff: float) -> list:
    """The (at most 3) candidates closest to `word`, for an `UnknownNameError`; none for a long word."""
    if len(word) > SUGGEST_MAX_LEN:
        return []
    import difflib

    return difflib.get_close_matches(word, list(candidates), n=3, cutoff=cutoff)
