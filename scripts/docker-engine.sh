#!/usr/bin/env bash
# Docker Engine for `make test-sam-local`, from Debian's packages, started for one run and stopped after.
#   scripts/docker-engine.sh install   docker.io, containerd, runc, tini, iptables and debootstrap (the
#                                     base image's root filesystem) as root, when one is missing
#   scripts/docker-engine.sh start     dockerd in the background unless one already answers; prints the
#                                     pid of the one it started ("" when it used one that was running)
#   scripts/docker-engine.sh stop PID  removes the containers the SAM CLI left, then stops that dockerd
# Where Docker cannot be had (not root, a package missing, dockerd not answering) it says why and
# exits 1. A dockerd that was already running is used and left running.
set -euo pipefail
PACKAGES=(docker.io containerd runc tini iptables debootstrap)
NEEDED_COMMANDS=(dockerd containerd runc tini iptables debootstrap)
LOG=${DOCKERD_LOG:-/var/tmp/lambda-agents-dockerd.log}

say() { printf '[docker] %s\n' "$*" >&2; }
fail() { say "$*"; exit 1; }
answers() { docker info >/dev/null 2>&1; }

install() {
  local missing=()
  for command in "${NEEDED_COMMANDS[@]}"; do
    command -v "$command" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin command -v "$command" >/dev/null 2>&1 \
      || missing+=("$command")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || fail "missing ${missing[*]}: install Debian's ${PACKAGES[*]} as root (make test-sam-local does, run as root)"
  command -v apt-get >/dev/null 2>&1 || fail "missing ${missing[*]} and no apt-get: install Docker Engine and debootstrap yourself"
  say "installing ${PACKAGES[*]} (Debian's packages) ..."
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}"; } >/var/tmp/lambda-agents-apt.log 2>&1; then
    tail -20 /var/tmp/lambda-agents-apt.log >&2
    fail "apt-get could not install ${PACKAGES[*]} (log above)"
  fi
}

start() {
  if answers; then
    say "using the Docker Engine that is already running"
    echo ""
    return 0
  fi
  [ "$(id -u)" -eq 0 ] || fail "no Docker Engine answers, and starting dockerd needs root"
  local dockerd
  dockerd=$(command -v dockerd || PATH=$PATH:/usr/sbin command -v dockerd) || fail "dockerd is missing: scripts/docker-engine.sh install"
  say "starting dockerd (log: $LOG) ..."
  # setsid: its own session, so a Ctrl-C meant for the tests does not stop it before they clean up.
  setsid "$dockerd" >"$LOG" 2>&1 </dev/null &
  local pid=$!
  for _ in $(seq 60); do
    if answers; then
      echo "$pid"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  tail -20 "$LOG" >&2
  kill "$pid" 2>/dev/null || true
  fail "dockerd did not answer within 60 s (log above)"
}

stop() {
  local pid=${1:-}
  if answers; then
    # sam local labels its containers; a test that was interrupted may have left some.
    local left
    left=$(docker ps -aq --filter label=sam.cli.container.type)
    if [ -n "$left" ]; then
      say "removing $(echo "$left" | wc -l) container(s) sam local left"
      echo "$left" | xargs docker rm -f >/dev/null 2>&1 || true
    fi
    # Images of earlier runs that a rebuild untagged.
    docker image prune -f >/dev/null 2>&1 || true
  fi
  [ -n "$pid" ] || return 0
  say "stopping dockerd ($pid)"
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 30); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 1
  done
  say "dockerd did not stop within 30 s: killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop "${2:-}" ;;
  *)
    echo "usage: scripts/docker-engine.sh install | start | stop [PID]" >&2
    exit 2
    ;;
esac
