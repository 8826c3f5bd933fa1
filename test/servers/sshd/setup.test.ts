/**
 * How the SSH suite gets its sshd (harness.ts `plan`, `probe`, `setupSshd`): root on Debian
 * installs what is missing, anything else fails with the command that installs it — never a skip.
 * The probe is the real setup.sh, run with stub PATHs (a machine without the packages, one with them).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { FastCheck } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { installCommand, plan, probe, setupSshd } from "./harness.js"

const PACKAGES = ["openssh-server", "sudo", "openssh-client"] as const

const made: Array<string> = []
afterAll(() => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true })
})

/** A directory of executables that exit 0, named `names`. */
const stubBin = (names: ReadonlyArray<string>) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "skald-stub-bin-"))
  made.push(dir)
  for (const name of names) fs.writeFileSync(path.join(dir, name), "#!/bin/sh\nexit 0\n", { mode: 0o755 })
  return dir
}

/** A machine with none of the packages and no apt-get. */
const bareEnv = () => ({ PATH: stubBin([]), SKALD_SSHD_BIN: path.join(os.tmpdir(), "no-such-sshd") })

describe("sshd setup plan", () => {
  it("not root, packages missing: fails with the command that installs them", () => {
    const decided = plan(1000, { missing: ["openssh-server", "sudo"], aptGet: true })
    assert.strictEqual(decided._tag, "Fail")
    if (decided._tag !== "Fail") return
    assert.include(decided.message, "need root")
    assert.include(decided.message, `run ${installCommand}`)
    assert.include(decided.message, "apt-get install -y --no-install-recommends openssh-server sudo")
  })

  it("not root, everything installed: fails, asking for root", () => {
    const decided = plan(1000, { missing: [], aptGet: true })
    assert.deepStrictEqual(decided._tag, "Fail")
    if (decided._tag === "Fail") assert.include(decided.message, "Run the tests as root")
  })

  it("root without apt-get: fails, naming the packages", () => {
    const decided = plan(0, { missing: ["sudo"], aptGet: false })
    assert.strictEqual(decided._tag, "Fail")
    if (decided._tag === "Fail") assert.include(decided.message, "no apt-get to install it")
  })

  it.prop(
    "root with apt-get installs exactly what is missing; every failure names every missing package",
    [FastCheck.integer({ min: 0, max: 70000 }), FastCheck.subarray([...PACKAGES]), FastCheck.boolean()],
    ([uid, missing, aptGet]) => {
      const decided = plan(uid, { missing, aptGet })
      if (uid === 0 && missing.length === 0) return decided._tag === "Ready"
      if (uid === 0 && aptGet) return decided._tag === "Install" && decided.packages.join() === missing.join()
      return decided._tag === "Fail" && missing.every((p) => decided.message.includes(p))
    }
  )
})

describe("sshd setup probe (setup.sh --probe)", () => {
  it("a machine without the packages or apt-get", () => {
    assert.deepStrictEqual(probe(bareEnv()), { missing: [...PACKAGES], aptGet: false })
  })

  it("a machine with all of them and apt-get", () => {
    const bin = stubBin(["sudo", "ssh-keygen", "ssh-keyscan", "apt-get", "sshd"])
    assert.deepStrictEqual(probe({ PATH: bin, SKALD_SSHD_BIN: path.join(bin, "sshd") }), { missing: [], aptGet: true })
  })

  it("not root on a bare machine: setupSshd throws the install command and installs nothing", () => {
    assert.throws(
      () => setupSshd({ uid: 1000, env: bareEnv() }),
      `run ${installCommand} (apt-get update, then apt-get install`
    )
  })

  it("root on a machine without apt-get: setupSshd throws, naming the packages", () => {
    assert.throws(() => setupSshd({ uid: 0, env: bareEnv() }), "install openssh-server sudo openssh-client with")
  })
})
