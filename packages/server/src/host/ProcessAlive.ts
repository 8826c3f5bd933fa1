/**
 * Whether a process is alive, by its pid: signal 0 checks without sending anything. A process
 * that exists but belongs to another user (EPERM) is alive. Used for the records a process leaves
 * behind (the host's address file, a server's heartbeat) to tell a live owner from a stale one.
 */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}
