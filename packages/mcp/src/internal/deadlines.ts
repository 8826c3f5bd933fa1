/**
 * Request deadlines of one connection, in O(1) per request: one FIFO list per distinct timeout
 * (deadlines in a list are added in time order, so each list is sorted), the earliest deadline is
 * the least of the list heads, and a finished request unlinks its node. Plain code: it runs on
 * every request. The timer fiber that sleeps until `earliest()` lives in the engine.
 */

export interface Node<A> {
  readonly deadline: number
  readonly value: A
  prev: Node<A> | undefined
  next: Node<A> | undefined
  list: List<A> | undefined
}

interface List<A> {
  readonly duration: number
  head: Node<A> | undefined
  tail: Node<A> | undefined
}

export interface Deadlines<A> {
  /** Registers `value` to expire `durationMillis` after `now`. */
  readonly add: (now: number, durationMillis: number, value: A) => Node<A>
  /** Unlinks a node (a finished request); idempotent. */
  readonly remove: (node: Node<A>) => void
  /** The earliest registered deadline, if any. */
  readonly earliest: () => number | undefined
  /** Unlinks every node whose deadline is at or before `now`, oldest first, and calls `f` on it. */
  readonly expire: (now: number, f: (value: A) => void) => void
  /** Unlinks everything. */
  readonly clear: () => void
}

export const make = <A>(): Deadlines<A> => {
  const lists = new Map<number, List<A>>()

  const add = (now: number, duration: number, value: A): Node<A> => {
    let list = lists.get(duration)
    if (list === undefined) {
      list = { duration, head: undefined, tail: undefined }
      lists.set(duration, list)
    }
    const node: Node<A> = { deadline: now + duration, value, prev: list.tail, next: undefined, list }
    if (list.tail === undefined) list.head = node
    else list.tail.next = node
    list.tail = node
    return node
  }

  const remove = (node: Node<A>) => {
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

  const expire = (now: number, f: (value: A) => void) => {
    for (const [duration, list] of lists) {
      while (list.head !== undefined && list.head.deadline <= now) {
        const node = list.head
        remove(node)
        f(node.value)
      }
      if (list.head === undefined) lists.delete(duration)
    }
  }

  const clear = () => {
    for (const list of lists.values()) {
      while (list.head !== undefined) remove(list.head)
    }
    lists.clear()
  }

  return { add, remove, earliest, expire, clear }
}
