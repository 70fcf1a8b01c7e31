"""Rules the docs keep, checked so they cannot drift (docs/architecture.md, docs/contributing.md):

- docs/architecture.md's file map names every module of `offsets/runtime/`, `offsets/runtime/live/`
  and `offsets/scan/`,
  once each, with its job, and names no module that is gone;
- no doc logs figures or history by stop or issue number: times and ratios come from `make bench`'s
  output, not from prose edited by hand;
- every relative link of README.md and docs/*.md points at a file that exists, and at a heading of
  it when it names one.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAPPED = ("offsets/runtime", "offsets/runtime/live", "offsets/scan")


def file_map(folder: str) -> list[tuple[str, str]]:
    """(module, job) of each line under docs/architecture.md's `### `folder/`` heading."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = re.search(rf"^### `{re.escape(folder)}/`\n(.*?)(?=^#|\Z)", text, re.S | re.M)
    assert section, f"docs/architecture.md has no file map of {folder}/"
    return re.findall(r"^- `([\w.]+)`: (.*)$", section.group(1), re.M)


@pytest.mark.parametrize("folder", MAPPED)
def test_the_file_map_names_every_module_once_and_no_other(folder):
    rows = file_map(folder)
    named = [m for m, _ in rows]
    modules = sorted(p.name for p in (ROOT / folder).glob("*.py"))
    assert sorted(set(named)) == sorted(named), f"named twice in the map of {folder}/"
    assert not set(modules) - set(named), f"modules of {folder}/ missing from docs/architecture.md's file map"
    assert not set(named) - set(modules), f"docs/architecture.md's file map of {folder}/ names modules that are gone"
    assert all(job.strip() for _, job in rows), "each module's line says its job"


#: "stop", "stops", "issue" or "issues" and a number: a figure or a change logged by when it was made.
BY_NUMBER = re.compile(r"\b(stop|issue)s? [0-9]+\b")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_doc_logs_by_stop_or_issue_number(doc):
    found = [f"{doc.relative_to(ROOT)}:{n}: {line.strip()}" for n, line in
             enumerate(doc.read_text().splitlines(), 1) if BY_NUMBER.search(line)]
    assert not found, "say what is true now (times and ratios: which `make bench` line gives them):\n" + "\n".join(found)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc):
    text = re.sub(r"^```.*?^```", "", doc.read_text(), flags=re.S | re.M)
    bad = []
    for link in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = (doc.parent / path) if path else doc
        if not target.exists():
            bad.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md":
            headings = {slug(h) for h in re.findall(r"^#+ (.*)$", target.read_text(), re.M)}
            if anchor not in headings:
                bad.append(f"{link}: no such heading")
    assert not bad, f"{doc.relative_to(ROOT)}: {bad}"
