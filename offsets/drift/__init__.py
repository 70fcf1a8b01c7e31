"""Drift: how layouts change across tables.

diff.py, formats.py   Table x Table -> changes (and watch lists); text, markdown, JSON, GitHub output
history.py, report.py one name across all tables; the HTML byte-map page
tables.py             the tables they read: compact data made from the YAML asked for, else YAML
"""
