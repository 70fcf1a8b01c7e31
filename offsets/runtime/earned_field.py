"""`EarnedField`: a `model.Field` with `earned` ('exact' or 'proven'), as `offsets.field()` answers.
Imported at the first `field()`, so that a process that only calls get() never imports dataclasses."""
from __future__ import annotations

from dataclasses import dataclass

from ..layout.model import Field


@dataclass(frozen=True)
class EarnedField(Field):
    """A field as the runtime answers it: `earned` says how ('exact' or 'proven')."""

    earned: str = "exact"
