"""One independent check's outcome (`Check`): what it compared, with what truth, and where it
disagreed with the table. What `verify.py` and each check it runs (`binary.py`...) share, below them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    """One independent check: what it compared, and where it disagreed with the table."""

    name: str
    source: str                       # what the truth was (compiler, binary, interpreter)
    structs: int
    fields: int
    mismatches: tuple[str, ...]
    notes: tuple[str, ...] = ()
    unit: str = "fields"
    #: further figures its record keeps, (name, number) each
    counts: tuple[tuple[str, int], ...] = ()

    def line(self) -> str:
        what = f"{self.structs} structs / {self.fields} fields" if self.unit == "fields" else f"{self.fields} {self.unit}"
        return f"{self.name}: {what} compared, {len(self.mismatches)} mismatches ({self.source})"
