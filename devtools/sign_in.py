"""Sign a user of a deployed stack's user pool in and print their ID token (docs/deploy.md#a-first-call).

    python -m devtools.sign_in --stack lambda-agents-dev --user someone@example.com
    python -m devtools.sign_in --user-pool-id us-east-1_Ab12 --client-id 4f... --user someone@example.com

The stack's app client allows Secure Remote Password only (``ALLOW_USER_SRP_AUTH``): the password
never leaves this machine, so `aws cognito-idp initiate-auth --auth-flow USER_PASSWORD_AUTH` is
refused. This command does the SRP exchange with pycognito and prints the ID token, the one the
API's Cognito routes take in ``Authorization``, alone on stdout (so ``TOKEN=$(...)`` keeps it); what
it says goes to stderr. The pool and client come from the stack's outputs (``UserPoolId``,
``UserPoolClientId``) or from the flags. The password is read from a prompt, or from the first line
of stdin when stdin is not a terminal, never from the command line (which the shell's history and
the process list keep). A first sign-in with the temporary password ``admin-create-user`` gave
asks for a new one (the second line of stdin), which the pool's policy must accept.

AWS settings are the shell's (``AWS_PROFILE``, ``AWS_REGION``, the usual credentials). The tokens
are checked against the pool's JSON Web Keys before one is printed (pycognito fetches them from the
pool's issuer URL, or takes them from ``COGNITO_JWKS``); ``AWS_ENDPOINT_URL`` points the calls at a
stand-in, as the tests do with moto's cognito-idp.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

import boto3

if TYPE_CHECKING:
    from botocore.exceptions import ClientError

PROG = "python -m devtools.sign_in"


class SignInFailed(Exception):
    """What stopped the sign-in, in words that say what to do."""


@dataclass(frozen=True)
class AppClient:
    user_pool_id: str
    client_id: str
    region: str


def _region(explicit: str | None) -> str:
    region = explicit or os.environ.get("AWS_REGION") or boto3.session.Session().region_name
    if not region:
        raise SignInFailed("no AWS region: pass --region, or set AWS_REGION (or AWS_PROFILE naming one with a region)")
    return region


def app_client(args: argparse.Namespace) -> AppClient:
    """The pool and app client to sign in to: the flags, else the stack's outputs."""
    if args.user_pool_id and args.client_id:
        region = args.region or args.user_pool_id.split("_", 1)[0]
        return AppClient(args.user_pool_id, args.client_id, region)
    if not args.stack:
        raise SignInFailed("name the stack (--stack) or both --user-pool-id and --client-id")
    region = _region(args.region)
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    try:
        described = boto3.client("cloudformation", region_name=region).describe_stacks(StackName=args.stack)
    except NoCredentialsError:
        raise SignInFailed(
            "no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        ) from None
    except ClientError as error:
        raise SignInFailed(f"cannot read stack {args.stack!r} in {region}: {_refusal(error)}") from None
    except BotoCoreError as error:
        raise SignInFailed(f"cannot read stack {args.stack!r} in {region}: {error}") from None
    outputs = {item["OutputKey"]: item["OutputValue"] for item in described["Stacks"][0].get("Outputs", [])}
    missing = [name for name in ("UserPoolId", "UserPoolClientId") if name not in outputs]
    if missing:
        raise SignInFailed(f"stack {args.stack!r} has no output {', '.join(missing)}: is it this project's stack?")
    return AppClient(outputs["UserPoolId"], outputs["UserPoolClientId"], region)


class Secrets:
    """Passwords from a prompt on a terminal, else one a line from stdin."""

    def __init__(self, stdin: IO[str], prompt: Callable[[str], str] = getpass.getpass) -> None:
        self._stdin = stdin
        self._prompt = prompt

    def read(self, what: str) -> str:
        if self._stdin.isatty():
            return self._prompt(f"{what}: ")
        line = self._stdin.readline()
        if not line:
            raise SignInFailed(f"stdin ended before the {what.lower()} (one line each)")
        return line.rstrip("\r\n")


def sign_in(client: AppClient, username: str, secrets: Secrets, say: Callable[[str], None]) -> str:
    """The user's ID token after an SRP sign-in (and a new password, when the pool asks for one)."""
    from botocore.exceptions import ClientError
    from pycognito import Cognito
    from pycognito.exceptions import ForceChangePasswordException, MFAChallengeException

    user = Cognito(client.user_pool_id, client.client_id, user_pool_region=client.region, username=username)
    password = secrets.read("Password")
    try:
        try:
            user.authenticate(password=password)
        except ForceChangePasswordException:
            say(
                "the pool asks for a new password (this was the temporary one): "
                "12+ characters, upper and lower case, a digit, a symbol"
            )
            user.new_password_challenge(password=password, new_password=secrets.read("New password"))
    except MFAChallengeException:
        raise SignInFailed(
            "this user has a second factor (TOTP): sign in from the app, which asks for the code"
        ) from None
    except ClientError as error:
        raise SignInFailed(f"Cognito refused the sign-in: {_refusal(error)}") from None
    return str(user.id_token)


def _refusal(error: ClientError) -> str:
    """What AWS said when it refused a call (botocore's ``ClientError``): its code and message."""
    details = error.response.get("Error", {})
    return f"{details.get('Code')}: {details.get('Message')}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--user", required=True, help="the user's name in the pool (the e-mail admin-create-user was given)"
    )
    parser.add_argument("--stack", help="the deployed stack whose outputs name the pool and client (lambda-agents-dev)")
    parser.add_argument("--user-pool-id", help="the pool, instead of --stack")
    parser.add_argument("--client-id", help="the app client, instead of --stack")
    parser.add_argument("--region", help="default: AWS_REGION, the profile's, or the pool id's prefix")
    return parser


def main(argv: Sequence[str] | None = None, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out = stdout or sys.stdout

    def say(message: str) -> None:
        print(f"[sign-in] {message}", file=sys.stderr, flush=True)

    try:
        client = app_client(args)
        say(f"signing {args.user} in to {client.user_pool_id} (client {client.client_id}) with SRP")
        token = sign_in(client, args.user, Secrets(stdin or sys.stdin), say)
    except SignInFailed as failed:
        print(f"{PROG}: error: {failed}", file=sys.stderr)
        return 2
    print(token, file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
