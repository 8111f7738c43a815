"""A SigV4-signed request to an IAM route, as the local runner takes it (docs/local.md#the-local-runner-no-docker).

Deployed, API Gateway verifies the signature of every request to an ``AWS_IAM`` route against the
caller's secret key. Locally there is no secret to verify against, so the runner checks what it can
see, as API Gateway checks it before the signature itself: the ``Authorization`` header's shape
(``AWS4-HMAC-SHA256 Credential=<key id>/<yyyymmdd>/<region>/execute-api/aws4_request,
SignedHeaders=...;host;..., Signature=<64 hex>``), an ``X-Amz-Date`` (or ``Date``) of the
credential's day and within 15 minutes of now, and the credential's scope: this API's region and
the ``execute-api`` service. A request of that shape is the admin caller whose access key signed it
(``identity.accessKey``, and ``identity.userArn`` a local user named after the key); a malformed one
is refused with the words and the gateway response type API Gateway uses (an incomplete header:
``IncompleteSignatureException`` under ``MISSING_AUTHENTICATION_TOKEN``; a wrong scope or a stale
date: ``InvalidSignatureException`` under ``INVALID_SIGNATURE``). A wrong secret key is the one
mistake only the deployed API can find.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

ALGORITHM = "AWS4-HMAC-SHA256"
SERVICE = "execute-api"
# How far a request's date may be from the receiver's clock (SigV4's window).
CLOCK_SKEW = timedelta(minutes=15)
_AMZ_DATE = re.compile(r"^\d{8}T\d{6}Z$")
_SIGNATURE = re.compile(r"^[0-9a-f]{64}$")
_ACCESS_KEY = re.compile(r"^[A-Z0-9]{16,128}$")


@dataclass(frozen=True)
class SignedCaller:
    """Who signed: the access key id of the credential (and whether a session token came along)."""

    access_key_id: str
    session_token: bool


class SignatureRefused(Exception):
    """API Gateway's refusal of a signed request: the gateway response type, its message, its error type."""

    def __init__(self, response_type: str, message: str, error_type: str) -> None:
        super().__init__(message)
        self.response_type = response_type
        self.message = message
        self.error_type = error_type


def _incomplete(message: str) -> SignatureRefused:
    return SignatureRefused("MISSING_AUTHENTICATION_TOKEN", message, "IncompleteSignatureException")


def _invalid(message: str) -> SignatureRefused:
    return SignatureRefused("INVALID_SIGNATURE", message, "InvalidSignatureException")


def _header(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    values = [value for key, value in headers if key.lower() == name]
    return values[-1].strip() if values else None


def _parameters(authorization: str) -> dict[str, str]:
    """Credential / SignedHeaders / Signature of the header; a part that is no key=value pair is refused
    with API Gateway's words."""
    found: dict[str, str] = {}
    for written in authorization[len(ALGORITHM) :].split(","):
        part = written.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep:
            raise _incomplete(
                f"'{part}' not a valid key=value pair (missing equal-sign) in Authorization header: '{authorization}'."
            )
        found[name.strip()] = value.strip()
    return found


def signed_caller(headers: Sequence[tuple[str, str]], region: str, now: datetime | None = None) -> SignedCaller:
    """The caller of a request signed with SigV4 for ``region``'s execute-api, or ``SignatureRefused``."""
    authorization = _header(headers, "authorization") or ""
    if not authorization.startswith(f"{ALGORITHM} "):
        raise _incomplete(
            "Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' "
            "parameter. Authorization header requires 'SignedHeaders' parameter. Authorization header requires "
            f"existence of either a 'X-Amz-Date' or a 'Date' header. Authorization={authorization}"
        )
    parameters = _parameters(authorization)
    date = _header(headers, "x-amz-date") or _header(headers, "date")
    missing = [
        f"Authorization header requires '{name}' parameter."
        for name in ("Credential", "Signature", "SignedHeaders")
        if not parameters.get(name)
    ]
    if date is None:
        missing.append("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
    if missing:
        raise _incomplete(" ".join([*missing, f"Authorization={authorization}"]))
    scope = parameters["Credential"].split("/")
    if len(scope) != 5 or scope[4] != "aws4_request" or not _ACCESS_KEY.match(scope[0]):
        raise _incomplete(
            f"Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, "
            f"got '{parameters['Credential']}'"
        )
    access_key, day, scope_region, service, _ = scope
    if service != SERVICE:
        raise _invalid(f"Credential should be scoped to correct service: '{SERVICE}'. ")
    if scope_region != region:
        raise _invalid(f"Credential should be scoped to a valid region, not '{scope_region}'. ")
    signed = parameters["SignedHeaders"].lower().split(";")
    if "host" not in signed:
        raise _invalid("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.")
    if not _SIGNATURE.match(parameters["Signature"]):
        raise _invalid(
            "The request signature we calculated does not match the signature you provided. Check your AWS "
            "Secret Access Key and signing method. Consult the service documentation for details."
        )
    _check_date(date or "", day, now or datetime.now(UTC))
    return SignedCaller(access_key, session_token=_header(headers, "x-amz-security-token") is not None)


def _check_date(date: str, day: str, now: datetime) -> None:
    if not _AMZ_DATE.match(date):
        raise _incomplete(
            f"Date must be in ISO-8601 'basic format'. Got '{date}'. See http://en.wikipedia.org/wiki/ISO_8601"
        )
    signed_at = datetime.strptime(date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    if date[:8] != day:
        raise _invalid(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
            f"'{day}' != '{date[:8]}', from '{date}'."
        )
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    if signed_at < now - CLOCK_SKEW:
        earliest = (now - CLOCK_SKEW).strftime("%Y%m%dT%H%M%SZ")
        raise _invalid(f"Signature expired: {date} is now earlier than {earliest} ({stamp} - 15 min.)")
    if signed_at > now + CLOCK_SKEW:
        latest = (now + CLOCK_SKEW).strftime("%Y%m%dT%H%M%SZ")
        raise _invalid(f"Signature not yet current: {date} is still later than {latest} ({stamp} + 15 min.)")
