"""Sections of `make demo` (devtools/demo.py), one module per system, run in this order:
engine, nudges, chat, judge, interview. An absent module is skipped with a note.

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""
