/**
 * Request deadlines of one connection, in O(1) per request: one FIFO list per distinct timeout
 * (deadlines in a list are added in time order, so each list is sorted), the earliest deadline is
 * the least of the list heads, and a finished request unlinks itself. The lists are intrusive: the
 * engine's pending entry IS the list node (no node object per request). Plain code: it runs on
 * every request. The timer fiber that sleeps until `earliest()` lives in the engine.
 */

/** The fields a value carries to sit in a deadline list. Owned by this module: set them to `undefined` / `0` initially. */
export interface Node<N extends Node<N>> {
  /** When it expires (epoch millis); meaningful while linked. */
  deadline: number
  prev: N | undefined
  next: N | undefined
  /** The list it is linked into; `undefined` when it is not linked. */
  list: List<N> | undefined
}

export interface List<N extends Node<N>> {
  readonly duration: number
  head: N | undefined
  tail: N | undefined
}

export interface Deadlines<N extends Node<N>> {
  /** Links `node` to expire `durationMillis` after `now` (it must not be linked). */
  readonly add: (now: number, durationMillis: number, node: N) => void
  /** Unlinks a node (a finished request); idempotent. */
  readonly remove: (node: N) => void
  /** The earliest registered deadline, if any. */
  readonly earliest: () => number | undefined
  /** Unlinks every node whose deadline is at or before `now`, oldest first, and calls `f` on it. */
  readonly expire: (now: number, f: (node: N) => void) => void
  /** Unlinks everything. */
  readonly clear: () => void
}

/** True while `node` is in a list. */
export const isLinked = <N extends Node<N>>(node: N): boolean => node.list !== undefined

export const make = <N extends Node<N>>(): Deadlines<N> => {
  const lists = new Map<number, List<N>>()
  // The list of the most recent duration: nearly every request of a connection has the same timeout.
  let last: List<N> | undefined

  const add = (now: number, duration: number, node: N) => {
    let list = last !== undefined && last.duration === duration ? last : lists.get(duration)
    if (list === undefined) {
      list = { duration, head: undefined, tail: undefined }
      lists.set(duration, list)
    }
    last = list
    node.deadline = now + duration
    node.prev = list.tail
    node.next = undefined
    node.list = list
    if (list.tail === undefined) list.head = node
    else list.tail.next = node
    list.tail = node
  }

  const remove = (node: N) => {
    const list = node.list
    if (list === undefined) return
    if (node.prev === undefined) list.head = node.next
    else node.prev.next = node.next
    if (node.next === undefined) list.tail = node.prev
    else node.next.prev = node.prev
    node.prev = undefined
    node.next = undefined
    node.list = undefined
  }

  const earliest = (): number | undefined => {
    let min: number | undefined
    for (const list of lists.values()) {
      if (list.head !== undefined && (min === undefined || list.head.deadline < min)) min = list.head.deadline
    }
    return min
  }

  const expire = (now: number, f: (node: N) => void) => {
    for (const [duration, list] of lists) {
      while (list.head !== undefined && list.head.deadline <= now) {
        const node = list.head
        remove(node)
        f(node)
      }
      if (list.head === undefined) {
        lists.delete(duration)
        if (last === list) last = undefined
      }
    }
  }

  const clear = () => {
    for (const list of lists.values()) {
      while (list.head !== undefined) remove(list.head)
    }
    lists.clear()
    last = undefined
  }

  return { add, remove, earliest, expire, clear }
}
