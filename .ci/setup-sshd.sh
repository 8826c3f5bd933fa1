#!/usr/bin/env bash
# CI: installs what test/servers/ssh.test.ts needs — openssh-server and sudo — when they are
# missing (apt-get, with a policy-rc.d so the package's own sshd on :22 is not started). It starts
# nothing and creates nothing else: the test's beforeAll runs test/servers/sshd/setup.sh (users,
# keys, sudoers drop-in, an sshd on a free 127.0.0.1 port) and its afterAll teardown.sh. Needs root.
# The test's beforeAll runs this script itself when run as root with something missing (so a plain
# `npm test` as root on Debian installs it); as another user it fails, naming this script.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash test/servers/sshd/setup.sh --install-only
