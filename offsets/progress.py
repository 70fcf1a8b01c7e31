"""Progress on anything slow, and notes the user should see: one line on standard error,
`offsets: MESSAGE`, written at once (a long scan or fetch shows where it is)."""
import sys


def say(msg: str) -> None:
    print(f"offsets: {msg}", file=sys.stderr, flush=True)
