"""Regeneration and measurement: run from a checkout, never by the runtime.

matrix.py, regenerate.py   `make tables`: every build of data/matrix.yaml, verified, then its C header and compact form
bench*.py, store_cost.py   `make bench`: costs as ratios to a floor measured in the same run, and sizes
command_line.py            the command line they share: `--help` with examples, before any work starts
"""
