"""data/matrix.yaml is data: its vendors, builds and their table names come from the file, checked
against data/matrix.schema.json whenever `make tables` reads it, and never guessed from a file name."""
from __future__ import annotations

import copy

import pytest

from conftest import committed_build, committed_table
from offsets.errors import BuildError
from offsets.check import verified
from offsets.tools import matrix

from test_committed_tables import GENERATED


def test_every_committed_table_is_made_by_the_job_its_build_names():
    """The truth is each committed table's own build record (version, config, target, vendor, as
    the scan read them from the build): the job data/matrix.yaml gives its file makes that name."""
    rows = verified.index_rows(GENERATED)
    assert len(rows) >= 41
    for name in rows:
        job = matrix.job_for({"file": name})
        assert job.table == name == f"{committed_build(GENERATED / name).table_name}.yaml", job.label


def test_a_vendor_is_read_from_the_data():
    m = copy.deepcopy(matrix.matrix())
    m["packaged"][0]["vendor"] = "acme"
    with pytest.raises(BuildError, match=r"packaged/0/vendor: no module fetches the packages of 'acme' \(known: debian"):
        matrix.checked_matrix(m)


@pytest.mark.parametrize("change, where", [
    (lambda m: m["packaged"][1].pop("vendor"), r"at packaged/1: 'vendor' is a required property"),
    (lambda m: m["packaged"][1].update(vendor="upstream"), r"at packaged/1/vendor: "),
    (lambda m: m["packaged"][2]["builds"].append(["profiled", "x86_64-linux-gnu"]), r"at packaged/2/builds/\d+/0: "),
    (lambda m: m["packaged"][0].update(deb="3.9.2-1"), r"at packaged/0: Additional properties are not allowed"),
    (lambda m: m["packaged"][3].pop("configure"), r"at packaged/3: .* is not valid under any of the given schemas"),
    (lambda m: m.update(debian=m.pop("packaged")), r"at \(top\): "),
])
def test_the_schema_refuses_a_malformed_matrix(change, where):
    m = copy.deepcopy(matrix.matrix())
    assert "configure" in m["packaged"][3] and "dev" not in m["packaged"][3]   # the 3.13.15 entry
    change(m)
    with pytest.raises(BuildError, match=where):
        matrix.checked_matrix(m)


def test_a_file_no_job_makes_is_one_clear_error():
    with pytest.raises(BuildError, match="no job of data/matrix.yaml makes cpython-3.99.0-acme-x86_64-linux-gnu.yaml"):
        matrix.job_for({"file": "cpython-3.99.0-acme-x86_64-linux-gnu.yaml"})


def test_a_scan_that_is_not_the_build_the_data_names_is_refused(monkeypatch):
    """A matrix entry whose config or vendor is wrong (here: pyenv's 3.11.7 release table, where the
    data would have Debian's) stops `make tables` before anything is verified or written."""
    table = committed_table(GENERATED / "cpython-3.11.7-x86_64-linux-gnu.yaml")
    job = matrix.Job("debian 3.11.7 release x86_64-linux-gnu", "cpython-3.11.7-debian-x86_64-linux-gnu.yaml",
                     lambda: None)
    monkeypatch.setattr(matrix, "jobs", lambda: [job])
    monkeypatch.setattr(matrix, "make", lambda job, opts: (table, None, None, []))
    with pytest.raises(BuildError, match="the scan made cpython-3.11.7-x86_64-linux-gnu.yaml, but data/matrix.yaml "
                                         "says cpython-3.11.7-debian-x86_64-linux-gnu.yaml"):
        matrix._made(job.label, {}, check=True)


def test_a_jobs_header_inputs_are_its_inputs_without_the_source_and_fetch_none(monkeypatch):
    """`Job.headers` (what the header checks compile against) gives the build `inputs` gives, less
    its source tree, and asks the archive for no source package (sid's are listed but not served:
    each ask is a 404 over the network)."""
    from dataclasses import replace

    job = next(j for j in matrix.jobs() if j.label == "debian 3.11.2 release x86_64-linux-gnu")
    full = job.inputs()
    assert full.source is not None
    asked = []
    monkeypatch.setattr(matrix, "_trees", {})
    monkeypatch.setattr(matrix.VENDORS["debian"], "source", lambda *a: asked.append(a))
    assert job.headers() == replace(full, source=None) and asked == []
    configured = next(j for j in matrix.jobs() if j.configures)
    assert configured.header_inputs is None      # its pyconfig.h is configure's, from the source tree
