"""Peer comparison: the nudge Commander task and the judge's messy answers run through
this product's engine, Instructor and Pydantic AI against the same seeded fault mix."""
