"""Errors of the interview domain a caller can act on (the API maps each to one HTTP answer)."""

from __future__ import annotations


class InterviewError(Exception):
    """Base of the interview's domain errors."""


class SessionNotFound(InterviewError):
    """No such session, or not the caller's: the two are one answer, so ids cannot be probed."""


class InterviewFinished(InterviewError):
    """The interview has ended (completed or audit_failed): no further applicant message is taken."""


class TurnLimitReached(InterviewError):
    """The session has taken its maximum number of applicant messages."""


class VersionConflict(InterviewError):
    """Another turn of the same session was stored first (optimistic locking): nothing was written."""
