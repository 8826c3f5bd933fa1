#!/usr/bin/env bash
# CI: installs what the web UI's browser tests (test/web*.test.ts, test/support/browser.ts) need —
# Debian's chromium, chromium-driver and fonts-liberation (stable screenshots) — when any is
# missing: apt-get update first, then apt-get install --no-install-recommends. It starts nothing;
# the tests launch Chromium themselves through playwright-core (never `npx playwright install`).
# Needs root when something is missing; with everything installed it only checks.
set -euo pipefail

CHROMIUM=${CHROMIUM_PATH:-/usr/bin/chromium}

die() {
  echo "chromium setup: $*" >&2
  exit 1
}

missing_packages() {
  local missing=()
  [ -x "$CHROMIUM" ] || missing+=(chromium)
  [ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
  [ -d /usr/share/fonts/truetype/liberation ] || missing+=(fonts-liberation)
  echo "${missing[@]}"
}

missing=$(missing_packages)
if [ -n "$missing" ]; then
  [ "$(id -u)" = 0 ] || die "not installed: $missing. Run this script as root (it uses apt-get)."
  command -v apt-get >/dev/null 2>&1 || die "missing $missing and no apt-get to install it"
  echo "chromium setup: installing $missing" >&2
  # apt's progress goes to stdout (dropped); its errors go to stderr, which the caller shows.
  apt-get update -q >/dev/null || die "apt-get update failed"
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null ||
    die "apt-get install $missing failed"
  missing=$(missing_packages)
  [ -z "$missing" ] || die "still missing after apt-get install: $missing"
fi
echo "chromium setup: $("$CHROMIUM" --version 2>/dev/null | grep -i chromium || echo "$CHROMIUM")"
