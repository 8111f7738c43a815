"""Errors of the interview domain a caller can act on, each with its HTTP answer
(``lambda_agents.errors.DomainError``: the API resolver's one handler answers them)."""

from __future__ import annotations

from ..errors import DomainError

# How long a client waits before sending a message again when a turn is busy or failed.
TURN_RETRY_AFTER_S = 5
VERSION_CONFLICT_MESSAGE = (
    "another change to this interview was stored first; nothing of this request was stored: send it again"
)


class InterviewError(DomainError):
    """Base of the interview's domain errors."""

    status = 500
    code = "INTERNAL_ERROR"


class SessionNotFound(InterviewError):
    """No such session, or not the caller's: the two are one answer, so ids cannot be probed."""

    status = 404
    code = "NOT_FOUND"


class InterviewFinished(InterviewError):
    """The interview has ended (completed or audit_failed): no further applicant message is taken."""

    status = 409
    code = "INTERVIEW_FINISHED"


class TurnLimitReached(InterviewError):
    """The session has taken its maximum number of applicant messages."""

    status = 409
    code = "TURN_LIMIT"


class VersionConflict(InterviewError):
    """Another turn of the same session was stored first (optimistic locking): nothing was written.
    Its answer says only that (never which version or whose change)."""

    status = 409
    code = "VERSION_CONFLICT"

    def __init__(self, reason: str = "") -> None:
        super().__init__(VERSION_CONFLICT_MESSAGE)
        self.reason = reason


class TurnInProgress(InterviewError):
    """A turn of this session is with the worker: the next message waits for its reply."""

    status = 409
    code = "TURN_IN_PROGRESS"
    always_retry_after_s = TURN_RETRY_AFTER_S


class TurnNotFound(InterviewError):
    """No turn of that id was handed to the worker in this session."""

    status = 404
    code = "TURN_NOT_FOUND"


class TurnFailed(InterviewError):
    """The worker could not run the turn (the model provider kept failing): nothing of it was
    stored, and the applicant may send the message again."""

    status = 503
    code = "MODEL_UNAVAILABLE"
    always_retry_after_s = TURN_RETRY_AFTER_S


class ConsentRequired(InterviewError):
    """The applicant has not accepted the notice yet: nothing of the interview runs before it."""

    status = 409
    code = "CONSENT_REQUIRED"


class NoticeChanged(InterviewError):
    """The consent names another notice than the one in force for this interview."""

    status = 409
    code = "NOTICE_CHANGED"


class FieldNotFound(InterviewError):
    """The job of this interview has no such field."""

    status = 404
    code = "FIELD_NOT_FOUND"


class FieldActionRefused(InterviewError):
    """A skip or correction the field's state forbids (a required field, a field not finished...);
    ``code`` says which."""

    status = 409

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message, code=code)


class JobNotFound(InterviewError):
    """No job with this id (or no such version of it)."""

    status = 404
    code = "JOB_NOT_FOUND"


class JobClosed(InterviewError):
    """The job is closed: it starts no new interview and takes no new version."""

    status = 409
    code = "JOB_CLOSED"


class JobExists(InterviewError):
    """A job with this id already exists."""

    status = 409
    code = "JOB_EXISTS"


class JobChanged(InterviewError):
    """Another change to the job was stored first (optimistic locking): nothing was written."""

    status = 409
    code = "JOB_CHANGED"
