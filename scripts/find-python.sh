#!/usr/bin/env bash
# Prints a CPython 3.13 interpreter (the Lambda runtime's minor) for the project venv and the
# layer's bytecode, in this order: a pyenv 3.13 (pyenv shims are skipped: they fail when that
# version is not the selected one), python3.13 on PATH, one uv already manages, and last one that
# uv downloads (`uv python install 3.13`, python-build-standalone). Usage: find-python.sh <uv>
set -euo pipefail
uv=${1:?usage: find-python.sh <path to uv>}
want=3.13
is313() { [ -n "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' >/dev/null 2>&1; }

if command -v pyenv >/dev/null 2>&1; then
  for cand in "$(pyenv root)"/versions/$want*/bin/python$want; do
    if is313 "$cand"; then echo "$cand"; exit 0; fi
  done
fi
cand=$(command -v python$want 2>/dev/null || true)
if [ -n "$cand" ] && [[ "$cand" != */shims/* ]] && is313 "$cand"; then echo "$cand"; exit 0; fi
cand=$("$uv" python find --managed-python "$want" 2>/dev/null || true)
if is313 "$cand"; then echo "$cand"; exit 0; fi

echo "find-python: no CPython $want on this machine; asking uv to download one" >&2
if "$uv" python install "$want" >&2; then
  cand=$("$uv" python find --managed-python "$want" 2>/dev/null || true)
  if is313 "$cand"; then echo "$cand"; exit 0; fi
fi
cat >&2 <<EOF
find-python: CPython $want is needed (the Lambda runtime) and none could be found or downloaded.
Install it with one of: pyenv install $want / your OS packages (python$want) / python.org,
or let uv download it (uv python install $want; needs access to GitHub release downloads).
EOF
exit 1
