"""A saved build becomes a `Build` in one place (`Build.from_dict`), whichever form saved it: a YAML
table, a compact table, or the runtime's record of the table it chose (`Match.build`); and the name
a build's table gets is known before scanning (`BuildInputs.table_name`), as the scan then gives it.

Truth: the committed tables (made by `make tables`, which verifies them against gcc and DWARF), and
a scan of the fake build."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from offsets.layout import compact, table_yaml
from offsets.layout.build_identity import BuildIdentity
from offsets.layout.model import Build
from offsets.runtime import Match
from offsets.scan import build_inputs as build, scanner

GENERATED = Path(__file__).resolve().parent.parent / "generated"
FAKE = Path(__file__).parent / "fixtures" / "fakepy"
#: a distributor's build with defines, input digests and the build-ids of its binaries
DEBIAN = GENERATED / "cpython-3.13.18-debian-x86_64-linux-gnu.yaml"


def with_vendor(text: str, vendor) -> str:
    """A compact table's text whose build has `vendor` (no vendor at all for `...`)."""
    head, rest = text.split("\n", 1)
    doc = json.loads(head)
    if vendor is ...:
        del doc["build"]["vendor"]
    else:
        doc["build"]["vendor"] = vendor
    return json.dumps(doc) + "\n" + rest


def test_every_form_gives_the_same_build():
    t = table_yaml.load(DEBIAN)
    b = t.build
    assert b.binaries and b.defines is not None and b.vendor.startswith("debian ") and b.inputs["headers"]
    saved = compact.build_dict(b)
    assert Build.from_dict(saved) == b
    assert compact.loads(compact.dumps(t, "test")).build == b
    assert Match(t.build.table_name, "exact", "", "test", BuildIdentity.of_table(saved)).build == b


@pytest.mark.parametrize("vendor", [..., None], ids=["absent", "null"])
def test_a_build_saved_without_a_vendor_is_upstream_in_every_form(vendor):
    t = table_yaml.load(GENERATED / "cpython-3.11.7-x86_64-linux-gnu.yaml")
    saved = compact.build_dict(t.build)
    if vendor is ...:
        del saved["vendor"]
    else:
        saved["vendor"] = vendor
    assert Build.from_dict(saved).vendor == "upstream"
    assert Match(t.build.table_name, "exact", "", "test", BuildIdentity.of_table(saved)).build.vendor == "upstream"
    assert compact.loads(with_vendor(compact.dumps(t, "test"), vendor)).build == t.build
    if vendor is ...:     # YAML has no null vendor: the schema refuses one
        text = table_yaml.dumps(t)
        assert "  vendor: upstream\n" in text
        assert table_yaml.loads(text.replace("  vendor: upstream\n", "", 1)).build == t.build


@pytest.mark.parametrize("config, name", [("release", "cpython-3.99.1-x86_64-linux-gnu"),
                                          ("debug", "cpython-3.99.1-debug-x86_64-linux-gnu")])
def test_the_table_name_known_before_scanning_is_the_scans(config, name):
    b = build.from_prefix(FAKE, target="x86_64-linux-gnu", config=config)       # patchlevel.h says 3.99.1
    assert b.table_name == scanner.scan(b).build.table_name == name
