import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { JsonRpc } from "@skald/mcp"
import { Either, FastCheck as fc, Schema } from "effect"

// --- arbitraries -------------------------------------------------------------------------------

/**
 * Arbitrary JSON as it exists after a trip over the wire: normalised through JSON text, so -0
 * becomes 0 and `__proto__` keys are plain own properties (exactly what `JSON.parse` produces).
 */
const json: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 3, stringUnit: "binary" })
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown)

const id: fc.Arbitrary<JsonRpc.RequestId> = fc.oneof(
  fc.integer(),
  fc.string({ unit: "binary" }),
  fc.constantFrom(0, "", "0", Number.MAX_SAFE_INTEGER, -1)
)
const method = fc.oneof(
  fc.string({ unit: "binary" }),
  fc.constantFrom("initialize", "tools/call", "notifications/cancelled", "event/changed", "ping")
)

const request: fc.Arbitrary<JsonRpc.Request> = fc.record(
  { jsonrpc: fc.constant("2.0" as const), id, method, params: json },
  { requiredKeys: ["jsonrpc", "id", "method"] }
)
const notification: fc.Arbitrary<JsonRpc.Notification> = fc.record(
  { jsonrpc: fc.constant("2.0" as const), method, params: json },
  { requiredKeys: ["jsonrpc", "method"] }
)
const success: fc.Arbitrary<JsonRpc.Success> = fc.record({ jsonrpc: fc.constant("2.0" as const), id, result: json })
const errorObject: fc.Arbitrary<JsonRpc.ErrorObject> = fc.record(
  {
    code: fc.oneof(fc.integer(), fc.constantFrom(-32700, -32600, -32601, -32602, -32603)),
    message: fc.string({ unit: "binary" }),
    data: json
  },
  { requiredKeys: ["code", "message"] }
)
const failure: fc.Arbitrary<JsonRpc.Failure> = fc.record({
  jsonrpc: fc.constant("2.0" as const),
  id: fc.option(id, { nil: null }),
  error: errorObject
})
const message: fc.Arbitrary<JsonRpc.Message> = fc.oneof(request, notification, success, failure)

/** A valid message with a few of its keys deleted, replaced or added: the messages a sloppy server sends. */
const keys = ["jsonrpc", "id", "method", "params", "result", "error"] as const
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  json,
  id,
  fc.constantFrom(null, "1.0", "2.0", true, {}, [], { code: 1, message: "m" }, { code: "1", message: "m" }, {
    code: 1
  })
)
const mutation = fc.oneof(
  fc.record({ op: fc.constant("delete" as const), key: fc.constantFrom(...keys) }),
  fc.record({ op: fc.constant("set" as const), key: fc.constantFrom(...keys), value: oddValue })
)
const nearMiss: fc.Arbitrary<unknown> = fc
  .tuple(message, fc.array(mutation, { minLength: 1, maxLength: 3 }))
  .map(([m, mutations]) => {
    const out: Record<string, unknown> = { ...m }
    for (const change of mutations) {
      if (change.op === "delete") delete out[change.key]
      else out[change.key] = change.value
    }
    return out
  })

// --- helpers ------------------------------------------------------------------------------------

const encodeText = Schema.encodeSync(JsonRpc.MessageFromJson)
const decodeText = Schema.decodeUnknownSync(JsonRpc.MessageFromJson)
const decodeValue = Schema.decodeUnknownEither(JsonRpc.Message)

type Kind = JsonRpc.Incoming["_tag"]

/** The kind a decoded message has, by the same rule the engine routes by. */
const kindOf = (m: JsonRpc.Message): Kind => ("method" in m ? ("id" in m ? "Request" : "Notification") : "Response")

const fields: Record<string, ReadonlyArray<string>> = {
  Request: ["jsonrpc", "id", "method", "params"],
  Notification: ["jsonrpc", "method", "params"],
  Success: ["jsonrpc", "id", "result"],
  Failure: ["jsonrpc", "id", "error"]
}

/** The classified message reduced to its kind's fields (the codec drops excess properties). */
const project = (incoming: JsonRpc.Classified): Record<string, unknown> => {
  const m = incoming.message as Record<string, unknown>
  const canSucceed = "result" in m && (typeof m.id === "string" || typeof m.id === "number")
  const shape = incoming._tag === "Response" ? (canSucceed ? "Success" : "Failure") : incoming._tag
  const out: Record<string, unknown> = {}
  for (const key of fields[shape]!) if (key in m) out[key] = key === "error" ? projectError(m[key]) : m[key]
  return out
}
const projectError = (u: unknown): unknown => {
  const e = u as Record<string, unknown>
  return "data" in e ? { code: e.code, message: e.message, data: e.data } : { code: e.code, message: e.message }
}

/** Asserts that the classifier and the codec say the same thing about one parsed JSON value. */
const assertAgree = (u: unknown) => {
  const classified = JsonRpc.classify(u)
  const decoded = decodeValue(u)
  if (Either.isLeft(decoded)) {
    assert.isUndefined(classified, `the codec rejects ${JSON.stringify(u)} but classify accepts it`)
    return
  }
  assert.isDefined(classified, `the codec accepts ${JSON.stringify(u)} but classify rejects it`)
  assert.strictEqual(classified!._tag, kindOf(decoded.right), `kinds differ for ${JSON.stringify(u)}`)
  deepStrictEqual(decoded.right as unknown, project(classified!), `contents differ for ${JSON.stringify(u)}`)
}

// --- properties ---------------------------------------------------------------------------------

// The codec must keep every message intact: in particular a Failure must never be read (or
// written) as a Success with `result: undefined`, and a request with an invalid id is no notification.
describe("JsonRpc codec", () => {
  it.prop("requests round-trip through JSON text", [request], ([m]) => {
    deepStrictEqual(decodeText(encodeText(m)), m)
  })

  it.prop("notifications round-trip through JSON text", [notification], ([m]) => {
    deepStrictEqual(decodeText(encodeText(m)), m)
  })

  it.prop("successes round-trip through JSON text", [success], ([m]) => {
    deepStrictEqual(decodeText(encodeText(m)), m)
  })

  it.prop("failures round-trip through JSON text", [failure], ([m]) => {
    deepStrictEqual(decodeText(encodeText(m)), m)
  })

  it.prop("the encoded text is the message's JSON", [message], ([m]) => {
    deepStrictEqual(JSON.parse(encodeText(m)), m)
  })

  it("a Failure is not read as a Success (fixed example)", () => {
    const m = JsonRpc.failure(7, JsonRpc.ErrorCode.MethodNotFound, "method not found: x")
    deepStrictEqual(decodeText(JSON.stringify(m)), m)
  })

  it("rejects text that is not JSON, and JSON that is not a message", () => {
    assert.throws(() => decodeText("{\"jsonrpc\":\"2.0\","))
    assert.throws(() => decodeText("[]"))
    assert.throws(() => decodeText("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}"))
    assert.throws(() => decodeText("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}"))
  })
})

describe("JsonRpc.toolsCallJson", () => {
  it.prop(
    "is the JSON text of the tools/call request it stands for, and parses back to it",
    {
      id: fc.nat(),
      name: fc.string({ unit: "binary" }),
      args: fc.dictionary(fc.string({ unit: "binary" }), json, { maxKeys: 6 })
    },
    ({ args, id, name }) => {
      const message = JsonRpc.request(id, "tools/call", { name, arguments: args, _meta: { progressToken: id } })
      const text = JsonRpc.toolsCallJson(id, name, args)
      assert.strictEqual(text, JSON.stringify(message))
      deepStrictEqual(JsonRpc.classify(JSON.parse(text)), { _tag: "Request", message })
    }
  )
})

describe("JsonRpc.classify", () => {
  it.prop("classifies every request, notification, success and failure as the codec does", [message], ([m]) => {
    const classified = JsonRpc.classify(m)
    assert.isDefined(classified)
    assert.strictEqual(classified!._tag, kindOf(m))
    assert.strictEqual(classified!.message, m, "classify hands the parsed value through untouched")
    assertAgree(m)
  })

  it.prop("agrees with the codec on each message read back from its JSON text", [message], ([m]) => {
    const text = encodeText(m)
    const classified = JsonRpc.classify(JSON.parse(text))
    assert.isDefined(classified)
    assert.strictEqual(classified!._tag, kindOf(decodeText(text)))
    deepStrictEqual(project(classified!), decodeText(text) as unknown)
  })

  it.prop("rejects arbitrary JSON the codec rejects, and agrees where the codec accepts", [json], ([u]) => {
    assertAgree(u)
  })

  it.prop("agrees with the codec on near-miss messages (keys deleted, replaced, added)", [nearMiss], ([u]) => {
    assertAgree(u)
  }, { fastCheck: { numRuns: 500 } })

  it("routes a message with both method and id as a request, never as a response", () => {
    const m = { jsonrpc: "2.0", id: 3, method: "ping", result: {} }
    assert.strictEqual(JsonRpc.classify(m)?._tag, "Request")
  })

  it("rejects what is not a JSON-RPC 2.0 message", () => {
    for (
      const u of [
        null,
        1,
        "x",
        [],
        [{ jsonrpc: "2.0", method: "m" }],
        {},
        { jsonrpc: "1.0", method: "m" },
        { method: "m" },
        { jsonrpc: "2.0", id: 1, method: 1 },
        { jsonrpc: "2.0", id: true, method: "m" },
        { jsonrpc: "2.0", id: { n: 1 }, result: 1 },
        { jsonrpc: "2.0", result: 1 },
        { jsonrpc: "2.0", id: 1, error: { code: "1", message: "m" } },
        { jsonrpc: "2.0", id: 1, error: { code: 1 } }
      ]
    ) {
      assert.isUndefined(JsonRpc.classify(u), JSON.stringify(u))
    }
  })

  it("accepts an error response with a null id", () => {
    const m = { jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } }
    deepStrictEqual(JsonRpc.classify(m), { _tag: "Response", message: m as JsonRpc.Failure })
  })
})

describe("JsonRpc constructors", () => {
  it.prop("build messages that classify as their kind and omit absent optional fields", [
    id,
    method,
    fc.option(json, { nil: undefined }),
    errorObject
  ], ([i, meth, params, error]) => {
    const req = JsonRpc.request(i, meth, params)
    const note = JsonRpc.notification(meth, params)
    const ok = JsonRpc.success(i, params ?? null)
    const ko = JsonRpc.failure(i, error.code, error.message, error.data)
    assert.strictEqual(JsonRpc.classify(req)?._tag, "Request")
    assert.strictEqual(JsonRpc.classify(note)?._tag, "Notification")
    assert.strictEqual(JsonRpc.classify(ok)?._tag, "Response")
    assert.strictEqual(JsonRpc.classify(ko)?._tag, "Response")
    assert.strictEqual("params" in req, params !== undefined)
    assert.strictEqual("params" in note, params !== undefined)
    assert.strictEqual("data" in ko.error, error.data !== undefined)
    deepStrictEqual(ko.error, error)
    for (const m of [req, note, ok, ko]) assert.isTrue(Schema.is(JsonRpc.Message)(m))
  })
})
