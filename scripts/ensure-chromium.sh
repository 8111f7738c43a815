#!/usr/bin/env bash
# Debian's Chromium drives the browser tests (tests/infrastructure/browser: Swagger UI, the live answers page).
# Installed with apt-get when missing and we are root (CI, the project's machines); otherwise a note
# says how, and the test skips with that reason, except under CI=true, where it fails instead.
set -euo pipefail
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  started=$SECONDS
  echo "[setup] installing Debian's chromium for the Swagger UI browser test ..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
  echo "          $("$CHROMIUM" --version 2>/dev/null) ($((SECONDS - started))s)" >&2
  exit 0
fi
echo "[setup] no $CHROMIUM: the Swagger UI browser test will skip (install Debian's chromium: sudo apt-get install chromium)" >&2
