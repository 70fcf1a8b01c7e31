"""Build identity: what a table is for, and what a running interpreter is.

A build is its layout inputs, not its version number (docs/identity.md):

- version and hexversion; the layout flags (`Py_DEBUG`, `Py_GIL_DISABLED`, ...); the target triple
  and pointer size;
- the vendor: `upstream` (pristine python.org sources), or a distributor and its package version
  (`debian 3.13.5-2+deb13u5`): Debian's 3.13 patches `PyGC_Head`'s alignment;
- the defines the core is compiled with (sysconfig's `PY_CORE_CFLAGS`) that some header tests:
  Debian's 3.15 adds `-D_Py_TIER2=3 -D_Py_JIT`, which change `PyInterpreterState`;
- the digests of the layout inputs: `pyconfig.h`, every header, the sources (and, for a table made
  from a build's own headers, the libpython whose DWARF gave the `.c`-only structs).

Both sides use this module: the scanner to stamp a table, the runtime to compute the running
interpreter's identity and compare. Standard library only, and old syntax only: interpreters down
to 3.6 run this file as a script to describe themselves (`python identity.py` prints JSON).
"""
import os
import sys

if __package__:
    from .build_identity import (IMPLIED, LAYOUT_FLAGS, PYCONFIG, UPSTREAM, cache_dir, config_words, distributor,
                                 flag_set, running_shown, source_dependent, table_name, version_string)
else:       # run as a script by another interpreter (-I -S): the sibling file, after the standard library
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    from build_identity import (IMPLIED, LAYOUT_FLAGS, PYCONFIG, UPSTREAM, cache_dir, config_words, distributor,
                                flag_set, running_shown, source_dependent, table_name, version_string)

#: Defines every scan applies itself (units.py), so they say nothing about one build.
NOT_IDENTITY = frozenset(("Py_BUILD_CORE", "Py_BUILD_CORE_BUILTIN", "Py_BUILD_CORE_MODULE"))
#: Bumped whenever what installed_inputs() computes changes, so older memos are not used.
DIGESTS_REVISION = 2
#: `upstream`, or a distributor's word and its package version (identity.VENDOR, compiled on first use).
_VENDOR = r"upstream|[a-z][a-z0-9]* [0-9][A-Za-z0-9.+~:-]*"

# Modules only some paths need are imported there: every process that loads a JIT runs this
# module's running(), and `re` alone takes milliseconds to import.


def _sha256_type():
    """hashlib.sha256, without importing hashlib (and OpenSSL) when CPython's own builtin module is there."""
    for name in ("_sha2", "_sha256") if sys.version_info >= (3, 12) else ("_sha256",):
        try:
            return __import__(name).sha256
        except (ImportError, AttributeError):
            pass
    import hashlib

    return hashlib.sha256


#: sha256(data) -> a hash object with hexdigest(), as hashlib.sha256
sha256 = _sha256_type()


def __getattr__(name):
    if name == "VENDOR":
        import re

        globals()["VENDOR"] = re.compile(_VENDOR)
        return globals()["VENDOR"]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def _loads(data):
    """json.loads without importing json (json_read.py), except when this file runs as a script."""
    try:
        from .json_read import loads
    except ImportError:
        from json import loads
    return loads(data)

# ---------------------------------------------------------------- digests and defines
def header_files(include_dir):
    """Every header of an include directory (public, cpython/, internal/), following symlinked
    directories (Debian's python3.Xd/internal -> ../python3.X/internal), sorted."""
    return [p for p, _ in header_stats(include_dir)]


def header_stats(include_dir):
    """(path, os.stat_result) of every header of an include directory, sorted by path: one stat per
    file (every process that loads a JIT looks at them)."""
    found, todo = [], [str(include_dir)]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir():                 # follows symlinks, as os.walk(followlinks=True)
                    todo.append(e.path)
                elif e.name.endswith(".h") and e.is_file():
                    found.append((e.path, e.stat()))
            except OSError:
                pass
    return sorted(found)


def headers_digest(include_dir, files=None):
    """The digest of a build's headers (`files`: header_files(include_dir), when already listed):
    every header but the top-level pyconfig.h, which has a digest of its own (so a source tree's
    Include/ and the same headers installed compare equal, and Debian's multiarch forwarder does
    not count)."""
    top = os.path.join(str(include_dir), "pyconfig.h")
    files = header_files(str(include_dir)) if files is None else files
    return digest_files([p for p in files if p != top], include_dir)


def digest_files(paths, base):
    """One sha256 over the relative names and contents of `paths`, in sorted order."""
    h = sha256()
    rel = sorted((os.path.relpath(str(p), str(base)), str(p)) for p in paths)
    for name, path in rel:
        h.update(name.encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read() + b"\0")
    return "sha256:" + h.hexdigest()


_CONDITION = r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef)\b(.*)$"


def tested_names(texts):
    """The identifiers that preprocessor conditionals of `texts` test."""
    import re

    names = set()
    for text in texts:
        for cond in re.findall(_CONDITION, text, re.M):
            names.update(re.findall(r"[A-Za-z_]\w*", cond))
    return names


def core_defines(cflags):
    """The -D macros of a compile command line, name -> value ('' for a bare -DNAME), -U applied."""
    import shlex

    try:
        words = shlex.split(cflags or "")
    except ValueError:
        words = (cflags or "").split()
    out = {}
    it = iter(words)
    for w in it:
        if w in ("-D", "-U"):
            w += next(it, "")
        if w.startswith("-D") and len(w) > 2:
            name, _, value = w[2:].partition("=")
            out[name] = value
        elif w.startswith("-U"):
            out.pop(w[2:], None)
    return {k: v for k, v in out.items() if k not in NOT_IDENTITY}


def layout_defines(cflags, header_texts):
    """The core's defines that some header tests: the ones that can change a layout."""
    tested = tested_names(header_texts)
    return {k: v for k, v in sorted(core_defines(cflags).items()) if k in tested}


_PYCONFIG_LINE = r"^[ \t]*(?:#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*(.*?)|/\*[ \t]*#[ \t]*undef[ \t]+([A-Za-z_]\w*)[ \t]*\*/)[ \t]*$"


def pyconfig_values(text):
    """name -> value of each macro a pyconfig.h defines (its body, comments out, blanks squeezed;
    '' for an empty one), or None for one it lists as `/* #undef NAME */`, as configure writes it.
    A later definition wins. Both sides read a pyconfig.h with this (scan/depends.py, the runtime)."""
    import re

    out = {}
    for define, value, undef in re.findall(_PYCONFIG_LINE, text, re.M):
        if define:
            if "/" in value:
                value = re.sub(r"/\*.*?\*/|//.*", " ", value)
            out[define] = " ".join(value.split())
        elif undef not in out:
            out[undef] = None
    return out


def leaf_value(name, pyconfig, defines):
    """What a build says of a name its headers' text leaves open (docs/identity.md): pyconfig.h's
    value, else the core's define (`-DNAME=VALUE`), else None (undefined)."""
    value = pyconfig.get(name)
    return value if value is not None else defines.get(name)


def file_digest(path):
    """`sha256:HEX` of a file's bytes (a dependency set's files, docs/identity.md), None if unreadable."""
    try:
        with open(path, "rb") as f:
            return "sha256:" + sha256(f.read()).hexdigest()
    except OSError:
        return None


class InstalledFiles(object):
    """A build's installed headers, read on demand, as a table's dependency sets are compared with
    them (docs/identity.md, "Per struct"): each leaf's value (`leaf_value` over its pyconfig.h and
    its core's defines) and each installed file's digest. `at(path)` gives where a path of the build
    is read (another process's files lie under /proc/PID/root); nothing is read until asked."""

    def __init__(self, include_dir, cflags, multiarch=None, at=None):
        self.include_dir, self.cflags, self.multiarch = include_dir, cflags or "", multiarch
        self._at = at or (lambda p: p)
        self._pyconfig = None
        self._defines = None
        self._digests = {}

    @property
    def available(self):
        """Whether the headers are there: Python.h and a readable pyconfig.h."""
        if not self.include_dir or not os.path.isfile(self._at(os.path.join(self.include_dir, "Python.h"))):
            return False
        path = real_pyconfig(self._at(self.include_dir), self.multiarch)     # read only when a leaf is asked
        return path is not None and os.path.isfile(path)

    def pyconfig(self):
        """pyconfig.h's values (`pyconfig_values`), None when it cannot be read."""
        if self._pyconfig is None:
            path = real_pyconfig(self._at(self.include_dir), self.multiarch) if self.include_dir else None
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    self._pyconfig = pyconfig_values(f.read(1 << 22))
            except (OSError, TypeError):
                self._pyconfig = False
        return self._pyconfig or None

    def leaf(self, name):
        if self._defines is None:
            self._defines = core_defines(self.cflags)
        return leaf_value(name, self.pyconfig() or {}, self._defines)

    def digest(self, name, chars=64):
        """The first `chars` hex digits of the sha256 of the installed file a table names
        `Include/...`, None when it is not there."""
        got = self._digests.get(name)
        if got is None:
            rel = name[len("Include/"):] if name.startswith("Include/") else None
            got = file_digest(self._at(os.path.join(self.include_dir, rel))) if rel and self.include_dir else None
            self._digests[name] = got = got[len("sha256:"):] if got else ""
        return got[:chars] or None


def real_pyconfig(include_dir, multiarch=None):
    """The pyconfig.h that applies, following Debian's multiarch forwarder
    (`#include <x86_64-linux-gnu/python3.13/pyconfig.h>`) for `multiarch` (default: this
    interpreter's)."""
    path = os.path.join(include_dir, "pyconfig.h")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    if "SIZEOF_VOID_P" in text:
        return path
    if multiarch is None:
        import sysconfig

        multiarch = sysconfig.get_config_var("MULTIARCH")
    arch = multiarch or ""
    forwarded = os.path.join(os.path.dirname(include_dir), arch, os.path.basename(include_dir), "pyconfig.h")
    return forwarded if arch and os.path.isfile(forwarded) else path


def installed_inputs(include_dir, cflags, multiarch=None):
    """The layout inputs of installed headers: {pyconfig_h, headers, defines}, or None when the
    directory has no headers (`multiarch`: the build's, for Debian's forwarding pyconfig.h; default
    this interpreter's). Hashing ~300 headers takes tens of milliseconds, so the result is
    kept in the cache, keyed by every file's name, size, mtime and ctime (any change is a miss)."""
    stats = header_stats(include_dir)
    files = [p for p, _ in stats]
    pyconfig = real_pyconfig(include_dir, multiarch)
    if pyconfig is None or not os.path.isfile(os.path.join(include_dir, "Python.h")):
        return None
    stamp = sha256(repr((DIGESTS_REVISION, cflags)).encode())
    for p, st in stats + [(pyconfig, os.stat(pyconfig))]:
        stamp.update(("%s\0%d\0%d\0%d\0" % (p, st.st_size, st.st_mtime_ns, st.st_ctime_ns)).encode())
    cache = cache_dir()
    memo = os.path.join(cache, "digests", stamp.hexdigest()[:32] + ".json") if cache else None
    kept = _read_memo(memo)
    try:
        found = _loads(kept) if kept is not None else None
        if isinstance(found, dict) and set(found) == {"pyconfig_h", "headers", "defines"}:
            return found
    except (ValueError, TypeError):
        pass
    texts = []
    for p in files:
        with open(p, encoding="utf-8", errors="replace") as f:
            texts.append(f.read())
    found = {"pyconfig_h": digest_files([pyconfig], os.path.dirname(pyconfig)),
             "headers": headers_digest(include_dir, files), "defines": layout_defines(cflags, texts)}
    if memo is not None:       # no cache directory: hashed again next time
        import json

        _write_memo(memo, json.dumps(found).encode())
    return found


#: The largest memo read back (a proof entry is about 120 kB).
MAX_MEMO_BYTES = 1 << 24


def _read_memo(path, limit=MAX_MEMO_BYTES):
    """The data `_write_memo` put in `path`, or None: no such file (or no cache: `path` None), not a
    regular file, larger than `limit`, or not what the digest it carries says (one bit flipped, a
    file cut short, one another program wrote): every damaged memo is a miss, made again."""
    import stat

    try:
        with _open_regular(path) as f:      # read(n) makes an n-byte buffer first: n no larger than the file
            st = os.fstat(f.fileno())
            data = f.read((min(st.st_size, limit) if stat.S_ISREG(st.st_mode) else limit) + 1)
    except (OSError, TypeError):
        return None
    digest, _, body = data.partition(b"\n")
    if len(data) > limit or sha256(body).hexdigest().encode() != digest:
        return None
    return body


def _open_regular(path):
    """regular_file.open_regular (a FIFO is refused, never waited for); plain open() where this file
    runs as a script (no package to import from)."""
    try:
        from ..regular_file import open_regular
    except (ImportError, ValueError):        # 3.6 says ValueError of a relative import in a script
        return open(path, "rb")
    return open_regular(path)


def _write_memo(path, data):
    """Put `data` in `path` whole or not at all (a temporary file renamed over it, as
    atomic_write.replace does), after the sha256 of `data` and a newline (what `_read_memo` checks),
    with the standard library only: this file also runs as a script in interpreters down to 3.6,
    where the package cannot be imported. A read-only cache only costs the hashing next time."""
    import tempfile

    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix="." + os.path.basename(path) + ".",
                                   suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(sha256(data).hexdigest().encode() + b"\n" + data)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


# ---------------------------------------------------------------- the vendor
def vendor_evidence(prefix, minor, root=None, at=None):
    """(vendor, evidence) for the build installed at `prefix`, or (None, why not) when no
    distributor claims it. Debian (and Ubuntu) record the package version in the changelog beside
    the prefix (`share/doc/libpython3.X-minimal/changelog.Debian.gz`) and in dpkg's database; a
    build that neither knows is taken as upstream, and only its digests can make it exact. With
    `root` (another process's `/proc/PID/root`), `prefix` is as that process sees it and every
    record is read under `root`, at the path `at(path as the process sees it)` gives (default:
    `root` + it; offsets.process_root.at resolves its links within that root)."""
    at = at or (lambda p: (root or "") + p)
    base = (root or "") + prefix
    for package in ("libpython%s-minimal" % minor, "python%s-minimal" % minor, "libpython%s" % minor):
        path = at(os.path.join(prefix, "share", "doc", package, "changelog.Debian.gz"))
        if not os.path.isfile(path):
            continue
        import gzip
        import re

        try:
            with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
                first = f.readline()
        except OSError:
            continue
        m = re.match(r"^\S+ \(([^)]+)\)", first)
        if m:
            return "%s %s" % (_distributor_of(m.group(1)), m.group(1)), path
    if (os.path.normpath(prefix) if root else os.path.realpath(prefix)) == "/usr":
        status = at("/var/lib/dpkg/status")
        version = _dpkg_version("libpython%s-minimal" % minor, status)
        if version:
            return "%s %s" % (_distributor_of(version), version), status
    return None, "no distributor's package record beside %s" % base


def _distributor_of(package_version):
    return "ubuntu" if "ubuntu" in package_version else "debian"


def _dpkg_version(package, status="/var/lib/dpkg/status"):
    import re

    try:
        with open(status, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    for para in text.split("\n\n"):
        if re.search(r"^Package: %s$" % re.escape(package), para, re.M) and "ok installed" in para:
            m = re.search(r"^Version: (\S+)$", para, re.M)
            if m:
                return m.group(1)
    return None


# ---------------------------------------------------------------- the running interpreter
def mapped_binary():
    """The file this process maps its interpreter's objects from (`id(int)`, PyLong_Type's address:
    libpython, or the executable of a static build), as /proc/self/maps names it; None without /proc.
    The binary it runs, whatever its sysconfig says (a copy of a prefix still names the original)."""
    here = id(int)
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                lo, _, hi = parts[0].partition("-")
                if len(parts) == 6 and int(lo, 16) <= here < int(hi, 16) and parts[5].startswith("/"):
                    return parts[5].rstrip("\n")
    except (OSError, ValueError):
        pass
    return None


#: The machine a Windows build was compiled for, as `sys.version` names it (`[MSC v.1942 64 bit
#: (AMD64)]`) -> the triple of python.org's builds for it.
WINDOWS_TRIPLES = {"AMD64": "x86_64-pc-windows-msvc", "ARM64": "aarch64-pc-windows-msvc"}


def windows_triple():
    """On Windows, the triple of this interpreter's build (python.org's MSVC builds: Windows tables
    only, never a Linux one, answer for it), or '' for a machine without one; None elsewhere. The
    machine is the one `sys.version` says the build is for, as sysconfig.get_platform() reads it:
    not `platform.machine()`, which is the system's (an x64 build runs on arm64 Windows too) and
    which 3.13 asks WMI for (Wine has no WMI: the process aborts)."""
    if sys.platform != "win32":
        return None
    return next((t for m, t in WINDOWS_TRIPLES.items() if f"({m})" in sys.version.upper()), "")


#: macOS's name of a CPU (`os.uname().machine`) -> the triple of macOS tables for it
MACOS_TRIPLES = {"arm64": "aarch64-apple-darwin", "x86_64": "x86_64-apple-darwin"}


def macos_triple():
    """On macOS, the triple of the CPU this process runs as (python.org's universal2 build runs as
    arm64 or, under Rosetta, x86_64, which is what the kernel then says it is), or '' for one without
    tables; None elsewhere. A macOS build's MULTIARCH is `darwin`, which names no CPU."""
    if sys.platform != "darwin":
        return None
    return MACOS_TRIPLES.get(os.uname().machine, "")


def loaded_c_library():
    """'glibc' where this process's C library is GNU's (it answers `confstr(_CS_GNU_LIBC_VERSION)`,
    as no other C library does: musl fails it with EINVAL), else None; on a system without
    `os.confstr` (Windows), None."""
    try:
        got = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return None
    return "glibc" if got and got.startswith("glibc") else None


def with_c_library(triple: str, glibc: bool) -> str:
    """A Linux `triple` (`x86_64-linux-gnu`, `arm-linux-gnueabihf`) for a build whose C library is
    glibc (`glibc`: the triple as it is) or is not (`-gnu` becomes `-musl`: musl is the other C
    library CPython's Linux builds use, and its layouts differ from glibc's: pthread_mutex_t is 40
    bytes against 48 on aarch64, so no glibc table may answer for it). Any other triple is returned
    as it is. A build may not say which C library it was made for (CPython built by zig's or
    another cross compiler names none in its MULTIARCH or HOST_GNU_TYPE): the C library loaded (this
    process's: `loaded_c_library`; another's binary: remote/elf.py) says it."""
    cpu, _, rest = str(triple).partition("-linux-")
    if not rest.startswith("gnu") or glibc:
        return triple
    return f"{cpu}-linux-musl{rest[3:]}"


def running_target():
    """What of this interpreter's identity a table's build is compared with before anything else
    (earning.py): its version, hexversion, layout flags, triple and pointer size. On Linux the
    triple's C library is the one this process loaded (`with_c_library`)."""
    import sysconfig

    v = sysconfig.get_config_var
    config = {"Py_DEBUG": bool(v("Py_DEBUG")), "Py_GIL_DISABLED": bool(v("Py_GIL_DISABLED")),
              "Py_TRACE_REFS": bool(v("Py_TRACE_REFS")) or hasattr(sys, "getobjects"),
              "Py_REF_DEBUG": bool(v("Py_REF_DEBUG")) or hasattr(sys, "gettotalrefcount"),
              "Py_STATS": bool(v("Py_STATS"))}
    host = (v("HOST_GNU_TYPE") or "").split("-")
    if len(host) == 4 and host[1] in ("pc", "unknown"):
        host.pop(1)
    return {"version": version_string(sys.version_info), "hexversion": sys.hexversion, "config": config,
            "triple": windows_triple() or macos_triple() or with_c_library(v("MULTIARCH") or "-".join(host),
                                                                           loaded_c_library() == "glibc"),
            "pointer_size": 8 if sys.maxsize > 2 ** 32 else 4}


def running(with_inputs=True):
    """This interpreter's identity in the terms of the tables, plus where its build lives."""
    import sysconfig

    v = sysconfig.get_config_var
    include = sysconfig.get_paths()["include"]
    cflags = " ".join(x for x in (v("PY_CORE_CFLAGS"), v("CFLAGS_NODIST")) if x)
    minor = "%d.%d" % sys.version_info[:2]
    prefix = sys.base_prefix
    vendor, evidence = vendor_evidence(prefix, minor)
    me = {**running_target(),
          "vendor": vendor, "vendor_evidence": evidence, "include": include, "cflags": cflags,
          "abiflags": getattr(sys, "abiflags", ""), "multiarch": v("MULTIARCH") or "",
          "libdir": v("LIBDIR") or "", "soname": v("INSTSONAME") or "", "ldlibrary": v("LDLIBRARY") or "",
          "executable": sys.executable, "inputs": None}
    if with_inputs:
        me["inputs"] = installed_inputs(include, cflags)
    return me


if __name__ == "__main__":
    import json

    described = running(with_inputs="--no-inputs" not in sys.argv)
    described["mapped"] = mapped_binary()       # for describe() (the runtime reads its binary itself)
    print(json.dumps(described))
