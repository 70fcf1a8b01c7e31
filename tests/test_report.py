"""The HTML byte-map report: structure and colours on hand-built tables, then the real page
rendered by headless Chromium, whose screenshot must show the field boxes in their colours."""
from __future__ import annotations

import os
import re
import shutil
import struct as binary
import subprocess
import zlib
from pathlib import Path

import pytest

from offsets import report
from offsets.cli import main
from offsets.errors import UnknownNameError
from offsets.model import Build, Field, Struct, Table, Target

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

def chromium() -> str:
    exe = shutil.which("chromium")
    if exe:
        return exe
    if os.geteuid() == 0 and os.environ.get("CI"):
        install = ["apt-get", "install", "-y", "-q", "chromium"]
        if subprocess.run(install, capture_output=True).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], check=True, capture_output=True)
            subprocess.run(install, check=True, capture_output=True)
        return shutil.which("chromium")
    pytest.skip("Debian's chromium is not installed; this test installs it (apt-get install -y chromium) "
                "only as root with CI set")


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
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, [bytes(r[i:i + 3]) for r in rows[::3] for i in range(0, len(r), bpp * 3)]


@pytest.mark.slow
def test_report_renders_in_headless_chromium(tmp_path):
    versions = ("3.10.13", "3.11.7", "3.12.1", "3.13.0")
    paths = [GENERATED / f"cpython-{v}-x86_64-linux-gnu.yaml" for v in versions]
    if not all(p.exists() for p in paths):
        pytest.skip("the committed 3.10-3.13 tables are needed")
    exe = chromium()
    page, shot = tmp_path / "layouts.html", tmp_path / "shot.png"
    assert main(["report", *map(str, paths), "-s", "PyObject", "-s", "PyFrameObject", "-s", "_PyInterpreterFrame",
                 "-o", str(page)]) == 0
    subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1400,900",
                    page.as_uri()], check=True, capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 20_000
    width, height, sampled = png_pixels(shot)
    assert (width, height) == (1400, 900)
    colours = set(sampled)
    assert len(colours) > 50, f"only {len(colours)} distinct colours: the page did not render"
    # the boxes are drawn: unchanged, added, changed and renamed fields all visible in the first screen
    for key in ("same", "added", "changed", "renamed"):
        assert bytes.fromhex(report.COLOURS[key][1:]) in colours, key
