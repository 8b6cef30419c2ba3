#!/usr/bin/env bash
# Install and check the jail that runs generated tool code (synth/envs/jail.py): Debian's bubblewrap, and
# libseccomp2 for its system-call filter (synth/envs/seccomp.py, built through the pinned pyseccomp).
#
#   synth/envs/sandbox-setup.sh          install bubblewrap and libseccomp2 if missing (apt-get, as root),
#                                        then start one jailed interpreter and report whether isolation works
#
# Exit 0 when the jail works; 1 with one line saying why not (then `toolscale envs check` refuses to run
# generated code, and only --insecure-in-process, for debugging, runs it without isolation).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PY:-.venv/bin/python}"

say() { echo "sandbox-setup: $*" >&2; }

missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || missing+=(libseccomp2)
if (( ${#missing[@]} )); then
  if [[ $(id -u) -ne 0 ]]; then
    say "${missing[*]} missing; run as root (or: sudo apt-get install ${missing[*]})"; exit 1
  fi
  say "installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  log="$(mktemp -t toolscale-apt-XXXX.log)"
  { apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$log" 2>&1 \
    || { apt-get update -qq >>"$log" 2>&1 && apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1; }; } \
    || { say "apt-get install ${missing[*]} failed (see $log)"; exit 1; }
fi
problem="$("$PY" -c 'from synth.envs.jail import jail_problem; print(jail_problem())')"
if [[ -n "$problem" ]]; then say "the jail does not work here: $problem"; exit 1; fi
say "ok: $(bwrap --version) with a seccomp filter isolates generated tool code"
