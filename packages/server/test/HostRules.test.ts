/**
 * Property tests of the host's pure rules: which media names are served, how secrets are
 * referenced, resolved and redacted, what imported configs become, the log line format, and which
 * of the host's environment variables a server inherits.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpError, ServerName } from "@skald/domain"
import type { McpLog } from "@skald/mcp"
import {
  ConfigImport,
  HttpEndpoints,
  Paths,
  Redactor,
  SecretNames,
  SecretStore,
  ServerEnvironment,
  ServerLogs
} from "@skald/server"
import { Either, FastCheck as fc, Redacted } from "effect"
import * as Path from "node:path"

const anyText = fc.string({ unit: "binary", maxLength: 80 })
const varName = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,15}$/)

describe("media file names", () => {
  const pieces = fc.constantFrom(
    "..",
    ".",
    "/",
    "\\",
    "%2e",
    "%2f",
    "%5c",
    "%2E%2E",
    "a",
    "png",
    "-",
    "_",
    "x.png",
    "//",
    "?",
    "#",
    "\u0000"
  )
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

  it.prop(
    "every saved name (<uuid>.<ext>) is served",
    [fc.uuid(), fc.stringMatching(/^[a-z0-9]{1,8}$/)],
    ([id, ext]) => {
      assert.strictEqual(HttpEndpoints.mediaFileOf(`/api/mcp-media/${id}.${ext}`), `${id}.${ext}`)
      assert.strictEqual(HttpEndpoints.mediaFileOf(`/api/mcp-media/${id}.${ext}?download=1`), `${id}.${ext}`)
    }
  )

  it.prop("only the media route is served", [anyText], ([path]) => {
    if (!path.startsWith("/api/mcp-media/")) assert.isUndefined(HttpEndpoints.mediaFileOf(path))
  })
})

describe("secret references", () => {
  const part = fc.oneof(
    fc.record({ ref: varName }),
    fc.string({ maxLength: 12 }).filter((s) => !s.includes("${")).map((text) => ({ text }))
  )

  it.prop(
    "references lists each ${NAME} of a template once, in order",
    [fc.array(part, { maxLength: 8 })],
    ([parts]) => {
      const template = parts.map((p) => ("ref" in p ? `\${${p.ref}}` : p.text)).join("")
      const expected = [...new Set(parts.flatMap((p) => ("ref" in p ? [p.ref] : [])))]
      assert.deepStrictEqual(SecretNames.references(template), expected)
    }
  )

  it.prop("a redacted text contains none of the secrets (4 characters or more)", [
    fc.array(fc.string({ minLength: 4, maxLength: 12 }), { minLength: 1, maxLength: 3 }),
    fc.array(anyText, { maxLength: 4 })
  ], ([secrets, fillers]) => {
    const text = fillers.map((f, i) => `${f}${secrets[i % secrets.length]}`).join(" ")
    const redacted = SecretStore.redact(secrets.map((s) => Redacted.make(s)), text)
    for (const s of secrets) assert.notInclude(redacted, s)
  })

  const serverName = fc.oneof(
    fc.constantFrom(
      "a-b",
      "A-B",
      "a_b",
      "A_B",
      "ab",
      "AB",
      "a--b",
      "a-_b",
      "a_-b",
      "-a",
      "a-",
      "9",
      "99",
      "a9",
      "A9",
      "a-9",
      "a90",
      "a9-0",
      "x91y",
      "x_y"
    ),
    fc.stringMatching(/^[A-Za-z0-9-](?:[A-Za-z0-9_-]{0,10}[A-Za-z0-9-])?$/)
  ).filter(ServerName.isValid)
  // Names that differ only in case, '-' or '_': what the old rule folded together.
  const lookalike = (name: string) =>
    fc.array(fc.boolean(), { minLength: name.length, maxLength: name.length }).map((flips) =>
      Array.from(
        name,
        (c, i) =>
          !flips[i] ? c : c === "-" ? "_" : c === "_" ? "-" : c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()
      ).join("")
    )
  const field = fc.oneof(fc.constantFrom("API_KEY", "TOKEN", "token", "_X", "A__B", "KEY_"), varName)

  it.prop(
    "a moved secret's name is a valid store name for every valid server name and field",
    [serverName, field],
    ([server, key]) => {
      const name = SecretNames.secretNameFor(server, key)
      assert.isTrue(SecretNames.isValidName(name), name)
      assert.isTrue(name.endsWith(`__${key}`))
    }
  )

  it.prop("no two servers' moved secrets share a name, even on a file system that ignores case", [
    serverName.chain((a) => fc.tuple(fc.constant(a), fc.oneof(lookalike(a), serverName))),
    field,
    field
  ], ([[a, b], f, g]) => {
    fc.pre(a !== b && ServerName.isValid(b))
    assert.notStrictEqual(SecretNames.secretNameFor(a, f).toLowerCase(), SecretNames.secretNameFor(b, g).toLowerCase())
  })

  it.prop("one server's fields get distinct names", [serverName, field, field], ([server, f, g]) => {
    fc.pre(f !== g)
    assert.notStrictEqual(SecretNames.secretNameFor(server, f), SecretNames.secretNameFor(server, g))
  })

  it("plain names stay readable; the old rule's collisions are gone", () => {
    assert.strictEqual(SecretNames.secretNameFor("google-calendar", "API_KEY"), "MCP_GOOGLE_CALENDAR__API_KEY")
    assert.strictEqual(SecretNames.secretNameFor("A-B", "API_KEY"), "MCPX_9A909B__API_KEY")
    assert.strictEqual(
      SecretNames.legacySecretNameFor("a-b", "API_KEY"),
      SecretNames.legacySecretNameFor("A_B", "API_KEY")
    )
  })
})

describe("redaction", () => {
  const tricky = fc.constantFrom(
    "\"",
    "\\",
    "\n",
    "\r\n",
    " ",
    "%",
    "+",
    "/",
    "=",
    "&",
    "é",
    "ü",
    "💥",
    "\u2028",
    "\t",
    "\u0000",
    "]",
    "d]",
    "["
  )
  const piece = fc.oneof(
    tricky,
    fc.string({ unit: "binary", minLength: 1, maxLength: 3 }),
    fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 3 })
  )
  const plainSecret = fc.array(piece, { minLength: 2, maxLength: 12 }).map((a) => a.join("")).filter((s) =>
    s.length >= 4
  )
  const pem = fc.tuple(
    fc.array(fc.base64String({ minLength: 4, maxLength: 64 }), { minLength: 1, maxLength: 5 }),
    fc.constantFrom("\n", "\r\n")
  ).map(
    ([lines, eol]) => ["-----BEGIN PRIVATE KEY-----", ...lines, "-----END PRIVATE KEY-----"].join(eol)
  )
  const secret = fc.oneof(plainSecret, pem)

  // The encodings, written here independently of Redactor.ts.
  const lower = (s: string) => s.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())
  const percent = (s: string): ReadonlyArray<string> => {
    try {
      const e = encodeURIComponent(s)
      return [e, lower(e), new URLSearchParams({ x: s }).toString().slice(2)]
    } catch {
      return [] // a lone surrogate: no percent-encoded form
    }
  }
  const json = (s: string) => JSON.stringify(s).slice(1, -1)
  const pythonJson = (s: string) =>
    json(s).replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
  // Each line of a multi-line value without its line break and the white space around it, when 4 characters or more remain.
  const linesOf = (s: string) =>
    /[\r\n]/.test(s) ? s.split(/\r?\n|\r/).map((l) => l.trim()).filter((l) => l.length >= 4) : []
  const encodings = (s: string): ReadonlyArray<string> =>
    [s, ...linesOf(s)].flatMap((x) => [x, json(x), pythonJson(x), ...percent(x)])

  it.prop("a secret embedded in any encoding (raw, a line of it, JSON-escaped, percent-encoded) never survives", [
    fc.array(secret, { minLength: 1, maxLength: 3 }),
    fc.array(fc.tuple(anyText, fc.nat()), { minLength: 1, maxLength: 6 })
  ], ([secrets, parts]) => {
    const text = parts.map(([filler, pick], i) => {
      const forms = encodings(secrets[i % secrets.length]!)
      return `${filler}${forms[pick % forms.length]}`
    }).join("")
    const out = Redactor.make(secrets.map((s) => Redacted.make(s))).redact(text)
    for (const s of secrets) for (const form of encodings(s)) assert.notInclude(out, form)
  })

  it.prop(
    "a text holding no form of the secrets is unchanged",
    [fc.array(secret, { maxLength: 3 }), anyText],
    ([secrets, text]) => {
      fc.pre(secrets.every((s) => encodings(s).every((form) => !text.toLowerCase().includes(form.toLowerCase()))))
      assert.strictEqual(Redactor.make(secrets).redact(text), text)
    }
  )

  it.prop("the text around a secret is kept", [secret, anyText, anyText], ([s, before, after]) => {
    const marker = "\u0001"
    fc.pre(!before.includes(marker) && !after.includes(marker))
    const clean = (t: string) => Redactor.make([s]).redact(t)
    fc.pre(
      clean(before) === before && clean(after) === after &&
        clean(`${before}${marker}${after}`) === `${before}${marker}${after}`
    )
    assert.strictEqual(
      clean(`${before}${marker}${s}${marker}${after}`),
      `${before}${marker}${Redactor.MARKER}${marker}${after}`
    )
  })

  it("a PEM key written line by line, a JSON-escaped secret and an error's stderr tail are redacted", () => {
    const key =
      "-----BEGIN PRIVATE KEY-----\r\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\r\nq+/Zm8=\r\n-----END PRIVATE KEY-----"
    const quoted = `pa"ss\\word`
    const r = Redactor.make([key, quoted])
    for (const line of key.split("\r\n")) {
      assert.strictEqual(r.redact(`[stderr] ${line}\r`), `[stderr] ${Redactor.MARKER}\r`)
    }
    assert.strictEqual(r.redact(JSON.stringify({ password: quoted })), `{"password":"${Redactor.MARKER}"}`)
    assert.strictEqual(
      r.redact(`https://x/?k=${encodeURIComponent(quoted).toLowerCase()}`),
      `https://x/?k=${Redactor.MARKER}`
    )
    // A re-indented line is still found; a line of blanks is not a secret.
    assert.strictEqual(r.redact("    MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"), `    ${Redactor.MARKER}`)
    assert.strictEqual(Redactor.make(["abcd\n        \nefgh"]).redact("a        b"), "a        b")
    const error = new McpError.McpServerExited({ server: "s", code: 3, signal: null, stderrTail: key.split("\r\n") })
    const redacted = Redactor.redactFields(r, error)
    assert.instanceOf(redacted, McpError.McpServerExited)
    for (const line of key.split("\r\n")) assert.notInclude(redacted.message, line)
    assert.include(redacted.message, "exited with code 3")
  })
})

describe("config import", () => {
  it.prop("${VAR} and ${env:VAR} both become ${VAR}; text around them is kept", [
    varName,
    anyText.filter((s) => !s.includes("${"))
  ], ([name, text]) => {
    assert.deepStrictEqual(
      ConfigImport.mapReferences(`${text}\${env:${name}}${text}`),
      Either.right(`${text}\${${name}}${text}`)
    )
    assert.deepStrictEqual(ConfigImport.mapReferences(`\${${name}}`), Either.right(`\${${name}}`))
  })

  it.prop("${input:…} and editor variables are refused", [
    varName,
    fc.constantFrom("input:", "workspaceFolder", "userHome")
  ], ([name, kind]) => {
    const ref = kind === "input:" ? `\${input:${name}}` : `\${${kind}}`
    assert.isTrue(Either.isLeft(ConfigImport.mapReferences(`x ${ref} y`)))
  })

  it.prop("every imported server has a valid name and no literal secret in its env", [
    fc.dictionary(
      anyText.filter((k) => k.length > 0),
      fc.record({
        command: fc.constant("node"),
        env: fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/), fc.string({ maxLength: 10 }))
      }),
      { maxKeys: 5 }
    )
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
      for (const s of o.secrets) assert.isTrue(SecretNames.isValidName(s.name))
    }
  })
})

describe("log lines", () => {
  const tag = fc.constantFrom<McpLog.Tag>(
    "stderr",
    "lifecycle",
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency"
  )
  it.prop("timestamp, the bracketed tag padded to 12, one space, the text", [
    fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }),
    tag,
    anyText
  ], ([at, t, text]) => {
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
    fc.constantFrom(
      "OPENAI_API_KEY",
      "AWS_SECRET_ACCESS_KEY",
      "GITHUB_TOKEN",
      "NODE_OPTIONS",
      "HTTPS_PROXY",
      "PATHX",
      "XHOME"
    ),
    varName
  )
  const parent = fc.dictionary(names, fc.option(anyText, { nil: undefined }), { maxKeys: 12 })

  it.prop(
    "holds the allow-listed and LC_* variables as they are, the home's folders, and nothing else",
    [parent],
    ([env]) => {
      const paths = Paths.make({ home: "/srv/home", secretsDir: "/srv/secrets" })
      const out = ServerEnvironment.make(paths, env)
      const kept = (name: string) => ServerEnvironment.inherited.includes(name) || name.startsWith("LC_")
      const expected: Record<string, string> = {}
      for (const [name, value] of Object.entries(env)) if (value !== undefined && kept(name)) expected[name] = value
      assert.deepStrictEqual(out, { ...expected, SKALD_HOME: "/srv/home", SKALD_SECRETS_DIR: "/srv/secrets" })
    }
  )

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
