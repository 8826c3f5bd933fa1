/**
 * The demo's task store: the SDK's in-memory store, plus a way for a running job to learn that
 * its task changed status. The SDK answers `tasks/cancel` itself by writing `cancelled` into the
 * store and tells the tool nothing; `watch` is how the long job notices and stops.
 */
import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks"
import type { Task } from "@modelcontextprotocol/sdk/types.js"

export type TaskStatus = Task["status"]

export const isTerminal = (status: TaskStatus): boolean =>
  status === "completed" || status === "failed" || status === "cancelled"

export class WatchedTaskStore extends InMemoryTaskStore {
  private readonly listeners = new Map<string, Set<(status: TaskStatus, statusMessage?: string) => void>>()

  override async updateTaskStatus(
    taskId: string,
    status: TaskStatus,
    statusMessage?: string,
    sessionId?: string
  ): Promise<void> {
    await super.updateTaskStatus(taskId, status, statusMessage, sessionId)
    for (const listener of [...(this.listeners.get(taskId) ?? [])]) listener(status, statusMessage)
  }

  /** Calls `listener` on every later status change of `taskId` made through `updateTaskStatus`. */
  watch(taskId: string, listener: (status: TaskStatus, statusMessage?: string) => void): () => void {
    const set = this.listeners.get(taskId) ?? new Set()
    set.add(listener)
    this.listeners.set(taskId, set)
    return () => {
      set.delete(listener)
      if (set.size === 0) this.listeners.delete(taskId)
    }
  }
}
