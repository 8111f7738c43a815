"""Nudge generation (docs/nudges.md: Commander agent, slot table, rule-based fallback) and the
pending-posts query that feeds the TikTok / X posting jobs.

Submodules are imported where needed: the pending-posts function imports ``pending`` only,
so it never loads the LLM engine.
"""
