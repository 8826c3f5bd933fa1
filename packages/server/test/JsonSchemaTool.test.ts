import * as Tool from "@effect/ai/Tool"
import { describe, expect, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import * as JsonSchemaTool from "../src/agent/llm/JsonSchemaTool.js"

describe("JsonSchemaTool", () => {
  it("passes an MCP inputSchema through untouched", () => {
    const input = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { a: { type: "string", description: "the a" }, b: { $ref: "#/$defs/x" } },
      $defs: { x: { type: "number", minimum: 3 } },
      additionalProperties: false,
      required: ["a"]
    }
    const tool = JsonSchemaTool.fromJsonSchema("mcp__s__t", "does t", input)
    expect(tool.name).toBe("mcp__s__t")
    expect(tool.description).toBe("does t")
    expect(JSON.stringify(Tool.getJsonSchema(tool))).toBe(JSON.stringify(input))
  })

  it("a missing or non-object schema becomes an open object schema", () => {
    expect(Tool.getJsonSchema(JsonSchemaTool.fromJsonSchema("t", undefined, undefined))).toEqual({ type: "object" })
    expect(Tool.getJsonSchema(JsonSchemaTool.fromJsonSchema("t", undefined, [1]))).toEqual({ type: "object" })
  })

  it("its arguments decode any JSON object and refuse anything else", () => {
    const tool = JsonSchemaTool.fromJsonSchema("t", undefined, { type: "object" })
    const decode = Schema.decodeUnknownEither(tool.parametersSchema)
    expect(decode({ x: [1, { y: null }] })._tag).toBe("Right")
    expect(decode("nope")._tag).toBe("Left")
  })
})
