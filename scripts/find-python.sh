#!/usr/bin/env bash
# Prints the interpreter for the project venv: the Lambda runtime's minor (3.13) when the
# machine has it (a real binary on PATH or a pyenv version; pyenv shims are skipped because
# they fail when that version is not selected), otherwise any python3 >= 3.11.
set -euo pipefail
want=3.13
ok() { [ -n "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; }
roots=()
if command -v pyenv >/dev/null 2>&1; then roots+=("$(pyenv root)/versions"); fi
for root in "${roots[@]}"; do
  for cand in "$root"/$want*/bin/python$want; do
    if ok "$cand"; then echo "$cand"; exit 0; fi
  done
done
for name in python$want python3.12 python3.11 python3; do
  cand=$(command -v "$name" 2>/dev/null || true)
  if ok "$cand"; then echo "$cand"; exit 0; fi
done
echo "find-python: no Python >= 3.11 found (install python3.13 or any python3 >= 3.11)" >&2
exit 1
