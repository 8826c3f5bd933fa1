/**
 * `McpRpcs.AddRequest` (what a client checks before `Mcp.Add`, the web UI's add form) agrees with
 * the host's own rules (`Registration.plan`): a name, a command, an environment key or an http URL
 * one refuses the other refuses too, and what the schema takes the host plans.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpRpcs } from "@skald/domain"
import { Registration } from "@skald/server"
import { Effect, Either, FastCheck as fc, Schema } from "effect"

const chars = fc.constantFrom(..."abcXYZ019-_.$ ")
const word = (max: number) => fc.array(chars, { maxLength: max }).map((cs) => cs.join(""))
const name = fc.oneof(word(6), fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/))
const envKey = fc.oneof(word(5), fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,6}$/))

const stdio = fc.record({
  _tag: fc.constant("stdio" as const),
  command: fc.oneof(word(4), fc.constant("node")),
  env: fc.dictionary(envKey, fc.string({ maxLength: 5 }), { maxKeys: 2 })
})
const http = fc.record({
  _tag: fc.constant("http" as const),
  url: fc.constantFrom("http://127.0.0.1:9/mcp", "https://example.com/", "ftp://x/", "not a url", "")
})

const accepts = Schema.is(McpRpcs.AddRequest)

describe("McpRpcs.AddRequest", () => {
  it.effect.prop(
    "accepts exactly what the host plans",
    [name, fc.oneof(stdio, http)],
    ([name, transport]) =>
      Effect.gen(function*() {
        const request = { name, transport }
        const planned = yield* Effect.either(Registration.plan({
          name,
          transport: transport._tag === "stdio"
            ? { ...transport, args: [], secretEnv: {} }
            : transport
        }))
        assert.strictEqual(
          accepts(request),
          Either.isRight(planned),
          `${JSON.stringify(request)}: ${Either.isLeft(planned) ? planned.left.message : "planned"}`
        )
      }),
    { fastCheck: { numRuns: 150 } }
  )

  it("says what is wrong, by field", () => {
    const decoded = Schema.decodeUnknownEither(McpRpcs.AddRequest, { errors: "all" })({
      name: "a__b",
      transport: { _tag: "stdio", command: " ", env: { "1X": "v" } }
    })
    assert.isTrue(Either.isLeft(decoded))
    const message = Either.isLeft(decoded) ? decoded.left.message : ""
    assert.include(message, "the server name \"a__b\" is not valid")
    assert.include(message, "the command is empty")
    assert.include(message, "\"1X\" is not a variable name")
    assert.isTrue(Schema.is(McpRpcs.SecretReference)("${WEATHER_KEY}"))
    assert.isFalse(Schema.is(McpRpcs.SecretReference)("the-key-itself"))
  })
})
