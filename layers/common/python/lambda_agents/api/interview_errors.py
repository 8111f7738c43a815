"""The interview domain's errors (applicant and employer routes) as HTTP answers, in one table.

Both interview functions register ``interview_error_answer`` for ``InterviewError``, so a route
raises the domain's error and never builds an answer itself.
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler import Response

from ..interview.errors import (
    ConsentRequired,
    FieldActionRefused,
    FieldNotFound,
    InterviewError,
    InterviewFinished,
    JobChanged,
    JobClosed,
    JobExists,
    JobNotFound,
    NoticeChanged,
    SessionNotFound,
    TurnFailed,
    TurnInProgress,
    TurnLimitReached,
    TurnNotFound,
    VersionConflict,
)
from .resolver import error_response

_ANSWERS: dict[type[InterviewError], tuple[int, str]] = {
    SessionNotFound: (404, "NOT_FOUND"),
    JobNotFound: (404, "JOB_NOT_FOUND"),
    FieldNotFound: (404, "FIELD_NOT_FOUND"),
    InterviewFinished: (409, "INTERVIEW_FINISHED"),
    TurnLimitReached: (409, "TURN_LIMIT"),
    TurnNotFound: (404, "TURN_NOT_FOUND"),
    ConsentRequired: (409, "CONSENT_REQUIRED"),
    NoticeChanged: (409, "NOTICE_CHANGED"),
    JobClosed: (409, "JOB_CLOSED"),
    JobExists: (409, "JOB_EXISTS"),
    JobChanged: (409, "JOB_CHANGED"),
}
TURN_RETRY_AFTER_S = 5
VERSION_CONFLICT_MESSAGE = (
    "another change to this interview was stored first; nothing of this request was stored: send it again"
)


def interview_error_answer(error: InterviewError) -> Response[str]:
    if isinstance(error, VersionConflict):
        return error_response(409, "VERSION_CONFLICT", VERSION_CONFLICT_MESSAGE)
    if isinstance(error, TurnInProgress):
        return error_response(409, "TURN_IN_PROGRESS", str(error), headers={"Retry-After": str(TURN_RETRY_AFTER_S)})
    if isinstance(error, TurnFailed):
        return error_response(503, "MODEL_UNAVAILABLE", str(error), headers={"Retry-After": str(TURN_RETRY_AFTER_S)})
    if isinstance(error, FieldActionRefused):
        return error_response(409, error.code, str(error))
    for kind, (status, code) in _ANSWERS.items():
        if isinstance(error, kind):
            return error_response(status, code, str(error))
    return error_response(500, "INTERNAL_ERROR", "internal error")
