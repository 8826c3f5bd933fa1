import { assert, describe, it } from "@effect/vitest"
import { deepStrictEqual } from "@effect/vitest/utils"
import { McpTool, ServerConfig, ToolResult } from "@skald/domain"
import { Either, FastCheck as fc, Option, Schema } from "effect"

/** Arbitrary JSON as it exists after a trip over the wire (-0 normalised away). */
const json: fc.Arbitrary<unknown> = fc
  .jsonValue({ maxDepth: 3 })
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown)
const jsonObject: fc.Arbitrary<Record<string, unknown>> = fc
  .dictionary(fc.string(), json, { maxKeys: 4 })
  .map((value) => JSON.parse(JSON.stringify(value)) as Record<string, unknown>)

const nonEmpty = fc.string({ minLength: 1 })

// --- ServerConfig -----------------------------------------------------------------------------------

const decode = Schema.decodeUnknownSync(ServerConfig.ServerConfig)
const decodeEither = Schema.decodeUnknownEither(ServerConfig.ServerConfig)
const encode = Schema.encodeSync(ServerConfig.ServerConfig)

const roots = fc.array(nonEmpty, { maxLength: 3 })

const stdioConfig = fc
  .record({
    command: nonEmpty,
    args: fc.array(fc.string(), { maxLength: 4 }),
    env: fc.dictionary(fc.string(), fc.string(), { maxKeys: 4 }),
    roots
  }, { requiredKeys: ["command", "args", "env"] })
  .map((fields) => ServerConfig.StdioServerConfig.make(fields))

const oauthConfig = fc.record({
  clientId: nonEmpty,
  clientSecret: fc.string(),
  scope: nonEmpty,
  grant: fc.constantFrom("authorization_code" as const, "client_credentials" as const)
}, { requiredKeys: [] })

const httpConfig = fc
  .record({ url: nonEmpty, apiKey: fc.string(), roots, oauth: oauthConfig }, { requiredKeys: ["url"] })
  .map((fields) => ServerConfig.HttpServerConfig.make(fields))

const config: fc.Arbitrary<ServerConfig.ServerConfig> = fc.oneof(stdioConfig, httpConfig)

describe("ServerConfig", () => {
  it.prop("decode(encode(config)) is the config", [config], ([c]) => {
    const back = decode(encode(c))
    if (c._tag === "stdio") assert.instanceOf(back, ServerConfig.StdioServerConfig)
    else assert.instanceOf(back, ServerConfig.HttpServerConfig)
    deepStrictEqual(back, c)
  })

  it.prop("encoding writes `http` or `stdio` and survives JSON", [config], ([c]) => {
    const wire = encode(c)
    assert.strictEqual(wire.transport, c._tag)
    deepStrictEqual(decode(JSON.parse(JSON.stringify(wire))), c)
  })

  it.prop("`sse` decodes exactly as `http`, and encodes back as `http`", [
    fc.record({ url: nonEmpty, apiKey: fc.string() }, { requiredKeys: ["url"] })
  ], ([fields]) => {
    const sse = decode({ transport: "sse", ...fields })
    const http = decode({ transport: "http", ...fields })
    assert.instanceOf(sse, ServerConfig.HttpServerConfig)
    deepStrictEqual(sse, http)
    deepStrictEqual(encode(sse), { transport: "http", ...fields })
  })

  it("stdio defaults: no args, no env", () => {
    const c = decode({ transport: "stdio", command: "node" })
    deepStrictEqual(c, ServerConfig.StdioServerConfig.make({ command: "node", args: [], env: {} }))
    deepStrictEqual(encode(c), { transport: "stdio", command: "node", args: [], env: {} })
  })

  it("an http config without apiKey encodes without the key", () => {
    const wire = encode(decode({ transport: "http", url: "http://127.0.0.1:1/mcp" }))
    deepStrictEqual(wire, { transport: "http", url: "http://127.0.0.1:1/mcp" })
    assert.isFalse("apiKey" in wire)
  })

  it("rejects configs that cannot be used", () => {
    for (
      const u of [
        {},
        { transport: "stdio" },
        { transport: "stdio", command: "" },
        { transport: "stdio", command: "node", args: "x" },
        { transport: "stdio", command: "node", env: { A: 1 } },
        { transport: "http" },
        { transport: "http", url: "" },
        { transport: "sse", url: 1 },
        { transport: "websocket", url: "ws://127.0.0.1" },
        { command: "node" }
      ]
    ) {
      assert.isTrue(Either.isLeft(decodeEither(u)), JSON.stringify(u))
    }
  })
})

// --- McpTool.fromWire ---------------------------------------------------------------------------------

const annotations = fc.record({
  title: fc.string(),
  readOnlyHint: fc.boolean(),
  destructiveHint: fc.boolean(),
  idempotentHint: fc.boolean(),
  openWorldHint: fc.boolean()
}, { requiredKeys: [] })

// A `__proto__` key (JSON.parse makes it an own property) is left out of the comparison with the
// class's validating constructor: effect's Schema.Record rebuilds the object by assignment, where
// `__proto__` sets the prototype instead. fromWire keeps it an own property (tested below).
const noProtoKey = (u: unknown) => !JSON.stringify(u).includes("\"__proto__\"")

const wireTool = fc.record({
  name: nonEmpty,
  title: fc.string(),
  description: fc.string(),
  inputSchema: jsonObject,
  outputSchema: jsonObject,
  annotations,
  execution: fc.record({ taskSupport: fc.oneof(fc.constantFrom("forbidden", "optional", "required"), json) }, {
    requiredKeys: []
  }),
  extra: json
}, { requiredKeys: ["name"] }).filter(noProtoKey)

describe("McpTool.fromWire", () => {
  it.prop("reads every field it knows, with the documented defaults", [wireTool], ([w]) => {
    const tool = McpTool.fromWire(w)
    assert.isTrue(Option.isSome(tool))
    const t = Option.getOrThrow(tool)
    assert.instanceOf(t, McpTool.McpTool)
    assert.strictEqual(t.name, w.name)
    const ts = w.execution?.taskSupport
    assert.strictEqual(t.taskSupport, ts === "optional" || ts === "required" ? ts : "forbidden")
    deepStrictEqual(t.inputSchema, w.inputSchema ?? { type: "object" })
    deepStrictEqual(t.outputSchema, w.outputSchema)
    deepStrictEqual(t.annotations, w.annotations)
    assert.strictEqual(t.title, w.title ?? w.annotations?.title)
    assert.strictEqual(t.description, w.description)
    for (const key of ["title", "description", "outputSchema", "annotations"] as const) {
      assert.strictEqual(key in t, t[key] !== undefined, `${key} is absent rather than undefined`)
    }
    // What it builds is a valid McpTool, the same as one the class's constructor builds.
    assert.isTrue(Either.isRight(Schema.validateEither(McpTool.McpTool)(t)))
    const made = new McpTool.McpTool({ ...t })
    deepStrictEqual(Object.entries(t), Object.entries(made))
    assert.strictEqual(Object.getPrototypeOf(t), Object.getPrototypeOf(made))
    deepStrictEqual(Schema.encodeSync(McpTool.McpTool)(t), Schema.encodeSync(McpTool.McpTool)(made))
  })

  it("a __proto__ key in a schema stays an own property, never the prototype", () => {
    const wire = JSON.parse(
      "{\"name\":\"t\",\"inputSchema\":{\"__proto__\":{\"polluted\":true}},\"outputSchema\":{\"__proto__\":{}}}"
    )
    const tool = Option.getOrThrow(McpTool.fromWire(wire))
    assert.isTrue(Object.hasOwn(tool.inputSchema, "__proto__"))
    assert.strictEqual(Object.getPrototypeOf(tool.inputSchema), Object.prototype)
    assert.isUndefined((tool.inputSchema as { polluted?: unknown }).polluted)
    assert.isTrue(Object.hasOwn(tool.outputSchema!, "__proto__"))
  })

  it("defaults: taskSupport forbidden, inputSchema {type: object}", () => {
    const t = Option.getOrThrow(McpTool.fromWire({ name: "x" }))
    assert.strictEqual(t.taskSupport, "forbidden")
    deepStrictEqual(t.inputSchema, { type: "object" })
    assert.isFalse("outputSchema" in t)
    assert.strictEqual(
      Option.getOrThrow(McpTool.fromWire({ name: "x", execution: { taskSupport: "bogus" } })).taskSupport,
      "forbidden"
    )
    assert.strictEqual(
      Option.getOrThrow(McpTool.fromWire({ name: "x", execution: { taskSupport: "required" } })).taskSupport,
      "required"
    )
    assert.strictEqual(
      Option.getOrThrow(McpTool.fromWire({ name: "x", taskSupport: "required" })).taskSupport,
      "forbidden"
    )
  })

  it("keeps outputSchema and annotations; drops malformed optional fields", () => {
    const outputSchema = { type: "object", properties: { n: { type: "number" } }, required: ["n"] }
    const t = Option.getOrThrow(McpTool.fromWire({
      name: "x",
      outputSchema,
      annotations: { title: "X", readOnlyHint: true }
    }))
    deepStrictEqual(t.outputSchema, outputSchema)
    deepStrictEqual(t.annotations, { title: "X", readOnlyHint: true })
    assert.strictEqual(t.title, "X")
    const sloppy = Option.getOrThrow(McpTool.fromWire({
      name: "x",
      inputSchema: "nope",
      outputSchema: [1],
      annotations: { readOnlyHint: "yes" },
      description: 5
    }))
    deepStrictEqual(sloppy.inputSchema, { type: "object" })
    assert.isUndefined(sloppy.outputSchema)
    assert.isUndefined(sloppy.annotations)
    assert.isUndefined(sloppy.description)
  })

  it.prop("rejects entries without a usable name", [
    fc.oneof(
      jsonObject.map((o) => {
        const { name: _, ...rest } = o
        return rest
      }),
      jsonObject.map((o) => ({ ...o, name: "" })),
      fc.tuple(jsonObject, fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.string())))
        .map(([o, name]) => ({ ...o, name })),
      fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(json))
    )
  ], ([w]) => {
    assert.isTrue(Option.isNone(McpTool.fromWire(w)), JSON.stringify(w))
  })
})

// --- ToolResult ---------------------------------------------------------------------------------------

describe("ToolResult", () => {
  it.prop("Text: the text itself, kind string", [fc.string({ unit: "binary" })], ([text]) => {
    const r = ToolResult.TextResult.make({ text })
    assert.strictEqual(ToolResult.toWire(r), text)
    assert.strictEqual(ToolResult.kind(r), "string")
  })

  it.prop("Json: compact JSON that parses back to the value, kind json", [json], ([value]) => {
    const r = ToolResult.JsonResult.make({ value })
    const wire = ToolResult.toWire(r)
    assert.strictEqual(wire, JSON.stringify(value))
    deepStrictEqual(JSON.parse(wire), value)
    assert.strictEqual(ToolResult.kind(r), "json")
  })

  it("Json of undefined is null", () => {
    assert.strictEqual(ToolResult.toWire(ToolResult.JsonResult.make({ value: undefined })), "null")
  })

  it.prop("the schema round-trips both variants", [
    fc.oneof(
      fc.string().map((text) => ToolResult.TextResult.make({ text }) as ToolResult.ToolResult),
      json.map((value) => ToolResult.JsonResult.make({ value }) as ToolResult.ToolResult)
    )
  ], ([r]) => {
    const back = Schema.decodeUnknownSync(ToolResult.ToolResult)(Schema.encodeSync(ToolResult.ToolResult)(r))
    deepStrictEqual(back, r)
  })
})
