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


class TurnInProgress(InterviewError):
    """A turn of this session is with the worker: the next message waits for its reply."""


class TurnNotFound(InterviewError):
    """No turn of that id was handed to the worker in this session."""


class TurnFailed(InterviewError):
    """The worker could not run the turn (the model provider kept failing): nothing of it was
    stored, and the applicant may send the message again."""


class ConsentRequired(InterviewError):
    """The applicant has not accepted the notice yet: nothing of the interview runs before it."""


class NoticeChanged(InterviewError):
    """The consent names another notice than the one in force for this interview."""


class FieldNotFound(InterviewError):
    """The job of this interview has no such field."""


class FieldActionRefused(InterviewError):
    """A skip or correction the field's state forbids (a required field, a field not finished...)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class JobNotFound(InterviewError):
    """No job with this id (or no such version of it)."""


class JobClosed(InterviewError):
    """The job is closed: it starts no new interview and takes no new version."""


class JobExists(InterviewError):
    """A job with this id already exists."""


class JobChanged(InterviewError):
    """Another change to the job was stored first (optimistic locking): nothing was written."""
