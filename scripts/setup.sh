#!/usr/bin/env bash
# The first install, step by step, each step with its count and elapsed time (to stderr, so that
# `make invoke` keeps stdout for its result). Every version comes from uv.lock; uv itself is pinned.
#   scripts/setup.sh venv   .tools/venv (uv), Python 3.13, .venv from uv.lock (the dev group)
#   scripts/setup.sh sam    .tools/sam: aws-sam-cli from scripts/sam-cli/uv.lock (its own environment)
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=$(sed -n 's/^required-version = "==\(.*\)"$/\1/p' pyproject.toml)
UV=.tools/venv/bin/uv
started=$SECONDS

say() { printf '[setup] %s\n' "$*" >&2; }
step() {  # step <n> <of> <what>: a start line now, the done line from done_step
  step_started=$SECONDS
  printf '[setup %s/%s] %s ...\n' "$1" "$2" "$3" >&2
}
done_step() { printf '          %s (%ss)\n' "$1" "$((SECONDS - step_started))" >&2; }
# uv's summary lines (Resolved / Prepared / Installed N packages in ...) without one line per package.
uv_summary() { grep -v -E '^ [-+~] ' >&2 || true; }

ensure_uv() {
  if [ -x "$UV" ] && [ "$("$UV" --version | cut -d' ' -f2)" = "$UV_VERSION" ]; then
    return
  fi
  step "$1" "$2" "uv $UV_VERSION into .tools/venv"
  python3 -m venv --clear .tools/venv >&2
  # Quiet unless it fails: pip's configuration here may name local wheel folders that do not exist.
  if ! out=$(.tools/venv/bin/python -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION" 2>&1); then
    echo "$out" >&2
    exit 1
  fi
  done_step "$("$UV" --version)"
}

python313() {
  step "$1" "$2" "Python 3.13 (the Lambda runtime)"
  PY313=$(scripts/find-python.sh "$UV")
  done_step "$PY313 ($("$PY313" -c 'import platform; print(platform.python_version())'))"
}

case "${1:-venv}" in
  venv)
    ensure_uv 1 3
    python313 2 3
    step 3 3 ".venv from uv.lock"
    "$UV" sync --locked --python "$PY313" 2>&1 | uv_summary
    count=$("$UV" pip list --python .venv/bin/python --format freeze 2>/dev/null | wc -l)
    done_step ".venv: $count packages, Python $(.venv/bin/python -c 'import platform; print(platform.python_version())')"
    say "ready in $((SECONDS - started))s"
    ;;
  sam)
    ensure_uv 1 3
    python313 2 3
    sam_version=$(sed -n 's/^dependencies = \["aws-sam-cli==\(.*\)"\]$/\1/p' scripts/sam-cli/pyproject.toml)
    step 3 3 "aws-sam-cli $sam_version into .tools/sam from scripts/sam-cli/uv.lock"
    UV_PROJECT_ENVIRONMENT="$PWD/.tools/sam" "$UV" sync --locked --project scripts/sam-cli --python "$PY313" 2>&1 | uv_summary
    mkdir -p .tools/bin
    ln -sf ../sam/bin/sam .tools/bin/sam
    count=$("$UV" pip list --python .tools/sam/bin/python --format freeze 2>/dev/null | wc -l)
    done_step "$(.tools/bin/sam --version), $count packages"
    ;;
  *)
    echo "usage: scripts/setup.sh venv|sam" >&2
    exit 2
    ;;
esac
