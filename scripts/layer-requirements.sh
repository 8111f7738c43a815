#!/usr/bin/env bash
# Prints the layer's requirements: the runtime dependencies of uv.lock (no dev, no sam group),
# every one pinned with its hashes. `make lock` writes them to layers/common/requirements.txt and
# tests/infrastructure/bundle/test_build_reproducible.py checks that file against this output.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${UV:-.tools/venv/bin/uv}" export --locked --no-dev --no-emit-project --format requirements-txt --quiet
