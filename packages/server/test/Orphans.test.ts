/**
 * The rule that recognises a previous host's leftover process group (host/Orphans.ts): parsing
 * `/proc/<pid>/stat` whatever the command name holds, and which processes count as the group's.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Orphans from "@skald/server/host/Orphans"
import { FastCheck as fc } from "effect"
import { execFileSync } from "node:child_process"

/** A stat line with these fields (the others zero). */
const statLine = (pid: number, comm: string, state: string, pgid: number, startTime: number): string => {
  const fields = Array.from({ length: 50 }, () => "0")
  fields[0] = state // field 3
  fields[2] = String(pgid) // field 5
  fields[19] = String(startTime) // field 22
  return `${pid} (${comm}) ${fields.join(" ")}\n`
}

describe("Orphans", () => {
  it.prop("parseStat reads the fields after the last ')', whatever the command name holds", [
    fc.integer({ min: 1, max: 4_000_000 }),
    fc.string({ maxLength: 15 }),
    fc.constantFrom("R", "S", "Z", "D"),
    fc.integer({ min: 1, max: 4_000_000 }),
    fc.integer({ min: 0, max: 2 ** 40 })
  ], ([pid, comm, state, pgid, startTime]) => {
    assert.deepStrictEqual(Orphans.parseStat(pid, statLine(pid, `${comm}) (x) ${comm}`, state, pgid, startTime)), {
      pid,
      state,
      pgid,
      startTime
    })
  })

  it("stat of this process agrees with ps", () => {
    const own = Orphans.stat(process.pid)!
    const ps = execFileSync("ps", ["-o", "pgid=", "-p", String(process.pid)], { encoding: "utf8" }).trim()
    assert.strictEqual(own.pgid, Number(ps))
    assert.isAbove(own.startTime, 0)
  })

  const p = (pid: number, pgid: number, startTime: number, state = "S"): Orphans.ProcessStat => ({
    pid,
    pgid,
    startTime,
    state
  })
  const candidate = { name: "s", pgid: 100, startTime: 5000 }

  it("the leader with the recorded start time: the whole group, zombies left out", () => {
    const procs = [p(100, 100, 5000), p(101, 100, 5001), p(102, 100, 5002, "Z"), p(200, 200, 10)]
    assert.deepStrictEqual(Orphans.members(candidate, procs), [100, 101])
  })

  it("a process with the leader's pid and another start time: the pid was reused, nothing is ours", () => {
    const procs = [p(100, 100, 9000), p(101, 100, 9001)]
    assert.deepStrictEqual(Orphans.members(candidate, procs), [])
    assert.deepStrictEqual(Orphans.members(candidate, [p(100, 77, 9000), p(101, 100, 9001)]), [])
  })

  it("an exited leader: the members of its group that started after it", () => {
    const procs = [p(101, 100, 5001), p(103, 100, 6000), p(104, 100, 4000), p(105, 101, 5003)]
    assert.deepStrictEqual(Orphans.members(candidate, procs), [101, 103])
  })

  it("a zombie leader with the recorded start time still identifies its group", () => {
    assert.deepStrictEqual(Orphans.members(candidate, [p(100, 100, 5000, "Z"), p(101, 100, 5001)]), [101])
  })
})
