/**
 * Runs in each test worker before its file (vitest `setupFiles`): the worker — and every process
 * its tests start (servers, Chromium, sshd), which inherit it — runs at a lower scheduling
 * priority than vitest's main process. On a loaded 2-core machine the main process must still
 * answer its workers' calls in time: a worker gives up on one after 60 s, fixed in vitest
 * ("[vitest-worker]: Timeout calling \"onTaskUpdate\"", seen once in a 40-minute run), which
 * fails the run although every test passed. The main process does little work of its own, so the
 * tests lose nothing to it; among themselves nothing changes (they all run at the same priority).
 */
import * as Os from "node:os"

try {
  if (Os.getPriority() < Os.constants.priority.PRIORITY_BELOW_NORMAL) {
    Os.setPriority(Os.constants.priority.PRIORITY_BELOW_NORMAL)
  }
} catch {
  // Not allowed here (an unusual sandbox): the tests run as they are.
}
