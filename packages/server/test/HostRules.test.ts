/**
 * Property tests of the host's pure rules: which media names are served, how secrets are
 * referenced, resolved and redacted, what imported configs become, the log line format, and which
 * of the host's environment variables a server inherits.
 */
import { assert, describe, it } from "@effect/vitest"
import { ServerName } from "@skald/domain"
import type { McpLog } from "@skald/mcp"
import { ConfigImport, HttpEndpoints, Paths, SecretStore, ServerEnvironment, ServerLogs } from "@skald/server"
import { Either, FastCheck as fc, Redacted } from "effect"
import * as Path from "node:path"

const anyText = fc.string({ unit: "binary", maxLength: 80 })
const varName = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,15}$/)

describe("media file names", () => {
  const pieces = fc.constantFrom("..", ".", "/", "\\", "%2e", "%2f", "%5c", "%2E%2E", "a", "png", "-", "_", "x.png", "//", "?", "#", "\u0000")
  const hostile = fc.array(fc.oneof(pieces, anyText), { maxLength: 8 }).map((parts) => parts.join(""))

  it.prop("a name is served only when it is one flat segment that stays in the media folder", [hostile], ([tail]) => {
    const name = HttpEndpoints.mediaFileOf(`/api/mcp-media/${tail}`)
    if (name === undefined) return
    assert.notMatch(name, /[/\\%\u0000]/)
    assert.isFalse(name.startsWith("."))
    assert.notInclude(name, "..")
    const dir = "/srv/skald/data/mcp_media"
    assert.strictEqual(Path.dirname(Path.resolve(dir, name)), dir)
  })

  it.prop("every saved name (<uuid>.<ext>) is served", [fc.uuid(), fc.stringMatching(/^[a-z0-9]{1,8}$/)], ([id, ext]) => {
    assert.strictEqual(HttpEndpoints.mediaFileOf(`/api/mcp-media/${id}.${ext}`), `${id}.${ext}`)
    assert.strictEqual(HttpEndpoints.mediaFileOf(`/api/mcp-media/${id}.${ext}?download=1`), `${id}.${ext}`)
  })

  it.prop("only the media route is served", [anyText], ([path]) => {
    if (!path.startsWith("/api/mcp-media/")) assert.isUndefined(HttpEndpoints.mediaFileOf(path))
  })
})

describe("secret references", () => {
  const part = fc.oneof(
    fc.record({ ref: varName }),
    fc.string({ maxLength: 12 }).filter((s) => !s.includes("${")).map((text) => ({ text }))
  )

  it.prop("references lists each ${NAME} of a template once, in order", [fc.array(part, { maxLength: 8 })], ([parts]) => {
    const template = parts.map((p) => ("ref" in p ? `\${${p.ref}}` : p.text)).join("")
    const expected = [...new Set(parts.flatMap((p) => ("ref" in p ? [p.ref] : [])))]
    assert.deepStrictEqual(SecretStore.references(template), expected)
  })

  it.prop("a redacted text contains none of the secrets (4 characters or more)", [
    fc.array(fc.string({ minLength: 4, maxLength: 12 }), { minLength: 1, maxLength: 3 }),
    fc.array(anyText, { maxLength: 4 })
  ], ([secrets, fillers]) => {
    const text = fillers.map((f, i) => `${f}${secrets[i % secrets.length]}`).join(" ")
    const redacted = SecretStore.redact(secrets.map((s) => Redacted.make(s)), text)
    // Replacing one secret can create another only if the marker itself contains it.
    for (const s of secrets) if (!"[redacted]".includes(s)) assert.notInclude(redacted, s)
  })

  it.prop("a moved literal always gets a valid store name", [anyText, anyText], ([server, suffix]) => {
    assert.isTrue(SecretStore.isValidName(SecretStore.secretNameFor(server, suffix)))
  })
})

describe("config import", () => {
  it.prop("${VAR} and ${env:VAR} both become ${VAR}; text around them is kept", [varName, anyText.filter((s) => !s.includes("${"))], ([name, text]) => {
    assert.deepStrictEqual(ConfigImport.mapReferences(`${text}\${env:${name}}${text}`), Either.right(`${text}\${${name}}${text}`))
    assert.deepStrictEqual(ConfigImport.mapReferences(`\${${name}}`), Either.right(`\${${name}}`))
  })

  it.prop("${input:…} and editor variables are refused", [varName, fc.constantFrom("input:", "workspaceFolder", "userHome")], ([name, kind]) => {
    const ref = kind === "input:" ? `\${input:${name}}` : `\${${kind}}`
    assert.isTrue(Either.isLeft(ConfigImport.mapReferences(`x ${ref} y`)))
  })

  it.prop("every imported server has a valid name and no literal secret in its env", [
    fc.dictionary(anyText.filter((k) => k.length > 0), fc.record({
      command: fc.constant("node"),
      env: fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/), fc.string({ maxLength: 10 }))
    }), { maxKeys: 5 })
  ], ([servers]) => {
    const outcomes = ConfigImport.fromJson({ mcpServers: servers }, new Set())
    assert.isTrue(Either.isRight(outcomes))
    const names = new Set<string>()
    for (const o of Either.getOrThrow(outcomes)) {
      if (o._tag === "Skipped") continue
      assert.isTrue(ServerName.isValid(o.entry.name))
      assert.isFalse(names.has(o.entry.name), "names are unique")
      names.add(o.entry.name)
      const env = o.entry.config._tag === "stdio" ? o.entry.config.env : {}
      for (const [key, value] of Object.entries(env)) {
        if (/token|key|secret|password/i.test(key) && value.length > 0) assert.match(value, /^\$\{[A-Z0-9_]+\}$/)
      }
      for (const s of o.secrets) assert.isTrue(SecretStore.isValidName(s.name))
    }
  })
})

describe("log lines", () => {
  const tag = fc.constantFrom<McpLog.Tag>("stderr", "lifecycle", "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
  it.prop("timestamp, the bracketed tag padded to 12, one space, the text", [fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }), tag, anyText], ([at, t, text]) => {
    const line = ServerLogs.formatLine(at, t, text)
    assert.strictEqual(line.slice(0, 24), at.toISOString())
    assert.strictEqual(line.slice(24, 25), " ")
    assert.strictEqual(line.slice(25, 37).trimEnd(), `[${t}]`)
    assert.strictEqual(line.slice(37), ` ${text}`)
  })

  it.prop("file names keep only [A-Za-z0-9._-]", [anyText], ([name]) => {
    assert.match(ServerLogs.sanitize(name), /^[A-Za-z0-9._-]*$/)
    assert.strictEqual(ServerLogs.sanitize(name).length, name.length)
  })
})

describe("a server's environment", () => {
  const names = fc.oneof(
    fc.constantFrom(...ServerEnvironment.inherited, "LC_ALL", "LC_TIME", "SKALD_HOME", "SKALD_SECRETS_DIR"),
    fc.constantFrom("OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "NODE_OPTIONS", "HTTPS_PROXY", "PATHX", "XHOME"),
    varName
  )
  const parent = fc.dictionary(names, fc.option(anyText, { nil: undefined }), { maxKeys: 12 })

  it.prop("holds the allow-listed and LC_* variables as they are, the home's folders, and nothing else", [parent], ([env]) => {
    const paths = Paths.make({ home: "/srv/home", secretsDir: "/srv/secrets" })
    const out = ServerEnvironment.make(paths, env)
    const kept = (name: string) => ServerEnvironment.inherited.includes(name) || name.startsWith("LC_")
    const expected: Record<string, string> = {}
    for (const [name, value] of Object.entries(env)) if (value !== undefined && kept(name)) expected[name] = value
    assert.deepStrictEqual(out, { ...expected, SKALD_HOME: "/srv/home", SKALD_SECRETS_DIR: "/srv/secrets" })
  })

  it("drops what looks like a secret, whatever the host holds", () => {
    const out = ServerEnvironment.make(Paths.make({ home: "/h" }), {
      PATH: "/bin",
      OPENAI_API_KEY: "sk-nope",
      AWS_SECRET_ACCESS_KEY: "nope",
      SKALD_HOME: "/elsewhere"
    })
    assert.deepStrictEqual(out, { PATH: "/bin", SKALD_HOME: "/h", SKALD_SECRETS_DIR: "/h/secrets" })
  })
})
