"""The fenced code blocks of the docs, as the tests run them: what a reader copies is what is tested."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


def blocks(doc: str, lang: str = None) -> list[tuple[str, str]]:
    """(language, text) of each fenced block of `doc` (a path relative to the repository), in order."""
    text = (ROOT / doc).read_text()
    return [(m.group(1), m.group(2)) for m in _FENCE.finditer(text) if lang is None or m.group(1) == lang]


def block(doc: str, lang: str, containing: str) -> str:
    """The one block of `doc` in `lang` that contains `containing`."""
    found = [text for _, text in blocks(doc, lang) if containing in text]
    assert len(found) == 1, f"{doc}: {len(found)} {lang} blocks contain {containing!r}"
    return found[0]
