"""The HTML byte-map report: structure and colours on hand-built tables, then the real page
rendered by headless Chromium, whose screenshot must show the field boxes in their colours."""
from __future__ import annotations

import os
import re
import shutil
import struct as binary
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from conftest import missing_input
from offsets.drift import report
from offsets.cli import main
from offsets.errors import UnknownNameError
from offsets.layout.model import Build, Field, Struct, Table, Target

REPO = Path(__file__).parent.parent
GENERATED = REPO / "generated"


def table(version, *fields, size=24, names=None, name="S"):
    major, minor, micro = map(int, version.split("."))
    b = Build(version, (major << 24) | (minor << 16) | (micro << 8) | 0xF0, {"Py_DEBUG": False},
              Target("x86_64-linux-gnu", 8))
    s = Struct(name, "struct", size, 8, "Include/s.h:1", tuple(Field(*f) for f in fields))
    return Table(b, {"offsets": "0.1.0"}, {name: s}, names or {})


A = table("3.11.7", ("a", 0, 8, "long"), ("b", 8, 4, "int"), ("c", 12, 4, "int"),
          ("u", 16, 8, "union <anonymous>"), ("u.x", 16, 8, "long"), ("u.y", 16, 4, "int"))
B = table("3.12.1", ("a", 0, 8, "long"), ("b", 16, 4, "int"), ("d", 12, 4, "int"), ("e", 8, 2, "short"),
          ("f", 10, 1, "unsigned char", 0, 3), ("g", 10, 1, "unsigned char", 3, 5),
          ("tail", 24, 0, "long[]", None, None, None, True), size=24, name="_PyS", names={"S": "_PyS"})


def boxes_by_title(html: str) -> dict[str, list[tuple[float, float, float, float, str]]]:
    """'path: ...' tooltip -> the rects (x, y, w, h, fill) drawn for it, per column in order."""
    out: dict[str, list] = {}
    for title, body in re.findall(r"<g><title>([^<]*)</title>(.*?)</g>", html, re.S):
        rects = [(float(x), float(y), float(w), float(h), fill) for x, y, w, h, fill in re.findall(
            r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="(#\w+)"', body)]
        out.setdefault(title.split(":")[0], []).append(rects)
    return out


def test_page_is_self_contained_and_colours_changes():
    html = report.render([B, A], ["S"])
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert re.findall(r"https?://[^\"]*", html) == ["http://www.w3.org/2000/svg"] * 2
    for banned in ("<script", "<link", "src=", "url(", "@import"):
        assert banned not in html
    boxes = boxes_by_title(html)
    c = report.COLOURS
    # column 1 (3.11.7, no left neighbour): all unchanged; column 2 (3.12.1) against column 1
    assert [r[0][4] for r in boxes["a"]] == [c["same"], c["same"]]
    assert [r[0][4] for r in boxes["b"]] == [c["same"], c["changed"]]
    assert boxes["d"][0][0][4] == c["renamed"] and boxes["e"][0][0][4] == c["added"]
    assert 'removed: u, u.x, u.y' in html  # c became d: renamed
    assert "S: 24 bytes" in html and "_PyS: 24 bytes" in html
    # geometry: widths scale with bytes, rows are 8-byte words, the union's members share a row in lanes
    (ax, ay, aw, ah, _), = boxes["a"][0]
    (bx, by, bw, bh, _), = boxes["b"][1]
    assert (bw / aw, by - ay, bx) == (0.5, 2 * ah, ax)
    (xx, xy, xw, xh, _), = boxes["u.x"][0]
    (yx, yy, yw, yh, _), = boxes["u.y"][0]
    assert (xh, yh, yy - xy, yw / xw) == (ah / 2, ah / 2, ah / 2, 0.5)
    # bitfields: 3 and 5 bits of byte 10, side by side
    (fx, _, fw, _, _), = boxes["f"][0]
    (gx, _, gw, _, _), = boxes["g"][0]
    assert (fw * 64, gw * 64, gx - fx) == pytest.approx((3 * aw, 5 * aw, fw), abs=0.1 * 64)  # 0.1 px rounding
    assert "tail: flexible array at offset 24" in html


def test_unknown_struct_is_an_error():
    with pytest.raises(UnknownNameError, match="did you mean S"):
        report.render([A], ["SS"])


# -- the real page in a real browser -------------------------------------------------------------

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0", "--window-size=1400,900"]


def chromium() -> str:
    """Debian's chromium, which `make test` installs (apt-get install --no-install-recommends chromium)."""
    exe = shutil.which("chromium")
    if exe is None:
        missing_input("Debian's chromium is not installed: `make test` installs it")
    return exe


def browse(exe: str, page: Path, tmp_path: Path, *args: str) -> tuple[str, list[str]]:
    """Chromium's stdout for `page` (with `args`) in a fresh profile, and the console lines it logged."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    proc = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]


class Seen(HTMLParser):
    """What the browser's DOM holds per struct heading: each byte map's aria-label, the tooltips
    of its field boxes, and the labels written on them."""

    def __init__(self) -> None:
        super().__init__()
        self.maps: dict[str, list[dict]] = {}
        self._h2, self._struct, self._in = False, None, None

    def handle_starttag(self, tag, attrs):
        if tag == "h2":
            self._h2 = True
        elif tag == "svg" and self._struct:
            self.maps[self._struct].append({"label": dict(attrs).get("aria-label"), "titles": [], "texts": []})
        elif tag in ("title", "text") and self._struct and self.maps[self._struct]:
            self._in = tag

    def handle_endtag(self, tag):
        self._h2 = False if tag == "h2" else self._h2
        self._in = None if tag in ("title", "text") else self._in

    def handle_data(self, data):
        if self._h2:
            self._struct = data
            self.maps[data] = []
        elif self._in:
            self.maps[self._struct][-1]["titles" if self._in == "title" else "texts"].append(data)


def raw_structs(row: dict, names: tuple) -> dict:
    """The structs `names` of an index row's table, read as plain YAML (not through `offsets`): each
    struct's block of lines under `structs:` (a key indented two spaces, up to the next such key),
    loaded alone."""
    lines = (GENERATED / row["file"]).read_text().split("\n")
    start = lines.index("structs:") + 1
    end = next((i for i in range(start, len(lines)) if lines[i][:1] not in (" ", "")), len(lines))
    heads = [i for i in range(start, end) if lines[i][:2] == "  " and lines[i][2:3] != " "] + [end]
    out = {}
    for first, after in zip(heads, heads[1:]):
        if lines[first].strip().rstrip(":") in names:
            out.update(yaml.load("\n".join(lines[first:after]), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    return out


def drawn_fields(fields: dict) -> list[str]:
    """The fields a byte map must draw: every field with no sub-field that occupies bytes, and
    every flexible array."""
    return sorted(p for p, f in fields.items()
                  if (f["size"] and not any(q.startswith(p + ".") for q in fields)) or f.get("flexible"))


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit truecolour PNG, unfiltered."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        length, kind = binary.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            ihdr = binary.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, colour_type, _, _, interlace = ihdr
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, ihdr
    bpp = 3 if colour_type == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:           # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:         # Up
            line = bytearray((x + up) & 255 for x, up in zip(line, prev))
        elif kind in (3, 4):    # Average, Paeth
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
                if kind == 3:
                    line[i] = (line[i] + (left + up) // 2) & 255
                else:
                    p = left + up - corner
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                    line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, [bytes(r[i:i + 3]) for r in rows[::3] for i in range(0, len(r), bpp * 3)]


@pytest.mark.slow
def test_report_renders_in_headless_chromium(tmp_path):
    """The page as Chromium loads it: one byte map per struct and table, a box for every field of
    the table, the field names written on the boxes, nothing on the console, and a screenshot
    (kept in the test's tmp folder) that shows the boxes in their colours."""
    rows = [r for r in yaml.safe_load((GENERATED / "index.yaml").read_text())["tables"]
            if r["version"] in ("3.10.13", "3.11.7", "3.12.1", "3.13.0")
            and (r["config"], r["target"]) == ("release", "x86_64-linux-gnu")]
    if len(rows) != 4:
        missing_input(f"the committed release x86_64 tables of pyenv's 3.10-3.13 (found {len(rows)})")
    exe = chromium()
    page, shot = tmp_path / "layouts.html", tmp_path / "shot.png"
    structs = ("PyObject", "PyFrameObject", "_PyInterpreterFrame")
    assert main(["report", *(str(GENERATED / r["file"]) for r in rows), *(a for s in structs for a in ("-s", s)),
                 "-o", str(page)]) == 0
    dom, console = browse(exe, page, tmp_path, "--dump-dom", f"--screenshot={shot}")     # one start: both
    assert console == []
    seen = Seen()
    seen.feed(dom)
    assert list(seen.maps) == list(structs)
    tables = [raw_structs(r, structs) for r in rows]
    for struct in structs:
        present = [(r["file"], t[struct]["fields"]) for r, t in zip(rows, tables) if struct in t]
        maps = seen.maps[struct]
        assert [m["label"] for m in maps] == [f"{struct} byte map"] * len(present), struct
        for m, (file, fields) in zip(maps, present):
            assert sorted(t.split(":")[0] for t in m["titles"]) == drawn_fields(fields), (struct, file)
            assert m["texts"] and all(t.strip() for t in m["texts"])
    assert {"ob_refcnt", "ob_type"} <= set(seen.maps["PyObject"][0]["texts"])
    assert "f_back" in seen.maps["PyFrameObject"][0]["texts"]
    assert shot.exists() and shot.stat().st_size > 20_000
    width, height, sampled = png_pixels(shot)
    assert (width, height) == (1400, 900)
    colours = set(sampled)
    assert len(colours) > 50, f"only {len(colours)} distinct colours: the page did not render"
    # the boxes are drawn: unchanged, added, changed and renamed fields all visible in the first screen
    for key in ("same", "added", "changed", "renamed"):
        assert bytes.fromhex(report.COLOURS[key][1:]) in colours, key


# -- platforms, and what checked each one's tables ------------------------------------------------

def windows(t: Table) -> Table:
    """`t` as a Windows table of the same version (its struct unchanged)."""
    b = t.build
    return Table(Build(b.version, b.hexversion, dict(b.config), Target("x86_64-pc-windows-msvc", 8)), t.scanner,
                 t.structs, t.names)


def test_columns_are_grouped_by_platform_and_compare_only_within_one():
    """Linux's columns, then Windows's, each platform a row of its own: a Windows column is never
    coloured against a Linux one (A then B on Linux: b moved; B alone on Windows: nothing changed)."""
    html = report.render([windows(B), B, A], ["S"])
    assert re.findall(r'<h3 class="platform">([^<]*)</h3>', html) == ["Linux (glibc)", "Windows"]
    c = report.COLOURS
    assert [r[0][4] for r in boxes_by_title(html)["b"]] == [c["same"], c["changed"], c["same"]]
    assert "What checked the tables" not in html       # not said unless given


def test_the_report_says_what_checked_each_platforms_tables(tmp_path):
    """Per platform, how many of its tables each kind of check covered, counted here from
    generated/index.yaml's records (the source index.json's `checked` is made from); a table whose
    bytes no record is of has no record."""
    rows = yaml.safe_load((GENERATED / "index.yaml").read_text())["tables"]
    shipped = {p.stem for p in (REPO / "offsets" / "data" / "compact").glob("cpython-*.jsonl")}
    linux = [r for r in rows if r["file"][:-5] in shipped and "linux-gnu" in r["target"]]
    musl = [r for r in rows if r["file"][:-5] in shipped and "linux-musl" in r["target"]]
    win = [r for r in rows if r["file"][:-5] in shipped and "windows" in r["target"]]
    mac = [r for r in rows if r["file"][:-5] in shipped and "apple-darwin" in r["target"]]
    assert len(linux) + len(musl) + len(win) + len(mac) == len(shipped) and mac and musl
    with_binary = sum(1 for r in linux if any(k.startswith("binary ") and not v["mismatches"]
                                              for k, v in r["verified"]["checks"].items()))
    out = tmp_path / "r.html"
    assert main(["report", "-s", "PyThreadState", "-o", str(out)]) == 0
    said = dict(re.findall(r"<li><b>([^<]*)</b> \(\d+ tables?\): ([^<]*)</li>", out.read_text()))
    assert f"a binary of the build ({with_binary} of {len(linux)} tables)" in said["Linux (glibc)"]
    debug_offsets = sum(1 for r in linux if tuple(map(int, str(r["version"]).split(".")[:2])) >= (3, 13)
                        and any(k.startswith("binary ") and not v["mismatches"] for k, v in r["verified"]["checks"].items()))
    assert f"the _Py_DebugOffsets of a binary of the build ({debug_offsets} of {len(linux)} tables)" in \
        said["Linux (glibc)"]
    assert f"a second compiler&#x27;s offsetof ({len(win)} of {len(win)} tables)" in said["Windows"]
    assert "compilers: mingw-w64 gcc" in said["Windows"] and "no binary of these builds" in said["Windows"]
    n = len(musl)
    assert f"the build&#x27;s DWARF ({n} of {n} table" in said["Linux (musl)"] and said["Linux (musl)"].endswith(
        "compilers: zig cc")                # make tables compiles its sources for musl: their DWARF checks it
    assert said["macOS"] == (f"a second compiler&#x27;s offsetof ({len(mac)} of {len(mac)} tables); its static assertions "
                             f"of the constants ({len(mac)} of {len(mac)} tables); a rescan with pyconfig.h cut to the "
                             f"dependency sets ({len(mac)} of {len(mac)} tables); compilers: zig cc; no binary of these "
                             "builds was at hand to check against")
    # a copy whose bytes its directory's index.yaml does not record
    name = linux[0]["file"]
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / name).write_text((GENERATED / name).read_text() + "# edited\n")
    shutil.copy(GENERATED / "index.yaml", tmp_path / "t" / "index.yaml")
    assert main(["report", "-s", "PyThreadState", "--tables", str(tmp_path / "t"), "-o", str(out)]) == 0
    assert "1 table has no record of what checked it" in out.read_text()


@pytest.mark.parametrize("triple,expected", [
    ("x86_64-linux-gnu", "Linux (glibc)"), ("arm-linux-gnueabihf", "Linux (glibc)"),
    ("x86_64-pc-linux-musl", "Linux (musl)"),            # Alpine's python3: sysconfig's HOST_GNU_TYPE
    ("aarch64-linux-musl", "Linux (musl)"),              # zig cc -target
    ("aarch64-apple-darwin23.6.0", "macOS"),             # python.org's macOS framework: HOST_GNU_TYPE
    ("x86_64-macos", "macOS"),                           # zig cc -target
    ("x86_64-pc-windows-msvc", "Windows"), ("x86_64-w64-mingw32", "Windows"),
])
def test_a_triple_names_its_platform_as_builds_name_their_host(triple, expected):
    from offsets.layout.targets import platform

    assert platform(triple) == expected
