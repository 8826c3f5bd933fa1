#!/usr/bin/env bash
# A throwaway OpenSSH sshd on 127.0.0.1 for test/servers/ssh.test.ts (recipe:
# /work/shared/recipes/real-components.md). Idempotent: a second run keeps the running sshd (its
# port too) and only refreshes users, keys and config. Needs root (users, sudoers, sshd).
#
#   setup.sh                  create users/keys/sudoers/config under the state dir, start sshd,
#                             write <state>/state.json; fails (exit 3) when openssh-server or sudo
#                             is missing — it never installs anything unless told to:
#   setup.sh --install-only   apt-get update, then apt-get install what is missing of
#                             openssh-server, sudo, openssh-client; nothing else (what
#                             .ci/setup-sshd.sh runs, and what the test harness runs as root when
#                             --probe says something is missing); SKALD_SSHD_INSTALL=1 makes a
#                             plain run install first as well.
#   setup.sh --probe          print {"missing": [...], "aptGet": true|false} and exit 0 (any user).
#
# Env: SKALD_SSHD_STATE (default /tmp/skald-sshd), SKALD_SSHD_PORT (default: a free port),
# SKALD_SSHD_BIN (default /usr/sbin/sshd; sshd must be started by an absolute path).
# The users are mcptest (password + two keys, one passphrase-protected; sudo with a password)
# and mcpnopw (key; NOPASSWD sudo). Passwords and the passphrase are random, kept in 0600 files
# under <state>/client and in <state>/state.json (0600). teardown.sh undoes everything but apt.
set -euo pipefail

STATE=${SKALD_SSHD_STATE:-/tmp/skald-sshd}
PW_USER=mcptest
NOPW_USER=mcpnopw
SUDOERS=/etc/sudoers.d/skald-ssh-test
SSHD=${SKALD_SSHD_BIN:-/usr/sbin/sshd}

die() {
  local code=$1
  shift
  echo "sshd setup: $*" >&2
  exit "$code"
}

missing_packages() {
  local missing=()
  [ -x "$SSHD" ] || missing+=(openssh-server)
  command -v sudo >/dev/null 2>&1 || missing+=(sudo)
  { command -v ssh-keygen && command -v ssh-keyscan; } >/dev/null 2>&1 || missing+=(openssh-client)
  echo "${missing[@]}"
}

install_packages() {
  local missing
  missing=$(missing_packages)
  [ -z "$missing" ] && return 0
  command -v apt-get >/dev/null 2>&1 || die 3 "missing $missing and no apt-get to install it"
  # A policy-rc.d that exits 101 keeps the package's postinst from starting the system sshd on :22.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT # also when apt-get fails
  fi
  echo "sshd setup: installing $missing" >&2
  # apt's progress goes to stdout (dropped); its errors go to stderr, which the caller shows.
  apt-get update -q >/dev/null || die 1 "apt-get update failed"
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null ||
    die 1 "apt-get install $missing failed"
  missing=$(missing_packages)
  [ -z "$missing" ] || die 1 "still missing after apt-get install: $missing"
  return 0
}

if [ "${1:-}" = "--probe" ]; then
  apt=false
  command -v apt-get >/dev/null 2>&1 && apt=true
  list=""
  for p in $(missing_packages); do list="$list${list:+, }\"$p\""; done
  echo "{\"missing\": [$list], \"aptGet\": $apt}"
  exit 0
fi

[ "$(id -u)" = 0 ] || die 3 "must run as root (it creates users and a sudoers drop-in and starts sshd)"

if [ "${1:-}" = "--install-only" ]; then
  install_packages
  exit 0
fi
[ "${SKALD_SSHD_INSTALL:-0}" = 1 ] && install_packages
missing=$(missing_packages)
[ -z "$missing" ] || die 3 "not installed: $missing. Install it as root with: bash .ci/setup-sshd.sh (apt-get update, then apt-get install -y --no-install-recommends $missing, with a policy-rc.d so no sshd starts on :22)"

# --- state dir, keys, secrets ------------------------------------------------------------------
install -d -m 0755 /run/sshd # privilege separation dir: sshd refuses to start without it
install -d -m 0755 "$STATE" "$STATE/home"
install -d -m 0700 "$STATE/sshd" "$STATE/client"
S=$STATE/sshd
C=$STATE/client

random_secret() { head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 20; }
secret_file() { # secret_file FILE: creates it once with a random value
  [ -s "$1" ] || { (umask 077 && random_secret >"$1"); }
}
secret_file "$C/$PW_USER.password"
secret_file "$C/$NOPW_USER.password"
secret_file "$C/key.passphrase"

[ -f "$S/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -C skald-test-host -f "$S/ssh_host_ed25519_key"
chmod 600 "$S/ssh_host_ed25519_key"
chown root:root "$S/ssh_host_ed25519_key"
[ -f "$C/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C skald-test-mcptest -f "$C/id_ed25519"
[ -f "$C/id_ed25519_nopw" ] || ssh-keygen -q -t ed25519 -N '' -C skald-test-mcpnopw -f "$C/id_ed25519_nopw"
[ -f "$C/id_ed25519_enc" ] ||
  ssh-keygen -q -t ed25519 -N "$(cat "$C/key.passphrase")" -C skald-test-encrypted -f "$C/id_ed25519_enc"

# --- users and sudoers -------------------------------------------------------------------------
make_user() { # make_user NAME PASSWORD_FILE AUTHORIZED_PUBKEY...
  local name=$1 pwfile=$2
  shift 2
  local home=$STATE/home/$name
  if id "$name" >/dev/null 2>&1; then
    [ "$(getent passwd "$name" | cut -d: -f6)" = "$home" ] || usermod -d "$home" "$name"
    install -d -m 0755 -o "$name" -g "$name" "$home"
  else
    useradd -m -b "$STATE/home" -s /bin/bash "$name"
  fi
  printf '%s:%s\n' "$name" "$(cat "$pwfile")" | chpasswd
  install -d -m 0700 -o "$name" -g "$name" "$home/.ssh"
  cat "$@" >"$home/.ssh/authorized_keys"
  chown "$name:$name" "$home/.ssh/authorized_keys"
  chmod 600 "$home/.ssh/authorized_keys"
}
make_user "$PW_USER" "$C/$PW_USER.password" "$C/id_ed25519.pub" "$C/id_ed25519_enc.pub"
make_user "$NOPW_USER" "$C/$NOPW_USER.password" "$C/id_ed25519_nopw.pub"

tmp_sudoers=$(mktemp)
cat >"$tmp_sudoers" <<EOF
Defaults:$PW_USER lecture=never, timestamp_timeout=0
Defaults:$NOPW_USER lecture=never
$PW_USER ALL=(ALL:ALL) ALL
$NOPW_USER ALL=(ALL:ALL) NOPASSWD: ALL
EOF
visudo -qcf "$tmp_sudoers" >/dev/null || die 1 "the sudoers drop-in does not parse"
install -m 0440 -o root -g root "$tmp_sudoers" "$SUDOERS"
rm -f "$tmp_sudoers"

# --- sshd --------------------------------------------------------------------------------------
running_pid() { # the PID of our listener, if it runs
  local pid
  [ -f "$S/sshd.pid" ] || return 1
  pid=$(cat "$S/sshd.pid")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$S/sshd_config" || return 1
  echo "$pid"
}

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

pid=$(running_pid || true)
if [ -n "$pid" ] && [ -f "$S/port" ]; then
  PORT=$(cat "$S/port")
else
  pid=""
  PORT=${SKALD_SSHD_PORT:-$(free_port)}
fi
echo "$PORT" >"$S/port"

(umask 077 && cat >"$S/sshd_config" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $S/ssh_host_ed25519_key
PidFile $S/sshd.pid
AuthorizedKeysFile .ssh/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
PermitRootLogin no
AllowUsers $PW_USER $NOPW_USER
UsePAM yes
StrictModes yes
PrintMotd no
PrintLastLog no
UseDNS no
X11Forwarding no
MaxStartups 100:30:200
MaxSessions 50
LogLevel VERBOSE
Subsystem sftp internal-sftp
EOF
)
"$SSHD" -t -f "$S/sshd_config" || die 1 "sshd -t rejected $S/sshd_config"

if [ -n "$pid" ]; then
  kill -HUP "$pid" # reload the config; same PID
else
  "$SSHD" -f "$S/sshd_config" -E "$S/sshd.log"
fi

# Ready when it answers with its host key (also what a client's known_hosts needs).
for _ in $(seq 1 100); do
  if ssh-keyscan -p "$PORT" -t ed25519 127.0.0.1 >"$C/known_hosts.tmp" 2>/dev/null && [ -s "$C/known_hosts.tmp" ]; then
    break
  fi
  sleep 0.1
done
[ -s "$C/known_hosts.tmp" ] || die 1 "sshd did not answer on 127.0.0.1:$PORT (see $S/sshd.log)"
mv "$C/known_hosts.tmp" "$C/known_hosts"
pid=$(running_pid) || die 1 "sshd is not running (see $S/sshd.log)"

# --- what the tests read -----------------------------------------------------------------------
json_string() { node -e 'process.stdout.write(JSON.stringify(process.argv[1]))' "$1"; }
(umask 077 && cat >"$STATE/state.json" <<EOF
{
  "host": "127.0.0.1",
  "port": $PORT,
  "state": $(json_string "$STATE"),
  "pid": $pid,
  "pidFile": $(json_string "$S/sshd.pid"),
  "config": $(json_string "$S/sshd_config"),
  "log": $(json_string "$S/sshd.log"),
  "knownHosts": $(json_string "$C/known_hosts"),
  "hostPublicKey": $(json_string "$S/ssh_host_ed25519_key.pub"),
  "passwordUser": {
    "name": "$PW_USER",
    "password": $(json_string "$(cat "$C/$PW_USER.password")"),
    "home": $(json_string "$STATE/home/$PW_USER"),
    "key": $(json_string "$C/id_ed25519"),
    "encryptedKey": $(json_string "$C/id_ed25519_enc"),
    "keyPassphrase": $(json_string "$(cat "$C/key.passphrase")")
  },
  "nopasswdUser": {
    "name": "$NOPW_USER",
    "home": $(json_string "$STATE/home/$NOPW_USER"),
    "key": $(json_string "$C/id_ed25519_nopw")
  }
}
EOF
)
echo "sshd setup: sshd (pid $pid) on 127.0.0.1:$PORT; state in $STATE/state.json" >&2
