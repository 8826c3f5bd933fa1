/**
 * Registration against a real home (SQLite file, secret store folder): any valid request
 * round-trips to the stored row and back — the entry read from the registry is the planned one,
 * every literal secret is in the store and only its reference in the row — and an existing name
 * is refused unless the request says to replace it.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpServerEntry, ServerConfig, ServerName } from "@skald/domain"
import { HostError, McpServerRepo, Registration, SecretNames, SecretStore } from "@skald/server"
import { Effect, FastCheck as fc, Option, Redacted } from "effect"
import * as Crypto from "node:crypto"
import { tempServicesLayer } from "./host-support.js"

const serverName = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9-]{0,20}$/).filter(ServerName.isValid)
const varName = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/)
const reference = varName.map((v) => `\${${v}}`)
const literal = fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(s))
const text = fc.option(fc.string({ maxLength: 30 }), { nil: undefined })

const stdio = fc.record({
  _tag: fc.constant("stdio" as const),
  command: fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim().length > 0),
  args: fc.array(fc.string({ maxLength: 10 }), { maxLength: 4 }),
  env: fc.dictionary(varName, fc.oneof(fc.string({ maxLength: 10 }), reference), { maxKeys: 3 }),
  secretEnv: fc.dictionary(varName, fc.oneof(literal, reference), { maxKeys: 3 })
}).filter((t) => Object.keys(t.env).every((k) => !Object.hasOwn(t.secretEnv, k)))

const http = fc.record({
  _tag: fc.constant("http" as const),
  url: fc.tuple(fc.integer({ min: 1, max: 65535 }), fc.stringMatching(/^[a-z0-9/]{0,10}$/)).map(([port, path]) =>
    `http://127.0.0.1:${port}/${path}`
  ),
  apiKey: fc.option(fc.oneof(literal, reference), { nil: undefined })
})

/** Private keys as a user may have them (PKCS#8, SEC1, PKCS#1), each with an algorithm it signs with. */
const ec = Crypto.generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey
const rsa = Crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey
const keys = [
  { pem: ec.export({ type: "pkcs8", format: "pem" }).toString(), alg: undefined },
  { pem: ec.export({ type: "sec1", format: "pem" }).toString(), alg: "ES256" as const },
  { pem: rsa.export({ type: "pkcs1", format: "pem" }).toString(), alg: "RS256" as const },
  { pem: rsa.export({ type: "pkcs8", format: "pem" }).toString(), alg: "PS384" as const }
]
const privateKey = fc.option(
  fc.oneof(
    fc.constantFrom(...keys).map((k) => ({ privateKey: k.pem, signingAlgorithm: k.alg })),
    reference.map((r) => ({ privateKey: r, signingAlgorithm: undefined }))
  ),
  { nil: undefined }
)

/** The same key, whatever its PEM form. */
const sameKey = (a: string, b: string) =>
  Crypto.createPrivateKey(a).export({ type: "pkcs8", format: "der" }).equals(
    Crypto.createPrivateKey(b).export({ type: "pkcs8", format: "der" })
  )

/** An HTTP server with OAuth client settings (no api key: it would turn OAuth off). */
const httpOAuth = fc.record({
  _tag: fc.constant("http" as const),
  url: fc.integer({ min: 1, max: 65535 }).map((port) => `http://127.0.0.1:${port}/mcp`),
  oauth: fc.record({
    clientId: fc.stringMatching(/^[a-z0-9-]{1,12}$/),
    clientSecret: fc.option(fc.oneof(literal, reference), { nil: undefined }),
    key: privateKey,
    scope: fc.option(fc.stringMatching(/^[a-z]{1,6}( [a-z]{1,6}){0,2}$/), { nil: undefined }),
    grant: fc.option(fc.constantFrom("authorization_code" as const, "client_credentials" as const), {
      nil: undefined
    })
  })
})

/** An HTTP server whose client is a Client ID Metadata Document. */
const httpDocumented = fc.record({
  _tag: fc.constant("http" as const),
  url: fc.integer({ min: 1, max: 65535 }).map((port) => `http://127.0.0.1:${port}/mcp`),
  oauth: fc.record({
    clientMetadataUrl: fc.stringMatching(/^[a-z]{1,8}$/).map((path) => `https://client.example.com/${path}.json`),
    scope: fc.option(fc.stringMatching(/^[a-z]{1,6}$/), { nil: undefined })
  })
})

const request = fc.record({
  name: serverName,
  transport: fc.oneof(
    stdio,
    http,
    httpOAuth.map(({ oauth: { key, ...oauth }, ...t }) => ({ ...t, oauth: { ...oauth, ...key } })),
    httpDocumented
  ),
  description: text,
  friendlyName: text,
  enabled: fc.boolean()
})

describe("Registration", () => {
  it.effect.prop(
    "a valid request round-trips to the stored row and back",
    [request],
    ([req]) =>
      Effect.gen(function*() {
        const registration = yield* Registration.Registration
        const done = yield* registration.register(req)
        assert.isFalse(done.replaced)
        const stored = yield* (yield* McpServerRepo.McpServerRepo).get(ServerName.make(req.name))
        assert.isTrue(Option.isSome(stored))
        const back = Registration.describe(Option.getOrThrow(stored))
        assert.deepStrictEqual(back, Registration.describe(done.entry))
        assert.strictEqual(back.name, req.name)
        assert.strictEqual(back.enabled, req.enabled)
        assert.strictEqual(back.description, req.description)
        assert.strictEqual(back.friendlyName, req.friendlyName)
        const store = yield* SecretStore.SecretStore
        /** A secret as given, from the row: a reference as is; a literal through the store. */
        const given = (value: string, original: string) =>
          Effect.gen(function*() {
            if (value === original) return assert.isTrue(SecretNames.isReference(original) || original.length === 0)
            const name = /^\$\{([A-Za-z0-9_]+)\}$/.exec(value)?.[1]
            assert.isDefined(name, `a moved secret leaves a reference, got ${value}`)
            const value2 = yield* store.get(name!)
            assert.strictEqual(Redacted.value(Option.getOrThrow(value2)), original)
          })
        const t = req.transport
        if (t._tag === "stdio") {
          assert.strictEqual(back.transport, "stdio")
          if (back.transport !== "stdio") return
          assert.strictEqual(back.command, t.command)
          assert.deepStrictEqual(back.args, t.args)
          assert.deepStrictEqual(
            Object.keys(back.env).sort(),
            [...Object.keys(t.env), ...Object.keys(t.secretEnv)].sort()
          )
          for (const [key, value] of Object.entries(t.env)) assert.strictEqual(back.env[key], value)
          for (const [key, value] of Object.entries(t.secretEnv)) yield* given(back.env[key]!, value)
        } else {
          assert.strictEqual(back.transport, "http")
          if (back.transport !== "http") return
          assert.strictEqual(back.url, t.url)
          const apiKey = "apiKey" in t ? t.apiKey : undefined
          if (apiKey === undefined) assert.isUndefined(back.apiKey)
          else yield* given(back.apiKey!, apiKey)
          const oauth = "oauth" in t ? t.oauth : undefined
          if (oauth === undefined) assert.isUndefined(back.oauth)
          else {
            const o: Registration.OAuthRequest = oauth
            assert.strictEqual(back.oauth?.clientId, o.clientId)
            assert.strictEqual(back.oauth?.scope, o.scope)
            assert.strictEqual(back.oauth?.grant, o.grant)
            assert.strictEqual(back.oauth?.clientMetadataUrl, o.clientMetadataUrl)
            assert.strictEqual(back.oauth?.signingAlgorithm, o.signingAlgorithm)
            // The client secret, like an api key: a reference kept, a literal moved to the store.
            if (o.clientSecret === undefined) assert.isUndefined(back.oauth?.clientSecret)
            else yield* given(back.oauth!.clientSecret!, o.clientSecret)
            // The private key too, a literal moved as PKCS#8: the same key.
            if (o.privateKey === undefined) assert.isUndefined(back.oauth?.privateKey)
            else if (SecretNames.isReference(o.privateKey)) assert.strictEqual(back.oauth?.privateKey, o.privateKey)
            else {
              const name = /^\$\{([A-Za-z0-9_]+)\}$/.exec(back.oauth?.privateKey ?? "")?.[1]
              assert.strictEqual(name, SecretNames.secretNameFor(req.name, SecretNames.OAUTH_PRIVATE_KEY_FIELD))
              const stored = Redacted.value(Option.getOrThrow(yield* store.get(name!)))
              assert.match(stored, /^-----BEGIN PRIVATE KEY-----\n/)
              assert.isTrue(sameKey(stored, o.privateKey))
            }
          }
        }
        // The same name again is refused, unless it asks to replace.
        const again = yield* Effect.flip(registration.register(req))
        assert.instanceOf(again, HostError.ServerAlreadyRegistered)
        const replaced = yield* registration.register({ ...req, replace: true })
        assert.isTrue(replaced.replaced)
      }).pipe(Effect.provide(tempServicesLayer)),
    { fastCheck: { numRuns: 30 } }
  )

  it.effect.prop("an invalid name or env key is refused before anything is stored", [
    fc.oneof(fc.constantFrom("", "a__b", "_x", "x_", "has space", "x".repeat(65)), serverName),
    fc.constantFrom("1BAD", "with-dash", "", "ok_NAME")
  ], ([name, key]) =>
    Effect.gen(function*() {
      const valid = ServerName.isValid(name) && SecretNames.isValidName(key)
      const outcome = yield* Effect.either((yield* Registration.Registration).register({
        name,
        transport: { _tag: "stdio", command: "node", args: [], env: {}, secretEnv: { [key]: "literal-value" } }
      }))
      assert.strictEqual(outcome._tag === "Right", valid)
      if (outcome._tag === "Left") {
        assert.instanceOf(outcome.left, HostError.InvalidServerEntry)
        assert.deepStrictEqual(yield* (yield* SecretStore.SecretStore).list, [])
        assert.deepStrictEqual(yield* (yield* McpServerRepo.McpServerRepo).list, [])
      }
    }).pipe(Effect.provide(tempServicesLayer)), { fastCheck: { numRuns: 20 } })

  it("a private key is checked against its algorithm, a metadata document's URL against where it may live", () => {
    const p384 = Crypto.generateKeyPairSync("ec", { namedCurve: "P-384" }).privateKey.export({
      type: "pkcs8",
      format: "pem"
    }).toString()
    const problem = (pem: string, alg: Parameters<typeof Registration.pkcs8Key>[1]) => {
      const checked = Registration.pkcs8Key(pem, alg)
      return "problem" in checked ? checked.problem : undefined
    }
    assert.strictEqual(
      problem(p384, "ES256"),
      "the OAuth private key is an EC key on secp384r1, but ES256 signs with an EC key on prime256v1"
    )
    assert.isUndefined(problem(p384, "ES384"))
    assert.strictEqual(
      problem(keys[2]!.pem, "ES512"),
      "the OAuth private key is a rsa key, but ES512 signs with an EC key on secp521r1"
    )
    assert.strictEqual(
      problem(keys[0]!.pem, "PS256"),
      "the OAuth private key is an EC key on prime256v1, but PS256 signs with an RSA key"
    )
    // Never the key itself in the problem.
    const garbled = keys[0]!.pem.replace(/[A-Za-z]{8}/, "########")
    assert.notInclude(problem(garbled, "ES256") ?? "", garbled.split("\n")[1]!)
  })

  it.effect("OAuth settings that do not fit together are refused, naming what is wrong", () =>
    Effect.gen(function*() {
      const registration = yield* Registration.Registration
      const refused = (oauth: Registration.OAuthRequest) =>
        Effect.flip(registration.register({
          name: "x",
          transport: { _tag: "http", url: "http://127.0.0.1:1/mcp", oauth }
        })).pipe(Effect.map((e) => (e as HostError.InvalidServerEntry).reason))
      const doc = "https://client.example.com/skald.json"
      assert.strictEqual(
        yield* refused({ clientMetadataUrl: "http://client.example.com/skald.json" }),
        "the Client ID Metadata Document URL must be https (http only on a loopback host)"
      )
      assert.strictEqual(
        yield* refused({ clientMetadataUrl: "https://client.example.com/" }),
        "the Client ID Metadata Document URL needs a path"
      )
      assert.strictEqual(
        yield* refused({ clientMetadataUrl: "not a url" }),
        "the Client ID Metadata Document URL is not a URL: \"not a url\""
      )
      assert.include(yield* refused({ clientMetadataUrl: doc, clientId: "c" }), "not both")
      assert.include(
        yield* refused({ clientMetadataUrl: doc, grant: "client_credentials" }),
        "not the client credentials grant"
      )
      assert.strictEqual(
        yield* refused({ signingAlgorithm: "ES256", clientId: "c" }),
        "an OAuth signing algorithm goes with the private key it signs with"
      )
      assert.strictEqual(
        yield* refused({ privateKey: "${KEY}" }),
        "an OAuth private key needs the client id it belongs to"
      )
      assert.strictEqual(yield* refused({ clientId: "c", privateKey: " " }), "the OAuth private key is empty")
      // Nothing was stored on the way.
      assert.deepStrictEqual(yield* (yield* SecretStore.SecretStore).list, [])
    }).pipe(Effect.provide(tempServicesLayer)))

  it.prop(
    "describe never shows a literal api key",
    [literal, fc.option(reference, { nil: undefined })],
    ([value, ref]) => {
      const entry = McpServerEntry.McpServerEntry.make({
        name: ServerName.make("web"),
        config: ServerConfig.HttpServerConfig.make({ url: "http://127.0.0.1:1/mcp", apiKey: ref ?? value }),
        enabled: true
      })
      const shown = Registration.describe(entry)
      assert.strictEqual(shown.transport === "http" ? shown.apiKey : undefined, ref ?? Registration.HIDDEN)
    }
  )
})
