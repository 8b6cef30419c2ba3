#!/usr/bin/env bash
# Install and check the jail that runs generated tool code (synth/envs/jail.py): Debian's bubblewrap.
#
#   synth/envs/sandbox-setup.sh          install bubblewrap if missing (apt-get, as root), then start one
#                                        jailed interpreter and report whether isolation works
#
# Exit 0 when the jail works; 1 with one line saying why not (then `toolscale envs check` refuses to run
# generated code, and only --insecure-in-process, for debugging, runs it without isolation).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PY:-.venv/bin/python}"

say() { echo "sandbox-setup: $*" >&2; }

if ! command -v bwrap >/dev/null 2>&1; then
  if [[ $(id -u) -ne 0 ]]; then
    say "bubblewrap is missing; run as root (or: sudo apt-get install bubblewrap)"; exit 1
  fi
  say "installing bubblewrap (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  log="$(mktemp -t toolscale-apt-XXXX.log)"
  { apt-get install -y -qq --no-install-recommends bubblewrap >"$log" 2>&1 \
    || { apt-get update -qq >>"$log" 2>&1 && apt-get install -y -qq --no-install-recommends bubblewrap >>"$log" 2>&1; }; } \
    || { say "apt-get install bubblewrap failed (see $log)"; exit 1; }
fi
problem="$("$PY" -c 'from synth.envs.jail import jail_problem; print(jail_problem())')"
if [[ -n "$problem" ]]; then say "the jail does not work here: $problem"; exit 1; fi
say "ok: $(bwrap --version) isolates generated tool code"
