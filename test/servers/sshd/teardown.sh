#!/usr/bin/env bash
# Undoes setup.sh: ends the test users' sessions and the sshd listener (each by PID, after
# checking what it is), removes the users, the sudoers drop-in and the state dir. The apt
# packages stay. Safe to run twice, or with nothing set up.
#
# Env: SKALD_SSHD_STATE (default /tmp/skald-sshd).
set -uo pipefail

STATE=${SKALD_SSHD_STATE:-/tmp/skald-sshd}
S=$STATE/sshd
USERS=(mcptest mcpnopw)
SUDOERS=/etc/sudoers.d/skald-ssh-test

cmdline() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }

# The listener, by its PID file, only when its command line names our config.
if [ -f "$S/sshd.pid" ]; then
  pid=$(cat "$S/sshd.pid")
  if [ -n "$pid" ] && cmdline "$pid" | grep -qF -- "$S/sshd_config"; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 30); do
      [ -d "/proc/$pid" ] || break
      sleep 0.1
    done
    [ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null
  fi
fi

# Live sessions outlive the listener: their "sshd: <user> [priv]" monitors (root) and every
# process of the test users. Each is ended by PID.
session_pids() {
  local user uid p
  for user in "${USERS[@]}"; do
    uid=$(id -u "$user" 2>/dev/null) || continue
    for p in /proc/[0-9]*; do
      p=${p#/proc/}
      if [ "$(stat -c %u "/proc/$p" 2>/dev/null)" = "$uid" ]; then
        echo "$p"
      elif cmdline "$p" | grep -qE "^sshd: $user(@| \[)"; then
        echo "$p"
      fi
    done
  done
}
for signal in TERM KILL; do
  pids=$(session_pids)
  [ -z "$pids" ] && break
  for p in $pids; do kill "-$signal" "$p" 2>/dev/null; done
  for _ in $(seq 1 20); do
    [ -z "$(session_pids)" ] && break
    sleep 0.1
  done
done

for user in "${USERS[@]}"; do
  if id "$user" >/dev/null 2>&1; then
    userdel "$user" 2>/dev/null || { sleep 0.5; userdel "$user"; }
  fi
done
rm -f "$SUDOERS"
case "$STATE" in
  /tmp/* | /var/tmp/* | */skald-sshd*) rm -rf "$STATE" ;;
  *) echo "sshd teardown: left $STATE in place (not under a temp dir)" >&2 ;;
esac
exit 0
