#!/usr/bin/env bash
# make test-sam-local: every function through the real SAM CLI in Docker (docs/local.md#sam-local-docker).
#   1. Docker Engine and debootstrap from Debian's packages when missing (root; else a message, exit 1)
#   2. dockerd for this run, unless one already answers; stopped on exit whatever happened, with
#      the containers sam local left
#   3. the Lambda Python 3.13 base image, built here when missing or stale (scripts/lambda-image)
#   4. sam build for x86_64 (samconfig.toml's x86_64 environment) into .aws-sam/build-x86_64
#   5. pytest tests/docker: sam local invoke and start-api; no test collected or any skipped fails
# One run at a time on a machine (a lock): they share the Docker Engine and its images.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
say() { printf '[test-sam-local] %s\n' "$*" >&2; }

lock=/var/lock/lambda-agents-sam-local.lock
[ -w "$(dirname "$lock")" ] || lock=${TMPDIR:-/tmp}/lambda-agents-sam-local.lock
exec 9>"$lock"
if ! flock -n 9; then
  say "another make test-sam-local is running on this machine; waiting for it ..."
  flock 9
fi

scripts/docker-engine.sh install
dockerd_pid=$(scripts/docker-engine.sh start)
cleanup() {
  local status=$?
  scripts/docker-engine.sh stop "$dockerd_pid" || true
  say "done in $((SECONDS - started))s (exit $status)"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

scripts/lambda-image/build.sh

say "sam build --config-env x86_64 (functions and layer for x86_64) ..."
build_started=$SECONDS
if ! LAYER_PLATFORM=x86_64-manylinux_2_28 .tools/bin/sam build --config-env x86_64 >/var/tmp/lambda-agents-sam-build.log 2>&1; then
  tail -30 /var/tmp/lambda-agents-sam-build.log >&2
  say "sam build failed (log above)"
  exit 1
fi
say "built in $((SECONDS - build_started))s"

.venv/bin/pytest tests/docker -m docker -p no:xdist -rs "$@"
