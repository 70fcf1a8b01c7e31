"""What a check found (`Result`): the checks passed, failed (with expected vs actual) and not run,
and what the passed ones proved. Light to import: a cached result is read back with it alone."""
from __future__ import annotations

#: A passing check needs at least this many passed checks, of which at least one memory read.
MIN_PASSED = 8


class Result:
    """What a live check found: checks passed, failed (with expected vs actual), and not run."""

    def __init__(self) -> None:
        self.passed: list = []
        self.failed: list = []
        self.skipped: list = []
        #: what the passed checks read: (struct key, field path), or (struct key, None) for its size
        self.proven: set = set()
        #: the constants a check in another process saw there (remote/proof.py), by name
        self.proven_constants: set = set()

    @property
    def ok(self) -> bool:
        """No failure, enough passes, and at least one of them a read of live memory."""
        reads = [p for p in self.passed if "__basicsize__" not in p]
        return not self.failed and len(self.passed) >= MIN_PASSED and bool(reads)

    def summary(self) -> str:
        s = f"{len(self.passed)} checks passed, {len(self.failed)} failed, {len(self.skipped)} not run"
        return s + (f" (first failure: {self.failed[0]})" if self.failed else "")

    def __repr__(self) -> str:
        return f"<live check: {self.summary()}>"
