/**
 * The SSH MCP server (scripts/ssh-server.ts) against a real OpenSSH sshd on 127.0.0.1, through
 * our own client engine with a scripted elicitation handler.
 *
 * setup.sh (beforeAll) creates the users, keys, sudoers drop-in and an sshd on a free port;
 * teardown.sh (afterAll) ends it by PID. Run as root on Debian, beforeAll first installs
 * openssh-server and sudo when missing (.ci/setup-sshd.sh, what .ci/run runs); otherwise, without
 * them or without root, setup fails with the command to run, and so does every test here — in CI
 * and out of it: nothing is skipped (the decision is tested in sshd/setup.test.ts). Connection counts are read from
 * sshd's own log and from `$SSH_CONNECTION` on the remote side (its client port names the TCP
 * connection), never from timings.
 */
import { afterAll, assert, beforeAll, describe, it, layer } from "@effect/vitest"
import { McpClient } from "@skald/mcp"
import { Context, Effect, Exit, Layer, Schedule } from "effect"
import { execFileSync, spawnSync } from "node:child_process"
import { createHash, generateKeyPairSync } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { eventually, tempDir } from "../support.js"
import {
  acceptedPorts,
  call,
  clientPort,
  disconnectedPorts,
  launch,
  logMark,
  repoRoot,
  secretHandler,
  seen,
  seenTags,
  serverScript,
  setupSshd,
  teardownSshd
} from "./sshd/harness.js"
import type { Launched, SshdState } from "./sshd/harness.js"

// A failing beforeAll would make vitest report every test here as *skipped*. So the setup error
// is kept, and any test that touches the sshd's state throws it: without sshd they all FAIL.
let state: SshdState | undefined
let setupError: unknown = new Error("the sshd setup did not run")
const sshd: SshdState = new Proxy({} as SshdState, {
  get: (_target, key) => {
    if (state === undefined) throw setupError
    return state[key as keyof SshdState]
  }
})

beforeAll(() => {
  try {
    state = setupSshd()
  } catch (error) {
    setupError = error
  }
}, 480_000) // a bound for apt-get update + install (about 40 s here) and setup.sh, not an expectation

afterAll(() => {
  teardownSshd()
}, 60_000)

const TOOLS = [
  "add_alias",
  "download",
  "edit_file",
  "exec",
  "grep_files",
  "list_aliases",
  "list_files",
  "read_file",
  "remove_alias",
  "replace_lines",
  "sysinfo",
  "systemd",
  "upload"
]

const pwUser = () => sshd.passwordUser
const nopwUser = () => sshd.nopasswdUser

/** add_alias arguments for the test sshd. */
const aliasArgs = (name: string, extra: Record<string, unknown>) => ({
  name,
  host: sshd.host,
  port: sshd.port,
  user: pwUser().name,
  ...extra
})

const addAlias = (client: McpClient.Service, name: string, extra: Record<string, unknown>) =>
  Effect.gen(function*() {
    const added = yield* call(client, "add_alias", aliasArgs(name, extra))
    assert.isFalse(added.isError, added.text)
  })

/** Runs a command and returns the structured exec result (asserting it is not an error). */
const exec = (client: McpClient.Service, alias: string, command: string, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const result = yield* call(client, "exec", { alias, command, ...extra })
    assert.isFalse(result.isError, result.text)
    const s = result.structured
    if (s === undefined) return assert.fail(`exec gave no structured content: ${result.text}`)
    return s as {
      exit_code: number | null
      stdout: string
      stderr: string
      stdout_omitted_bytes: number
      timed_out: boolean
    }
  })

const failure = (client: McpClient.Service, name: string, args: Record<string, unknown>) =>
  Effect.gen(function*() {
    const result = yield* call(client, name, args)
    assert.isTrue(result.isError, `expected ${name} to fail, got: ${result.text}`)
    return result.text
  })

const hostKeyBlob = () => fs.readFileSync(sshd.hostPublicKey, "utf8").trim().split(/\s+/)[1]!

/** A fresh ed25519 public key in known_hosts form (a key the sshd does not have). */
const otherKey = () => {
  const { publicKey } = generateKeyPairSync("ed25519")
  const raw = publicKey.export({ format: "der", type: "spki" }).subarray(-32)
  const type = Buffer.from("ssh-ed25519")
  const blob = Buffer.alloc(4 + type.length + 4 + raw.length)
  blob.writeUInt32BE(type.length, 0)
  type.copy(blob, 4)
  blob.writeUInt32BE(raw.length, 4 + type.length)
  raw.copy(blob, 8 + type.length)
  return `ssh-ed25519 ${blob.toString("base64")}`
}

const sha256 = (data: Buffer | string) => createHash("sha256").update(data).digest("hex")

// --- the binary --------------------------------------------------------------------------------

describe("ssh-server binary", () => {
  it("--help prints usage and the settings on stdout and exits 0", () => {
    const out = spawnSync(process.execPath, ["--import", "tsx", serverScript, "--help"], {
      cwd: repoRoot,
      encoding: "utf8"
    })
    assert.strictEqual(out.status, 0, out.stderr)
    assert.include(out.stdout, "Usage: node --import tsx scripts/ssh-server.ts")
    for (
      const v of [
        "SSH_MCP_KNOWN_HOSTS",
        "SSH_MCP_POOL_TTL",
        "SSH_MCP_LOGIN_PW_TTL",
        "SSH_MCP_SUDO_PW_TTL",
        "SSH_MCP_KEY_PASSPHRASE"
      ]
    ) {
      assert.include(out.stdout, v)
    }
  })

  it("a bad setting stops it with a message naming the variable (exit 2)", () => {
    const out = spawnSync(process.execPath, ["--import", "tsx", serverScript], {
      cwd: repoRoot,
      encoding: "utf8",
      env: { ...process.env, SSH_MCP_POOL_TTL: "soon" },
      input: ""
    })
    assert.strictEqual(out.status, 2)
    assert.include(out.stderr, "SSH_MCP_POOL_TTL")
  })
})

// --- one shared server: key login, aliases, exec, sudo, files, transfers ------------------------

const main = secretHandler(false)
// The layer holds the launch's Exit: were the layer itself to fail, vitest would skip (not fail)
// the tests that use it. `yield* Main` gives the server, or fails the test with the reason.
class MainExit extends Context.Tag("test/ssh/Main")<MainExit, Exit.Exit<Launched, unknown>>() {}
const Main = Effect.flatMap(MainExit, (exit) => exit)
const MainLayer = Layer.scoped(
  MainExit,
  Effect.suspend(() => launch(sshd, { handler: main.handler, env: { SSH_MCP_MAX_OUTPUT: "4096" } })).pipe(Effect.exit)
)

layer(MainLayer, { excludeTestServices: true, timeout: 60_000 })("ssh server (key alias, shared)", (it) => {
  it.effect("offers the 13 tools of the seed", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      const tools = yield* client.tools
      assert.deepStrictEqual(tools.map((t) => t.name).sort(), TOOLS)
    }))

  it.effect("add_alias writes the aliases file atomically at 0600 (dir 0700) with connection facts only", () =>
    Effect.gen(function*() {
      const { aliasesFile, client } = yield* Main
      main.reset(() => "decline")
      yield* addAlias(client, "k", { key_path: pwUser().key })
      yield* addAlias(client, "pw", { auth: "password" })
      assert.strictEqual(fs.statSync(aliasesFile).mode & 0o777, 0o600)
      assert.strictEqual(fs.statSync(path.dirname(aliasesFile)).mode & 0o777, 0o700)
      const file = JSON.parse(fs.readFileSync(aliasesFile, "utf8"))
      assert.deepStrictEqual(file, {
        version: 1,
        aliases: {
          k: {
            host: sshd.host,
            port: sshd.port,
            user: pwUser().name,
            auth: "key",
            key_path: pwUser().key,
            sudo: { method: "prompt" },
            accept_new_host_key: false
          },
          pw: {
            host: sshd.host,
            port: sshd.port,
            user: pwUser().name,
            auth: "password",
            sudo: { method: "prompt" },
            accept_new_host_key: false
          }
        }
      })
      // No temporary files left beside it.
      assert.deepStrictEqual(fs.readdirSync(path.dirname(aliasesFile)), ["ssh_aliases.json"])
      assert.deepStrictEqual(main.asked, [], "adding an alias asks nothing")
    }))

  it.effect("add_alias refuses a password argument (and never writes one)", () =>
    Effect.gen(function*() {
      const { aliasesFile, client } = yield* Main
      const before = fs.readFileSync(aliasesFile, "utf8")
      const text = yield* failure(client, "add_alias", {
        ...aliasArgs("leak", { auth: "password" }),
        password: "Hunter2-Leak"
      })
      assert.include(text, "password")
      assert.notInclude(text, "Hunter2-Leak")
      assert.strictEqual(fs.readFileSync(aliasesFile, "utf8"), before)
    }))

  it.effect("list_aliases and remove_alias", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* addAlias(client, "gone", { key_path: pwUser().key })
      const listed = yield* call(client, "list_aliases")
      assert.include(listed.text, `gone  ${pwUser().name}@${sshd.host}:${sshd.port}  auth=key`)
      assert.include(listed.text, "pw  ")
      const removed = yield* call(client, "remove_alias", { name: "gone" })
      assert.isFalse(removed.isError, removed.text)
      assert.notInclude((yield* call(client, "list_aliases")).text, "gone")
      assert.include(yield* failure(client, "remove_alias", { name: "gone" }), "no alias named")
      assert.include(yield* failure(client, "exec", { alias: "nope", command: "true" }), "no alias named \"nope\"")
    }))

  it.effect("key login: exec returns exit code, stdout and stderr", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      const ok = yield* exec(client, "k", "id -un; echo to-stderr >&2")
      assert.strictEqual(ok.exit_code, 0)
      assert.strictEqual(ok.stdout, `${pwUser().name}\n`)
      assert.strictEqual(ok.stderr, "to-stderr\n")
      const failed = yield* exec(client, "k", "echo partial; exit 7")
      assert.strictEqual(failed.exit_code, 7)
      assert.strictEqual(failed.stdout, "partial\n")
      const result = yield* call(client, "exec", { alias: "k", command: "printf hi" })
      assert.strictEqual(result.text, "exit code 0\n--- stdout ---\nhi\n--- stderr ---\n(empty)")
    }))

  it.effect("the pool reuses one SSH connection per alias (same client port, one login in sshd's log)", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* addAlias(client, "k-pool", { key_path: pwUser().key })
      const mark = logMark(sshd)
      const first = clientPort((yield* exec(client, "k-pool", "echo $SSH_CONNECTION")).stdout)
      const second = clientPort((yield* exec(client, "k-pool", "echo $SSH_CONNECTION")).stdout)
      const third = clientPort((yield* exec(client, "k-pool", "echo $SSH_CONNECTION")).stdout)
      assert.strictEqual(second, first)
      assert.strictEqual(third, first)
      assert.deepStrictEqual(acceptedPorts(sshd, pwUser().name, mark), [first], "one login in sshd's log")
      const listed = yield* call(client, "list_aliases")
      assert.match(listed.text, /^k-pool .* connected \(#\d+, idle \d+ s\)$/m)
    }))

  it.effect("output is capped per stream: the middle is omitted and counted", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      const big = yield* exec(client, "k", "head -c 100000 /dev/zero | tr '\\0' a; printf END")
      assert.strictEqual(big.stdout_omitted_bytes, 100003 - 4096)
      assert.isTrue(big.stdout.startsWith("aaaa"))
      assert.isTrue(big.stdout.endsWith("aaaEND"))
      assert.include(big.stdout, `[${100003 - 4096} bytes omitted]`)
    }))

  it.effect("a command past its timeout is killed and reported as an error", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      const result = yield* call(client, "exec", { alias: "k", command: "echo started; sleep 30", timeout: 1 })
      assert.isTrue(result.isError)
      assert.include(result.text, "timed out after 1 s")
      assert.strictEqual(result.structured?.timed_out, true)
      assert.strictEqual(result.structured?.stdout, "started\n")
    }))

  it.effect("a call cancelled by the client (its timeout) kills the remote command", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      const marker = `sleep 4${Math.floor(Math.random() * 90 + 10)}`
      const outcome = yield* client.callTool("exec", { alias: "k", command: `exec ${marker}` }, {
        timeout: "1500 millis"
      }).pipe(Effect.either)
      assert.isTrue(outcome._tag === "Left" && outcome.left._tag === "McpTimeout", "the client gave up")
      const running = () =>
        exec(client, "k", `ps -u ${pwUser().name} -o args= | grep -cx '${marker}' || true`).pipe(
          Effect.map((r) => r.stdout.trim())
        )
      yield* Effect.gen(function*() {
        const count = yield* running()
        if (count !== "0") return yield* Effect.fail(`still running: ${count}`)
      }).pipe(Effect.retry({ times: 50, schedule: Schedule.spaced("100 millis") }), Effect.orDie)
    }))

  it.effect("concurrent calls on a new password alias share one question and one connection", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* addAlias(client, "pw-par", { auth: "password" })
      main.reset(() => ({ value: pwUser().password }))
      const mark = logMark(sshd)
      const ports = yield* Effect.all(
        Array.from(
          { length: 4 },
          () => exec(client, "pw-par", "echo $SSH_CONNECTION").pipe(Effect.map((r) => clientPort(r.stdout)))
        ),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(new Set(ports).size, 1, `one connection, got ports ${ports.join(", ")}`)
      assert.strictEqual(main.asked.length, 1)
      assert.deepStrictEqual(acceptedPorts(sshd, pwUser().name, mark), [ports[0]])
    }))

  it.effect("password login through elicitation: asked once (masked field), then cached", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      main.reset(() => ({ value: pwUser().password }))
      const first = yield* exec(client, "pw", "id -un")
      assert.strictEqual(first.stdout, `${pwUser().name}\n`)
      assert.strictEqual(main.asked.length, 1)
      const request = main.asked[0]!.request
      if (request._tag !== "Form") return assert.fail("expected a form (the client declared no URL mode)")
      assert.deepStrictEqual(request.fields.map((f) => [f.name, f.masked, f.required]), [["password", true, true]])
      assert.include(request.message, `${pwUser().name}@${sshd.host}:${sshd.port}`)
      yield* exec(client, "pw", "true")
      assert.strictEqual(main.asked.length, 1, "the second call neither reconnects nor asks")
    }))

  it.effect("a wrong login password: a clear error, the cache is dropped, the next call asks again", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* addAlias(client, "pw2", { auth: "password" })
      main.reset(() => ({ value: "Not-The-Password-1" }))
      const text = yield* failure(client, "exec", { alias: "pw2", command: "true" })
      assert.include(text, "authentication failed")
      assert.include(text, "the next call asks again")
      assert.strictEqual(main.asked.length, 1)
      main.reset(() => ({ value: pwUser().password }))
      const ok = yield* exec(client, "pw2", "echo fine")
      assert.strictEqual(ok.stdout, "fine\n")
      assert.strictEqual(main.asked.length, 1, "asked again after the failure")
    }))

  it.effect("a declined question is a clear error and nothing is cached", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* addAlias(client, "pw3", { auth: "password" })
      main.reset(() => "decline")
      assert.include(
        yield* failure(client, "exec", { alias: "pw3", command: "true" }),
        "no login password for pw3: the user chose decline"
      )
      main.reset(() => ({ value: pwUser().password }))
      yield* exec(client, "pw3", "true")
      assert.strictEqual(main.asked.length, 1)
    }))

  it.effect("sudo -S: the sudo password is asked for when sudo wants it, fed on stdin, then cached", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      main.reset((a) => (a.kind === "sudo" ? { value: pwUser().password } : "decline"))
      const root = yield* exec(client, "k", "id -u; echo done >&2", { sudo: true })
      assert.strictEqual(root.exit_code, 0)
      assert.strictEqual(root.stdout, "0\n")
      assert.strictEqual(root.stderr, "done\n", "no prompt, no marker in the output")
      assert.deepStrictEqual(main.asked.map((a) => a.kind), ["sudo"])
      const request = main.asked[0]!.request
      if (request._tag !== "Form") return assert.fail("expected a form")
      assert.isTrue(request.fields[0]!.masked)
      const asOther = yield* exec(client, "k", "id -un", { sudo_user: nopwUser().name })
      assert.strictEqual(asOther.stdout, `${nopwUser().name}\n`)
      const status = yield* exec(client, "k", "exit 3", { sudo: true })
      assert.strictEqual(status.exit_code, 3)
      assert.strictEqual(main.asked.length, 1, "cached for the later calls")
    }))

  it.effect("a wrong sudo password: a clear error, the cache is dropped, the next call asks again", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* addAlias(client, "k2", { key_path: pwUser().key })
      main.reset(() => ({ value: "Wrong-Sudo-Pass-9" }))
      const text = yield* failure(client, "exec", { alias: "k2", command: "id -u", sudo: true })
      assert.include(text, "sudo rejected the password")
      assert.include(text, "the next call asks again")
      main.reset(() => ({ value: pwUser().password }))
      assert.strictEqual((yield* exec(client, "k2", "id -u", { sudo: true })).stdout, "0\n")
      assert.strictEqual(main.asked.length, 1)
    }))

  it.effect("sudo -n (nopasswd): fails fast with a clear message when a password is needed; works with NOPASSWD", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      main.reset(() => ({ value: "never-asked" }))
      yield* addAlias(client, "n-strict", { key_path: pwUser().key, sudo_method: "nopasswd" })
      const text = yield* failure(client, "exec", { alias: "n-strict", command: "id -u", sudo: true })
      assert.include(text, "sudo -n")
      assert.include(text, "wants a password")
      assert.include(text, "sudo_method=prompt")
      yield* addAlias(client, "nopw", { user: nopwUser().name, key_path: nopwUser().key, sudo_method: "nopasswd" })
      assert.strictEqual((yield* exec(client, "nopw", "id -u", { sudo: true })).stdout, "0\n")
      assert.deepStrictEqual(main.asked, [], "nopasswd never asks")
    }))

  it.effect("sudo -S for a NOPASSWD user: nothing is asked and the command's stdin never sees a password", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      main.reset(() => ({ value: "Must-Not-Reach-Stdin" }))
      yield* addAlias(client, "nopw-prompt", { user: nopwUser().name, key_path: nopwUser().key, sudo_method: "prompt" })
      const out = yield* exec(client, "nopw-prompt", "cat; id -u", { sudo: true })
      assert.strictEqual(out.stdout, "0\n")
      assert.deepStrictEqual(main.asked, [])
    }))

  it.effect("sudo method none refuses sudo", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* addAlias(client, "nosudo", { key_path: pwUser().key, sudo_method: "none" })
      assert.include(yield* failure(client, "exec", { alias: "nosudo", command: "id", sudo: true }), "sudo is disabled")
    }))

  it.effect("read_file: numbered lines with offset/limit and a hint to read on; errors name the path", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* exec(
        client,
        "k",
        "rm -rf t && mkdir -p t && seq 1 10 | sed 's/^/line /' > t/ten.txt && printf 'a\\r\\nb\\r\\n' > t/crlf.txt && : > t/empty.txt"
      )
      const all = yield* call(client, "read_file", { alias: "k", path: "t/ten.txt" })
      assert.strictEqual(all.text.split("\n")[0], "     1\tline 1")
      assert.strictEqual(all.text.split("\n").length, 10)
      const part = yield* call(client, "read_file", { alias: "k", path: "~/t/ten.txt", offset: 4, limit: 3 })
      assert.strictEqual(
        part.text,
        "     4\tline 4\n     5\tline 5\n     6\tline 6\n… (4 more lines: 7–10 of 10; read on with offset=7)"
      )
      assert.strictEqual(
        (yield* call(client, "read_file", { alias: "k", path: "t/crlf.txt" })).text,
        "     1\ta\n     2\tb"
      )
      assert.strictEqual((yield* call(client, "read_file", { alias: "k", path: "t/empty.txt" })).text, "(empty file)")
      assert.include(
        (yield* call(client, "read_file", { alias: "k", path: "t/ten.txt", offset: 20 })).text,
        "past the end"
      )
      assert.include(
        yield* failure(client, "read_file", { alias: "k", path: "t/missing.txt" }),
        "t/missing.txt: no such file or directory"
      )
      assert.include(
        yield* failure(client, "read_file", { alias: "k", path: "/etc/shadow" }),
        "/etc/shadow: permission denied"
      )
      assert.include(yield* failure(client, "read_file", { alias: "k", path: "t" }), "is a directory")
    }))

  it.effect("list_files: real path, then entries (dirs with '/', sizes, symlinks), recursive", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* exec(
        client,
        "k",
        "rm -rf l && mkdir -p l/sub/deeper && printf abc > l/a.txt && printf 12345 > l/sub/b.txt && ln -s a.txt l/link"
      )
      const flat = yield* call(client, "list_files", { alias: "k", path: "l" })
      assert.strictEqual(flat.text, `${pwUser().home}/l/\na.txt  (3 bytes)\nlink -> a.txt\nsub/`)
      const deep = yield* call(client, "list_files", { alias: "k", path: "l", recursive: true })
      assert.strictEqual(
        deep.text,
        `${pwUser().home}/l/\na.txt  (3 bytes)\nlink -> a.txt\nsub/\nsub/b.txt  (5 bytes)\nsub/deeper/`
      )
      const capped = yield* call(client, "list_files", { alias: "k", path: "l", recursive: true, max_entries: 2 })
      assert.include(capped.text, "stopped after 2 entries")
      assert.include(yield* failure(client, "list_files", { alias: "k", path: "nowhere" }), "no such file or directory")
    }))

  it.effect("grep_files: path:line: text, glob and case options, binary files skipped", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* exec(
        client,
        "k",
        "rm -rf g && mkdir -p g/conf && printf 'alpha\\nBeta\\nalphabet\\n' > g/one.txt && printf 'gamma alpha\\n' > g/conf/app.conf && printf 'alpha\\0bin' > g/blob.bin"
      )
      const all = yield* call(client, "grep_files", { alias: "k", pattern: "alpha", path: "g" })
      assert.strictEqual(
        all.text,
        "conf/app.conf:1: gamma alpha\none.txt:1: alpha\none.txt:3: alphabet\n(skipped 1 binary, unreadable or oversized files)"
      )
      const glob = yield* call(client, "grep_files", { alias: "k", pattern: "^alpha", path: "g", glob: "*.txt" })
      assert.strictEqual(glob.text, "one.txt:1: alpha\none.txt:3: alphabet")
      const ci = yield* call(client, "grep_files", {
        alias: "k",
        pattern: "beta",
        path: "g/one.txt",
        ignore_case: true
      })
      assert.strictEqual(ci.text, "g/one.txt:2: Beta")
      assert.include(
        (yield* call(client, "grep_files", { alias: "k", pattern: "zzz", path: "g" })).text,
        "No matches for /zzz/"
      )
      assert.include(yield* failure(client, "grep_files", { alias: "k", pattern: "(", path: "g" }), "invalid pattern")
    }))

  it.effect("edit_file: unique match, ambiguity refused, replace_all, creation; the file mode is kept", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* exec(
        client,
        "k",
        "rm -rf e && mkdir e && printf 'port=80\\nhost=a\\nport=80\\n' > e/app.conf && chmod 640 e/app.conf"
      )
      const ambiguous = yield* failure(client, "edit_file", {
        alias: "k",
        path: "e/app.conf",
        old_string: "port=80",
        new_string: "port=8080"
      })
      assert.include(ambiguous, "occurs 2 times")
      assert.include(ambiguous, "lines 1, 3")
      const one = yield* call(client, "edit_file", {
        alias: "k",
        path: "e/app.conf",
        old_string: "host=a",
        new_string: "host=b"
      })
      assert.strictEqual(one.text, "Edited e/app.conf: replaced 1 occurrence (line 2)")
      const many = yield* call(client, "edit_file", {
        alias: "k",
        path: "e/app.conf",
        old_string: "port=80",
        new_string: "port=8080",
        replace_all: true
      })
      assert.strictEqual(many.text, "Edited e/app.conf: replaced 2 occurrences (lines 1, 3)")
      const after = yield* exec(client, "k", "cat e/app.conf; stat -c %a e/app.conf; ls -a e")
      assert.strictEqual(after.stdout, "port=8080\nhost=b\nport=8080\n640\n.\n..\napp.conf\n")
      assert.include(
        yield* failure(client, "edit_file", { alias: "k", path: "e/app.conf", old_string: "nope", new_string: "x" }),
        "was not found"
      )
      const created = yield* call(client, "edit_file", {
        alias: "k",
        path: "e/new/dir/file.txt",
        old_string: "",
        new_string: "hello\nworld\n"
      })
      assert.strictEqual(created.text, "Created e/new/dir/file.txt (2 lines)")
      assert.strictEqual((yield* exec(client, "k", "cat e/new/dir/file.txt")).stdout, "hello\nworld\n")
      assert.include(
        yield* failure(client, "edit_file", { alias: "k", path: "e/app.conf", old_string: "", new_string: "x" }),
        "already exists"
      )
    }))

  it.effect("replace_lines: replace, insert, delete — answered with numbered context", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      yield* exec(client, "k", "rm -rf r && mkdir r && seq 1 6 > r/n.txt")
      const replaced = yield* call(client, "replace_lines", {
        alias: "k",
        path: "r/n.txt",
        start_line: 2,
        end_line: 3,
        new_content: "two\nthree\nthree-and-a-half\n"
      })
      assert.strictEqual(
        replaced.text,
        "Replaced lines 2–3 (2 lines) with 3 lines in r/n.txt; it now has 7 lines.\n     1\t1\n     2\ttwo\n     3\tthree\n     4\tthree-and-a-half\n     5\t4\n     6\t5"
      )
      const inserted = yield* call(client, "replace_lines", {
        alias: "k",
        path: "r/n.txt",
        start_line: 1,
        end_line: 0,
        new_content: "zero"
      })
      assert.isTrue(inserted.text.startsWith("Inserted 1 line before line 1 in r/n.txt; it now has 8 lines."))
      const deleted = yield* call(client, "replace_lines", {
        alias: "k",
        path: "r/n.txt",
        start_line: 8,
        end_line: 8,
        new_content: ""
      })
      assert.isTrue(deleted.text.startsWith("Replaced lines 8–8 (1 line) with 0 lines in r/n.txt; it now has 7 lines."))
      assert.strictEqual(
        (yield* exec(client, "k", "cat r/n.txt")).stdout,
        "zero\n1\ntwo\nthree\nthree-and-a-half\n4\n5\n"
      )
      assert.include(
        yield* failure(client, "replace_lines", {
          alias: "k",
          path: "r/n.txt",
          start_line: 20,
          end_line: 20,
          new_content: "x"
        }),
        "out of range"
      )
    }))

  it.effect("upload: into a dir (trailing '/' or existing), to an exact path, recursive, parents created, modes kept", () =>
    Effect.gen(function*() {
      const { client, dir } = yield* Main
      const local = path.join(dir, "local")
      fs.mkdirSync(path.join(local, "src", "sub"), { recursive: true })
      fs.writeFileSync(path.join(local, "src", "a.txt"), "A-content\n")
      fs.writeFileSync(path.join(local, "src", "run.sh"), "#!/bin/sh\necho run\n", { mode: 0o755 })
      fs.writeFileSync(path.join(local, "src", "sub", "b.bin"), Buffer.from([0, 1, 2, 255]))
      fs.symlinkSync("a.txt", path.join(local, "src", "alink"))
      yield* exec(client, "k", "rm -rf up && mkdir -p up/existing")
      const file = path.join(local, "src", "a.txt")

      const slash = yield* call(client, "upload", { alias: "k", local_path: file, remote_path: "up/new-dir/" })
      assert.include(slash.text, `→ up/new-dir/a.txt: 1 file (10 bytes)`)
      const existing = yield* call(client, "upload", { alias: "k", local_path: file, remote_path: "up/existing" })
      assert.include(existing.text, "→ up/existing/a.txt")
      const exact = yield* call(client, "upload", {
        alias: "k",
        local_path: file,
        remote_path: "up/deep/er/renamed.txt"
      })
      assert.include(exact.text, "→ up/deep/er/renamed.txt")
      const tree = yield* call(client, "upload", {
        alias: "k",
        local_path: path.join(local, "src"),
        remote_path: "up/trees/"
      })
      assert.include(tree.text, "→ up/trees/src: 3 files (33 bytes), 2 directories created")
      assert.include(tree.text, "Skipped 1 symlink(s) or special file(s): alink")
      const copy = yield* call(client, "upload", {
        alias: "k",
        local_path: path.join(local, "src"),
        remote_path: "up/copy"
      })
      assert.include(copy.text, "→ up/copy: 3 files")

      const listing = yield* exec(
        client,
        "k",
        "cd up && find . -type f | sort && stat -c %a trees/src/run.sh && sha256sum trees/src/sub/b.bin && cat deep/er/renamed.txt"
      )
      assert.strictEqual(
        listing.stdout,
        [
          "./copy/a.txt",
          "./copy/run.sh",
          "./copy/sub/b.bin",
          "./deep/er/renamed.txt",
          "./existing/a.txt",
          "./new-dir/a.txt",
          "./trees/src/a.txt",
          "./trees/src/run.sh",
          "./trees/src/sub/b.bin",
          "755",
          `${sha256(Buffer.from([0, 1, 2, 255]))}  trees/src/sub/b.bin`,
          "A-content",
          ""
        ].join("\n")
      )
      assert.include(
        yield* failure(client, "upload", { alias: "k", local_path: path.join(local, "nope"), remote_path: "up/" }),
        "no such local file"
      )
    }))

  it.effect("download: the same destination rule, recursive, parents created", () =>
    Effect.gen(function*() {
      const { client, dir } = yield* Main
      yield* exec(
        client,
        "k",
        "rm -rf down && mkdir -p down/tree/inner && printf one > down/tree/1.txt && printf two > down/tree/inner/2.txt && head -c 300000 /dev/urandom > down/big.bin && chmod 700 down/tree/1.txt"
      )
      const remoteSum = (yield* exec(client, "k", "sha256sum < down/big.bin")).stdout.split(" ")[0]
      const out = path.join(dir, "out")

      const slash = yield* call(client, "download", { alias: "k", remote_path: "down/tree", local_path: `${out}/a/` })
      assert.include(slash.text, `→ ${out}/a/tree: 2 files (6 bytes), 2 directories created`)
      assert.strictEqual(fs.readFileSync(path.join(out, "a", "tree", "inner", "2.txt"), "utf8"), "two")
      assert.strictEqual(fs.statSync(path.join(out, "a", "tree", "1.txt")).mode & 0o777, 0o700)

      const exact = yield* call(client, "download", {
        alias: "k",
        remote_path: "down/tree",
        local_path: path.join(out, "b", "renamed")
      })
      assert.include(exact.text, `→ ${out}/b/renamed: 2 files`)
      assert.strictEqual(fs.readFileSync(path.join(out, "b", "renamed", "1.txt"), "utf8"), "one")

      fs.mkdirSync(path.join(out, "c"), { recursive: true })
      yield* call(client, "download", { alias: "k", remote_path: "down/big.bin", local_path: path.join(out, "c") })
      assert.strictEqual(sha256(fs.readFileSync(path.join(out, "c", "big.bin"))), remoteSum)
      yield* call(client, "download", {
        alias: "k",
        remote_path: "~/down/big.bin",
        local_path: path.join(out, "d", "e", "copy.bin")
      })
      assert.strictEqual(sha256(fs.readFileSync(path.join(out, "d", "e", "copy.bin"))), remoteSum)
      assert.include(
        yield* failure(client, "download", { alias: "k", remote_path: "down/none", local_path: out }),
        "no such remote file"
      )
    }))

  it.effect("after all the logins above, the aliases file still holds no secret", () =>
    Effect.gen(function*() {
      const { aliasesFile } = yield* Main
      const content = fs.readFileSync(aliasesFile, "utf8")
      assert.strictEqual(fs.statSync(aliasesFile).mode & 0o777, 0o600)
      for (const secret of [pwUser().password, pwUser().keyPassphrase, "Not-The-Password-1", "Wrong-Sudo-Pass-9"]) {
        assert.notInclude(content, secret)
      }
      assert.notMatch(content, /"(password|passphrase|secret|token)"\s*:/i)
    }))

  it.effect("sysinfo reports the host; systemd says at once that the host does not run systemd", () =>
    Effect.gen(function*() {
      const { client } = yield* Main
      const info = yield* call(client, "sysinfo", { alias: "k" })
      assert.isFalse(info.isError, info.text)
      assert.match(info.text, /^hostname: \S+$/m)
      assert.match(info.text, /^kernel: Linux /m)
      assert.match(info.text, new RegExp(`^user: ${pwUser().name} \\(uid \\d+\\)$`, "m"))
      assert.match(info.text, /^memory: \d+ MiB total/m)
      assert.match(info.text, /^init: .*\(not systemd\)$/m)
      const status = yield* failure(client, "systemd", { alias: "k", action: "status", unit: "ssh.service" })
      assert.include(status, "systemd is not running on alias k")
      assert.include(status, "PID 1 is")
      assert.include(
        yield* failure(client, "systemd", { alias: "k", action: "restart", unit: "x; rm -rf /" }),
        "not a unit name"
      )
    }))
})

// --- host keys ---------------------------------------------------------------------------------

describe("host keys", () => {
  const hostName = () => `[${sshd.host}]:${sshd.port}`

  it.scopedLive("an unknown host is rejected before anything is asked; the file is left alone", () =>
    Effect.gen(function*() {
      const h = secretHandler(false)
      h.reset(() => ({ value: pwUser().password }))
      const { client, knownHostsFile } = yield* launch(sshd, { handler: h.handler, knownHosts: "" })
      yield* addAlias(client, "u", { auth: "password" })
      const text = yield* failure(client, "exec", { alias: "u", command: "true" })
      assert.include(text, `the host key of ${hostName()} is not in ${knownHostsFile}`)
      assert.include(text, "accept_new_host_key=true")
      assert.deepStrictEqual(h.asked, [], "no password is asked for a host we would reject")
      assert.strictEqual(fs.readFileSync(knownHostsFile, "utf8"), "")
    }))

  it.scopedLive("a changed host key is always rejected, even with accept_new_host_key", () =>
    Effect.gen(function*() {
      const h = secretHandler(false)
      const forged = `${hostName()} ${otherKey()}\n`
      const { client, knownHostsFile } = yield* launch(sshd, { handler: h.handler, knownHosts: forged })
      yield* addAlias(client, "c", { key_path: pwUser().key, accept_new_host_key: true })
      const text = yield* failure(client, "exec", { alias: "c", command: "true" })
      assert.include(text, "HOST KEY CHANGED")
      assert.include(text, "ssh-keygen -R")
      assert.strictEqual(fs.readFileSync(knownHostsFile, "utf8"), forged, "known_hosts is not touched")
    }))

  it.scopedLive("accept_new_host_key records the key of an unknown host (then it is known)", () =>
    Effect.gen(function*() {
      const { client, knownHostsFile } = yield* launch(sshd, { knownHosts: "# empty\n" })
      yield* addAlias(client, "new", { key_path: pwUser().key, accept_new_host_key: true })
      assert.strictEqual((yield* exec(client, "new", "echo hi")).stdout, "hi\n")
      assert.strictEqual(
        fs.readFileSync(knownHostsFile, "utf8"),
        `# empty\n${hostName()} ssh-ed25519 ${hostKeyBlob()}\n`
      )
      // With the flag off again the host is known now.
      yield* addAlias(client, "new", { key_path: pwUser().key, accept_new_host_key: false })
      assert.strictEqual((yield* exec(client, "new", "echo again")).stdout, "again\n")
    }))

  it.scopedLive("hashed known_hosts entries (ssh-keygen -H) are understood; @revoked keys are refused", () =>
    Effect.gen(function*() {
      const tmp = yield* tempDir("kh")
      const file = path.join(tmp, "known_hosts")
      fs.writeFileSync(file, `${hostName()} ssh-ed25519 ${hostKeyBlob()}\n`)
      execFileSync("ssh-keygen", ["-H", "-f", file], { stdio: "ignore" })
      const hashed = fs.readFileSync(file, "utf8")
      assert.match(hashed, /^\|1\|/)
      const { client } = yield* launch(sshd, { knownHosts: hashed })
      yield* addAlias(client, "h", { key_path: pwUser().key })
      assert.strictEqual((yield* exec(client, "h", "echo hashed")).stdout, "hashed\n")

      const revoked = yield* launch(sshd, {
        knownHosts: `${hostName()} ssh-ed25519 ${hostKeyBlob()}\n@revoked * ssh-ed25519 ${hostKeyBlob()}\n`
      })
      yield* addAlias(revoked.client, "r", { key_path: pwUser().key })
      assert.include(yield* failure(revoked.client, "exec", { alias: "r", command: "true" }), "@revoked")
    }))

  it.scopedLive("SSH_MCP_HASH_KNOWN_HOSTS=1 writes accepted keys hashed", () =>
    Effect.gen(function*() {
      const { client, knownHostsFile } = yield* launch(sshd, { knownHosts: "", env: { SSH_MCP_HASH_KNOWN_HOSTS: "1" } })
      yield* addAlias(client, "hh", { key_path: pwUser().key, accept_new_host_key: true })
      yield* exec(client, "hh", "true")
      const line = fs.readFileSync(knownHostsFile, "utf8")
      assert.match(line, new RegExp(`^\\|1\\|[^ ]+ ssh-ed25519 ${hostKeyBlob().replace(/[+/]/g, "\\$&")}\n$`))
      assert.notInclude(line, String(sshd.port))
      // OpenSSH finds it.
      const found = execFileSync("ssh-keygen", ["-F", hostName(), "-f", knownHostsFile], { encoding: "utf8" })
      assert.include(found, "ssh-ed25519")
    }))
})

// --- key passphrases ---------------------------------------------------------------------------

describe("encrypted keys", () => {
  it.scopedLive("the passphrase is asked for lazily (only for the encrypted key), cached, and dropped when wrong", () =>
    Effect.gen(function*() {
      const h = secretHandler(false)
      // Pool TTL 0: every call opens a new connection, so the key is loaded each time.
      const { client } = yield* launch(sshd, { handler: h.handler, env: { SSH_MCP_POOL_TTL: "0" } })
      yield* addAlias(client, "plain", { key_path: pwUser().key })
      yield* addAlias(client, "enc", { key_path: pwUser().encryptedKey })
      h.reset(() => ({ value: "wrong passphrase" }))
      yield* exec(client, "plain", "true")
      assert.deepStrictEqual(h.asked, [], "an unencrypted key needs no passphrase")

      const wrong = yield* failure(client, "exec", { alias: "enc", command: "true" })
      assert.include(wrong, `the passphrase for the key ${pwUser().encryptedKey} is wrong`)
      assert.deepStrictEqual(h.asked.map((a) => a.kind), ["passphrase"])
      const request = h.asked[0]!.request
      if (request._tag !== "Form") return assert.fail("expected a form")
      assert.deepStrictEqual(request.fields.map((f) => [f.name, f.masked]), [["passphrase", true]])

      h.reset(() => ({ value: pwUser().keyPassphrase }))
      assert.strictEqual((yield* exec(client, "enc", "id -un")).stdout, `${pwUser().name}\n`)
      const before = acceptedPorts(sshd, pwUser().name).length
      assert.strictEqual((yield* exec(client, "enc", "echo again")).stdout, "again\n")
      assert.strictEqual(acceptedPorts(sshd, pwUser().name).length, before + 1, "a new connection (pool TTL 0)")
      assert.strictEqual(h.asked.length, 1, "asked again after the wrong one, then cached")
    }))

  it.scopedLive("SSH_MCP_KEY_PASSPHRASE overrides: nothing is asked", () =>
    Effect.gen(function*() {
      const h = secretHandler(false)
      h.reset(() => "decline")
      const { client } = yield* launch(sshd, {
        handler: h.handler,
        env: { SSH_MCP_KEY_PASSPHRASE: pwUser().keyPassphrase }
      })
      yield* addAlias(client, "enc", { key_path: pwUser().encryptedKey })
      assert.strictEqual((yield* exec(client, "enc", "echo env")).stdout, "env\n")
      assert.deepStrictEqual(h.asked, [])
    }))

  it.scopedLive("the default key is found in ~/.ssh when the alias has no key_path", () =>
    Effect.gen(function*() {
      const { client, dir } = yield* launch(sshd)
      const dotSsh = path.join(dir, "home", ".ssh")
      fs.mkdirSync(dotSsh, { mode: 0o700 })
      fs.copyFileSync(pwUser().key, path.join(dotSsh, "id_ed25519"))
      yield* addAlias(client, "default", {})
      assert.strictEqual((yield* exec(client, "default", "echo default-key")).stdout, "default-key\n")
    }))

  it.scopedLive("a client without elicitation gets a clear error instead of a question", () =>
    Effect.gen(function*() {
      const { client } = yield* launch(sshd)
      yield* addAlias(client, "enc", { key_path: pwUser().encryptedKey })
      const text = yield* failure(client, "exec", { alias: "enc", command: "true" })
      assert.include(text, "cannot ask the user")
      assert.include(text, "SSH_MCP_KEY_PASSPHRASE")
    }))
})

// --- pool TTL and secret TTLs ------------------------------------------------------------------

describe("TTLs", () => {
  it.scopedLive("an idle connection is evicted after SSH_MCP_POOL_TTL; the login password stays cached", () =>
    Effect.gen(function*() {
      const h = secretHandler(false)
      h.reset(() => ({ value: pwUser().password }))
      const { client, logs } = yield* launch(sshd, { handler: h.handler, env: { SSH_MCP_POOL_TTL: "1" } })
      yield* addAlias(client, "p", { auth: "password" })
      const first = clientPort((yield* exec(client, "p", "echo $SSH_CONNECTION")).stdout)
      assert.strictEqual(
        clientPort((yield* exec(client, "p", "echo $SSH_CONNECTION")).stdout),
        first,
        "reused while fresh"
      )
      yield* Effect.sleep("1500 millis")
      const second = clientPort((yield* exec(client, "p", "echo $SSH_CONNECTION")).stdout)
      assert.notStrictEqual(second, first, "a new connection after the TTL")
      assert.include(acceptedPorts(sshd, pwUser().name), first)
      assert.include(acceptedPorts(sshd, pwUser().name), second)
      yield* eventually(
        () => disconnectedPorts(sshd, pwUser().name).includes(first),
        "sshd logs the evicted connection's end"
      )
      assert.isTrue(logs.some((l) => /closing connection #1: idle/.test(l.text)), "the server says why it closed it")
      assert.strictEqual(h.asked.length, 1, "the password outlived the connection (SSH_MCP_LOGIN_PW_TTL 300 s)")
    }))

  it.scopedLive("SSH_MCP_LOGIN_PW_TTL and SSH_MCP_SUDO_PW_TTL: an expired secret is asked for again", () =>
    Effect.gen(function*() {
      const h = secretHandler(false)
      h.reset(() => ({ value: pwUser().password }))
      const { client } = yield* launch(sshd, {
        handler: h.handler,
        env: { SSH_MCP_POOL_TTL: "1", SSH_MCP_LOGIN_PW_TTL: "1", SSH_MCP_SUDO_PW_TTL: "1" }
      })
      yield* addAlias(client, "p", { auth: "password" })
      yield* exec(client, "p", "id -u", { sudo: true })
      assert.deepStrictEqual(h.asked.map((a) => a.kind), ["login", "sudo"])
      yield* Effect.sleep("1500 millis")
      yield* exec(client, "p", "id -u", { sudo: true })
      assert.deepStrictEqual(h.asked.map((a) => a.kind), ["login", "sudo", "login", "sudo"])
    }))
})

// --- URL mode ----------------------------------------------------------------------------------

describe("URL-mode elicitation", () => {
  it.scopedLive("a client declaring elicitation.url gets a one-time page on 127.0.0.1; the value never crosses MCP", () =>
    Effect.gen(function*() {
      const h = secretHandler(true)
      h.reset(() => ({ value: pwUser().password }))
      const { client } = yield* launch(sshd, { handler: h.handler })
      yield* addAlias(client, "u", { auth: "password" })
      assert.strictEqual((yield* exec(client, "u", "id -u", { sudo: true })).stdout, "0\n")
      assert.deepStrictEqual(h.asked.map((a) => [a.kind, a.request._tag]), [["login", "Url"], ["sudo", "Url"]])
      for (const { request } of h.asked) {
        if (request._tag !== "Url") return assert.fail("expected URL mode")
        assert.match(request.url, /^http:\/\/127\.0\.0\.1:\d+\/elicit\/[A-Za-z0-9_-]{20,}$/)
        // One-time: the page is gone once used.
        const again = yield* Effect.promise(() => fetch(request.url).then((r) => r.status, () => 0))
        assert.include([0, 410], again)
      }
    }))
})

// --- secrets never leak ------------------------------------------------------------------------

describe("secret hygiene", () => {
  it("no secret in any log line, stderr line, tool result, aliases file or known_hosts of any server above", () => {
    const secrets = [sshd.passwordUser.password, sshd.passwordUser.keyPassphrase]
    assert.isAbove(seen.length, 100, "the servers above logged and answered")
    // The servers did log on stderr and via notifications/message.
    assert.isTrue(seen.some((t) => t.includes("asking the user for the login password")))
    assert.isTrue(
      seenTags.has("stderr") && seenTags.has("info"),
      `heard on stderr and via notifications/message: ${[...seenTags].join(", ")}`
    )
    for (const secret of secrets) {
      const hits = seen.filter((t) => t.includes(secret))
      assert.deepStrictEqual(hits, [], "a secret leaked")
    }
    for (
      const wrong of [
        "Not-The-Password-1",
        "Wrong-Sudo-Pass-9",
        "wrong passphrase",
        "Hunter2-Leak",
        "Must-Not-Reach-Stdin"
      ]
    ) {
      assert.deepStrictEqual(seen.filter((t) => t.includes(wrong)), [], `a rejected secret leaked: ${wrong}`)
    }
  })
})
