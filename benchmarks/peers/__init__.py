"""Peer comparison (issue 7): the nudge Commander task and the judge's messy answers run through
this product's engine, Instructor and Pydantic AI against the same seeded fault mix."""
