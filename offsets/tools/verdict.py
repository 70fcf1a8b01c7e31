"""A measurement against its goal, in the one word `make bench` prints beside it."""


def verdict(value: float, goal: float) -> str:
    """`ok` when a measured value meets its goal (at most `goal`), else `OVER GOAL`."""
    return "ok" if value <= goal else "OVER GOAL"
