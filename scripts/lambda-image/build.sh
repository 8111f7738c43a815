#!/usr/bin/env bash
# Builds the Lambda Python 3.13 base image for x86_64 on this machine and tags it as the SAM CLI
# looks for it (public.ecr.aws/lambda/python:3.13-x86_64; `sam local ... --skip-pull-image`), since
# no container registry can be reached here. Root, Docker and debootstrap are needed
# (scripts/docker-engine.sh installs them). An image built from this recipe is kept: the script
# does nothing when the image's recipe label matches this folder and the SAM CLI's emulator.
#
#   rootfs    Debian trixie (minbase) with its CPython 3.13, presented at /var/lang as the runtime's is,
#             and the en_US.UTF-8 locale
#   /var/runtime   awslambdaric from requirements.txt (hash-checked wheels), bootstrap, bootstrap.py
#   /usr/local/bin/aws-lambda-rie   the SAM CLI's own emulator, as AWS's images carry one
#   settings  Dockerfile: AWS's environment, working directory and entry point
#
# usage: scripts/lambda-image/build.sh            (LAMBDA_IMAGE_MIRROR overrides Debian's mirror)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
TAG=public.ecr.aws/lambda/python:3.13-x86_64
SUITE=trixie
MIRROR=${LAMBDA_IMAGE_MIRROR:-http://deb.debian.org/debian}
UV=$root/.tools/venv/bin/uv
RIE=$root/.tools/sam/lib/python3.13/site-packages/samcli/local/rapid/aws-lambda-rie-x86_64
started=$SECONDS

say() { printf '[lambda-image] %s\n' "$*" >&2; }

for need in "$UV" "$RIE"; do
  [ -e "$need" ] || { say "$need is missing: run 'make setup build' first"; exit 1; }
done
recipe=$(cd "$here" && cat Dockerfile bootstrap bootstrap.py lambda-entrypoint.sh requirements.txt build.sh "$RIE" \
  | sha256sum | cut -c1-16)
current=$(docker image inspect "$TAG" --format '{{ index .Config.Labels "lambda-agents.recipe" }}' 2>/dev/null || true)
if [ "$current" = "$recipe" ]; then
  say "$TAG is up to date (recipe $recipe)"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || { say "building $TAG needs root (debootstrap, chroot)"; exit 1; }
command -v debootstrap >/dev/null || { say "debootstrap is missing: scripts/docker-engine.sh install"; exit 1; }

work=$(mktemp -d -p /var/tmp --suffix=.lambda-image)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
say "1/4 Debian $SUITE with python3.13 into a root filesystem (debootstrap, about a minute) ..."
if ! debootstrap --variant=minbase --include=python3.13,locales "$SUITE" "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1; then
  tail -20 "$work/debootstrap.log" >&2
  say "debootstrap failed (log above)"
  exit 1
fi

say "2/4 the runtime's layout: /var/lang, /var/runtime (awslambdaric), /var/task, /opt ..."
# /var/lang/bin/python3.13 with sys.prefix /var/lang and /var/lang/lib/python3.13/site-packages, as in
# AWS's image; the interpreter and the standard library stay Debian's.
chroot "$rootfs" /usr/bin/python3.13 -m venv --without-pip /var/lang
# LANG=en_US.UTF-8 names a locale that exists, as in AWS's image (else Python coerces to C.UTF-8
# and adds LC_CTYPE to the function's environment).
chroot "$rootfs" localedef -i en_US -c -f UTF-8 en_US.UTF-8
"$UV" pip install --quiet --no-deps --require-hashes --only-binary :all: \
  --python-platform x86_64-manylinux_2_28 --python-version 3.13 \
  --target "$rootfs/var/runtime" -r "$here/requirements.txt"
install -m 0755 "$here/bootstrap" "$rootfs/var/runtime/bootstrap"
install -m 0644 "$here/bootstrap.py" "$rootfs/var/runtime/bootstrap.py"
install -m 0755 "$here/lambda-entrypoint.sh" "$rootfs/lambda-entrypoint.sh"
install -m 0755 "$RIE" "$rootfs/usr/local/bin/aws-lambda-rie"
chroot "$rootfs" /var/lang/bin/python3.13 -m compileall -q /var/runtime >/dev/null
mkdir -p "$rootfs/var/task" "$rootfs/opt"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*

say "3/4 the image's context ..."
mkdir "$work/context"
cp "$here/Dockerfile" "$work/context/Dockerfile"
tar -C "$rootfs" --numeric-owner -cf "$work/context/rootfs.tar" .

say "4/4 docker build -t $TAG ..."
# The classic builder: FROM scratch needs no registry, and the docker CLI may have no buildx.
if ! DOCKER_BUILDKIT=0 docker build --label "lambda-agents.recipe=$recipe" -t "$TAG" "$work/context" >"$work/build.log" 2>&1; then
  tail -20 "$work/build.log" >&2
  say "docker build failed (log above)"
  exit 1
fi
say "$TAG built in $((SECONDS - started))s ($(docker image inspect "$TAG" --format '{{.Size}}' | numfmt --to=iec))"
