/**
 * OpenTelemetry end to end (docs/telemetry.md): the real `skald` binary, configured only by the
 * OTEL_* variables, exports to a loopback OTLP receiver (support/otlp.ts); the spans, their
 * parents and attributes, the metrics, the trace context a server receives, and no secret in any
 * exported byte.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type Run, runSkald, startServe, stopProcess } from "./cli-support.js"
import * as AnthropicStandin from "./fixtures/anthropic-standin.js"
import { fixture } from "./fixtures/fixtures.js"
import * as ModelStandin from "./fixtures/model-standin.js"
import { makeHome, tempHome, until } from "./host-support.js"
import { httpFixture, startEverything, startHttpFixture } from "./http-support.js"
import { type ExportedSpan, otlpReceiver, type Receiver } from "./support/otlp.js"

const MARKER = "marker-argument-5be1d0"
const SECRET = "sk-secret-api-key-9c41f7"

const skald = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.promise((): Promise<Run> => runSkald(args, { env }))

const json = (receiver: Receiver) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json"
})

const named = (spans: ReadonlyArray<ExportedSpan>, name: string): ExportedSpan => {
  const found = spans.find((s) => s.name === name)
  assert.isDefined(found, `no span ${name} among ${spans.map((s) => s.name).join(", ")}`)
  return found!
}

/** The span ids from `span`'s parent up to its trace's root. */
const ancestorsOf = (spans: ReadonlyArray<ExportedSpan>, span: ExportedSpan): Array<string> => {
  const out: Array<string> = []
  for (let at: ExportedSpan | undefined = span; at !== undefined && at.parentSpanId !== "";) {
    out.push(at.parentSpanId)
    const parentId: string = at.parentSpanId
    at = spans.find((s) => s.spanId === parentId)
  }
  return out
}

const noByteHas = (receiver: Receiver, ...secrets: ReadonlyArray<string>) => {
  assert.isAbove(receiver.received().length, 0)
  for (const r of receiver.received()) {
    for (const secret of secrets) assert.isFalse(r.body.includes(secret), `${r.path} carries ${secret}`)
  }
}

describe("telemetry", () => {
  it.scopedLive("skald call over HTTP: one trace of client spans with the MCP attributes, metrics, no secret", () =>
    Effect.gen(function*() {
      for (const key of Object.keys(process.env)) assert.isFalse(key.startsWith("OTEL_"), `the test runs with ${key}`)
      const receiver = yield* otlpReceiver
      const server = yield* startEverything("streamableHttp")
      const r = yield* skald(
        ["call", "echo", "--args", JSON.stringify({ message: MARKER }), "--http", server.url, "--api-key-env", "K"],
        { ...json(receiver), K: SECRET }
      )
      assert.strictEqual(r.status, 0, r.stderr)
      assert.include(r.stdout, MARKER)

      const spans = receiver.spans()
      const root = named(spans, "skald call")
      assert.strictEqual(root.parentSpanId, "")
      assert.strictEqual(root.resource["service.name"], "skald")
      const host = new URL(server.url).host
      const call = named(spans, "tools/call echo")
      assert.strictEqual(call.kind, 3) // CLIENT
      assert.deepInclude(call.attributes, {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool"
      })
      // The server is named by its URL's host until initialize answers, then by its serverInfo.
      const serverName = call.attributes["skald.mcp.server"]
      assert.isTrue(typeof serverName === "string" && serverName.length > 0)
      assert.match(String(call.attributes["jsonrpc.request.id"]), /^\d+$/)
      assert.notProperty(call.attributes, "error.type")
      const initialize = named(spans, "initialize")
      assert.deepInclude(initialize.attributes, { "mcp.method.name": "initialize", "skald.mcp.server": host })
      // The session server-everything assigned in its answer to initialize is on the requests after it.
      assert.notProperty(initialize.attributes, "mcp.session.id")
      const session = call.attributes["mcp.session.id"]
      assert.isTrue(typeof session === "string" && session.length > 0, JSON.stringify(call.attributes))
      for (const span of [call, initialize]) {
        assert.strictEqual(span.traceId, root.traceId, span.name)
        assert.strictEqual(span.parentSpanId, root.spanId, span.name)
      }

      const points = receiver.points().filter((p) => p.name === "mcp.client.operation.duration")
      assert.isTrue(
        points.some((p) =>
          p.attributes["gen_ai.tool.name"] === "echo" && p.attributes["skald.mcp.server"] === serverName
        ),
        JSON.stringify(points)
      )
      // Neither the argument (echoed back in the result) nor the bearer token is in any export.
      noByteHas(receiver, MARKER, SECRET)
    }))

  it.scopedLive("http/protobuf by default: the server gets the call span's context in params._meta and the header", () =>
    Effect.gen(function*() {
      const receiver = yield* otlpReceiver
      const server = yield* startHttpFixture(httpFixture("trace", "stateless"))
      const r = yield* skald(["call", "trace_context", "--http", server.url], {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: "skald-test",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=ci"
      })
      assert.strictEqual(r.status, 0, r.stderr)
      const seen = JSON.parse(r.stdout) as { meta: string; header: string }
      assert.match(seen.meta, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
      assert.strictEqual(seen.header, seen.meta)
      const traces = receiver.received().filter((x) => x.path === "/v1/traces")
      assert.isAbove(traces.length, 0)
      for (const t of traces) assert.strictEqual(t.contentType, "application/x-protobuf")
      const body = Buffer.concat(traces.map((t) => t.body))
      // The exported call span is the one whose context the server got (ids are raw bytes in protobuf).
      const [, traceId, spanId] = seen.meta.split("-")
      assert.isTrue(body.includes(Buffer.from(traceId!, "hex")))
      assert.isTrue(body.includes(Buffer.from(spanId!, "hex")))
      for (const text of ["tools/call trace_context", "skald-test", "deployment.environment.name", "ci"]) {
        assert.isTrue(body.includes(text), text)
      }
      assert.isTrue(receiver.received().some((x) => x.path === "/v1/metrics"))
    }))

  it.scopedLive("exit 1 (a tool error) and exit 2 (an unknown tool) still flush, with error.type", () =>
    Effect.gen(function*() {
      const receiver = yield* otlpReceiver
      const echo = fixture("echo")
      const failed = yield* skald(["call", "fail", "--", echo.command, ...echo.args], json(receiver))
      assert.strictEqual(failed.status, 1, failed.stderr)
      assert.strictEqual(named(receiver.spans(), "tools/call fail").attributes["error.type"], "tool_error")
      const unknown = yield* skald(["call", "no_such_tool", "--", echo.command, ...echo.args], json(receiver))
      assert.strictEqual(unknown.status, 2, unknown.stderr)
      const span = named(receiver.spans(), "tools/call no_such_tool")
      assert.isString(span.attributes["error.type"])
      assert.strictEqual(span.status.code, 2) // ERROR
    }))

  it.scopedLive("skald serve exports the spans of the servers it runs, and flushes when stopped", () =>
    Effect.gen(function*() {
      const receiver = yield* otlpReceiver
      const home = yield* tempHome
      const serve = yield* Effect.promise(() =>
        startServe(home, { ...json(receiver), OTEL_BSP_SCHEDULE_DELAY: "100", OTEL_SERVICE_NAME: "skald-host" })
      )
      // The first run's demo server connects: its initialize is exported while serve runs.
      yield* Effect.promise(() =>
        until(
          "the demo server's initialize span",
          async () => receiver.spans().filter((s) => s.name === "initialize"),
          (spans) => spans.some((s) => s.attributes["skald.mcp.server"] === "demo")
        )
      )
      assert.strictEqual(receiver.spans()[0]!.resource["service.name"], "skald-host")
      const before = receiver.received().filter((r) => r.path === "/v1/metrics").length
      yield* Effect.promise(() => stopProcess(serve.child))
      // Its last metrics were exported on the way out.
      assert.isAbove(receiver.received().filter((r) => r.path === "/v1/metrics").length, before)
    }))

  it.scopedLive("a collector that refuses the connection changes neither the output nor the exit status", () =>
    Effect.gen(function*() {
      const echo = fixture("echo")
      const args = ["call", "echo", "--args", "{\"message\":\"hi\"}", "--", echo.command, ...echo.args]
      // Port 1 on loopback: nothing listens there.
      const r = yield* skald(args, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1" })
      assert.strictEqual(r.status, 0, r.stderr)
      assert.strictEqual(r.stdout.trim(), "hi")
    }))

  it.scopedLive("OTEL_TRACES_EXPORTER=none exports metrics only; an unsupported protocol exports nothing and warns", () =>
    Effect.gen(function*() {
      const receiver = yield* otlpReceiver
      const echo = fixture("echo")
      const args = ["call", "echo", "--args", "{\"message\":\"hi\"}", "--", echo.command, ...echo.args]
      const metricsOnly = yield* skald(args, { ...json(receiver), OTEL_TRACES_EXPORTER: "none" })
      assert.strictEqual(metricsOnly.status, 0, metricsOnly.stderr)
      assert.deepStrictEqual(receiver.received().filter((x) => x.path === "/v1/traces"), [])
      assert.isTrue(receiver.points().some((p) => p.name === "mcp.client.operation.duration"))
      const before = receiver.received().length
      const grpc = yield* skald(args, {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc"
      })
      assert.strictEqual(grpc.status, 0, grpc.stderr)
      assert.include(grpc.stderr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported")
      assert.strictEqual(receiver.received().length, before)
    }))

  describe("an agent turn", () => {
    const STORED = "stored-secret-value-3e7a90"
    const API_KEY = "sk-model-api-key-77d2c1"

    /** A home with the echo fixture (`skald mcp add`) and a secret-store value (`skald secret set`). */
    const home = Effect.promise(async () => {
      const dir = makeHome()
      const echo = fixture("echo")
      const added = await runSkald(["mcp", "add", "echo", "--home", dir, "--", echo.command, ...echo.args])
      assert.strictEqual(added.status, 0, added.stderr)
      const secret = await runSkald(["secret", "set", "PROBE_TOKEN", "--home", dir], { input: `${STORED}\n` })
      assert.strictEqual(secret.status, 0, secret.stderr)
      return dir
    })

    /** `skald agent run` against the stand-in: activate echo, call it with the marker and the stored secret, answer. */
    const echoScript = [
      ModelStandin.toolCalls([{ id: "act_1", name: "activate_tools", arguments: { groups: ["echo"] } }]),
      ModelStandin.toolCalls([{
        id: "call_1",
        name: "mcp__echo__echo",
        arguments: { message: `${MARKER} ${STORED}` }
      }], { usage: { prompt_tokens: 40, completion_tokens: 9 } }),
      ModelStandin.text("Echoed.", { usage: { prompt_tokens: 60, completion_tokens: 3 } })
    ]
    const turn = (
      env: Record<string, string>,
      script: ReadonlyArray<ModelStandin.Reply> = echoScript,
      expected: { readonly status: number; readonly stdout?: string } = { status: 0, stdout: "Echoed.\n" }
    ) =>
      Effect.gen(function*() {
        const receiver = yield* otlpReceiver
        const standin = yield* ModelStandin.start(script)
        const dir = yield* home
        const r = yield* skald(["agent", "run", "--home", dir, "--approve", "allow", "please echo"], {
          ...json(receiver),
          SKALD_LLM_PROVIDER: "openai",
          SKALD_LLM_BASE_URL: standin.url,
          SKALD_LLM_MODEL: "standin-model",
          SKALD_LLM_API_KEY: API_KEY,
          ...env
        })
        assert.strictEqual(r.status, expected.status, r.stderr)
        if (expected.stdout !== undefined) assert.strictEqual(r.stdout, expected.stdout)
        return receiver
      })

    it.scopedLive("invoke_agent → agent round → chat + execute_tool → tools/call, one trace; the model metrics", () =>
      Effect.gen(function*() {
        const receiver = yield* turn({})
        const spans = receiver.spans()
        const root = named(spans, "invoke_agent main")
        assert.strictEqual(root.parentSpanId, "")
        assert.deepInclude(root.attributes, { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "main" })
        assert.isString(root.attributes["gen_ai.conversation.id"])
        assert.notProperty(root.attributes, "error.type")
        // The turn's spans are one trace (the host's start-up, before the turn, has its own).
        const ofTurn = spans.filter((s) => /^(agent round|chat |execute_tool |tools\/call )/.test(s.name))
        assert.isAbove(ofTurn.length, 0)
        for (const span of ofTurn) assert.strictEqual(span.traceId, root.traceId, span.name)
        const rounds = spans.filter((s) => s.name === "agent round")
        assert.deepStrictEqual(rounds.map((s) => s.attributes["skald.agent.round"]).sort(), [1, 2, 3])
        for (const round of rounds) assert.strictEqual(round.parentSpanId, root.spanId)
        const roundOf = (n: number) => rounds.find((s) => s.attributes["skald.agent.round"] === n)!

        const chats = spans.filter((s) => s.name === "chat standin-model")
        assert.strictEqual(chats.length, 3)
        for (const chat of chats) {
          assert.strictEqual(chat.kind, 3) // CLIENT
          assert.deepInclude(chat.attributes, {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "standin-model"
          })
          assert.isTrue(rounds.some((r) => r.spanId === chat.parentSpanId), chat.parentSpanId)
        }
        const second = chats.find((c) => c.parentSpanId === roundOf(2).spanId)!
        assert.deepInclude(second.attributes, { "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 9 })
        assert.strictEqual(second.attributes["gen_ai.response.finish_reasons"], "[\"tool-calls\"]")
        assert.notProperty(second.attributes, "error.type")

        const activate = named(spans, "execute_tool activate_tools")
        assert.strictEqual(activate.parentSpanId, roundOf(1).spanId)
        const execute = named(spans, "execute_tool mcp__echo__echo")
        assert.strictEqual(execute.parentSpanId, roundOf(2).spanId)
        assert.deepInclude(execute.attributes, {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": "mcp__echo__echo",
          "gen_ai.tool.call.id": "call_1",
          "skald.tool.status": "done"
        })
        // The approval gate's span, under the tool's (made only under an installed tracer, as here).
        const gate = spans.find((s) => s.name === "Approvals.check" && s.parentSpanId === execute.spanId)
        assert.isDefined(
          gate,
          `no Approvals.check span under execute_tool among ${spans.map((s) => s.name).join(", ")}`
        )
        assert.deepInclude(gate!.attributes, { "approval.tool": "mcp__echo__echo" })
        assert.include(["allow", "ask"], gate!.attributes["approval.decision"])
        const mcp = named(spans, "tools/call echo")
        // Nested under it (through the manager's McpManager.call span).
        assert.include(ancestorsOf(spans, mcp), execute.spanId)
        // Recording is off: no argument text anywhere, nor the secrets.
        assert.notProperty(execute.attributes, "gen_ai.tool.call.arguments")
        assert.notProperty(execute.attributes, "gen_ai.tool.call.result")
        noByteHas(receiver, MARKER, STORED, API_KEY)

        const points = receiver.points()
        const tokens = points.filter((p) => p.name === "gen_ai.client.token.usage")
        for (const type of ["input", "output"]) {
          assert.isTrue(
            tokens.some((p) =>
              p.attributes["gen_ai.token.type"] === type && p.attributes["gen_ai.provider.name"] === "openai" &&
              p.attributes["gen_ai.request.model"] === "standin-model"
            ),
            JSON.stringify(tokens)
          )
        }
        assert.isTrue(
          points.some((p) =>
            p.name === "gen_ai.client.operation.duration" && p.attributes["gen_ai.provider.name"] === "openai"
          )
        )
        assert.isTrue(points.some((p) => p.name === "skald.agent.active_turns"))
      }))

    it.scopedLive("SKALD_OTEL_RECORD_CONTENT=true records the arguments and the result, redacted of every secret", () =>
      Effect.gen(function*() {
        const receiver = yield* turn({ SKALD_OTEL_RECORD_CONTENT: "true" })
        const execute = named(receiver.spans(), "execute_tool mcp__echo__echo")
        const args = String(execute.attributes["gen_ai.tool.call.arguments"])
        assert.include(args, MARKER)
        assert.include(args, "[redacted]")
        const result = String(execute.attributes["gen_ai.tool.call.result"])
        assert.include(result, MARKER)
        assert.include(result, "[redacted]")
        noByteHas(receiver, STORED, API_KEY)
      }))

    it.scopedLive("a sub-agent's turn nests under its dispatch_agent span; a failed model request has error.type", () =>
      Effect.gen(function*() {
        const receiver = yield* turn({}, [
          ModelStandin.toolCalls([{ id: "d1", name: "dispatch_agent", arguments: { agent: "tic", task: "say hi" } }]),
          ModelStandin.text("hi from tic"),
          ModelStandin.error(400, "this request is refused")
        ], { status: 2 })
        const spans = receiver.spans()
        const root = named(spans, "invoke_agent main")
        const dispatch = named(spans, "execute_tool dispatch_agent")
        const sub = named(spans, "invoke_agent tic")
        // The turn failed (its TurnFailed event): the root says why; the sub-agent's turn did not fail.
        assert.strictEqual(root.attributes["error.type"], "HttpResponseError")
        assert.notProperty(sub.attributes, "error.type")
        // Under it (through the tool's own DispatchAgent span).
        assert.include(ancestorsOf(spans, sub), dispatch.spanId)
        assert.strictEqual(sub.traceId, root.traceId)
        assert.notStrictEqual(sub.attributes["gen_ai.conversation.id"], root.attributes["gen_ai.conversation.id"])
        const subRound = spans.find((s) => s.name === "agent round" && s.parentSpanId === sub.spanId)
        assert.isDefined(subRound)
        assert.isTrue(spans.some((s) => s.name === "chat standin-model" && s.parentSpanId === subRound!.spanId))
        // The parent's second request failed: its chat span, its round and the turn say so.
        const failed = spans.filter((s) => s.name === "chat standin-model" && s.attributes["error.type"] !== undefined)
        assert.strictEqual(failed.length, 1, JSON.stringify(spans.map((s) => [s.name, s.attributes["error.type"]])))
        assert.strictEqual(failed[0]!.status.code, 2) // ERROR
        assert.strictEqual(failed[0]!.attributes["error.type"], "HttpResponseError")
        const round2 = spans.find((s) => s.spanId === failed[0]!.parentSpanId)!
        assert.deepInclude(round2.attributes, { "skald.agent.round": 2, "error.type": "HttpResponseError" })
        assert.isTrue(
          receiver.points().some((p) =>
            p.name === "gen_ai.client.operation.duration" && p.attributes["error.type"] === "HttpResponseError"
          )
        )
      }))

    it.scopedLive("the Anthropic provider's request is a chat span too, with gen_ai.provider.name anthropic", () =>
      Effect.gen(function*() {
        const receiver = yield* otlpReceiver
        const standin = yield* AnthropicStandin.start([AnthropicStandin.text("Hello there.", { input: 21, output: 4 })])
        const dir = yield* home
        const r = yield* skald(["agent", "run", "--home", dir, "--approve", "allow", "hello"], {
          ...json(receiver),
          SKALD_LLM_PROVIDER: "anthropic",
          SKALD_LLM_BASE_URL: standin.url,
          SKALD_LLM_MODEL: "claude-standin",
          SKALD_LLM_API_KEY: API_KEY
        })
        assert.strictEqual(r.status, 0, r.stderr)
        const chat = named(receiver.spans(), "chat claude-standin")
        assert.deepInclude(chat.attributes, {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": "anthropic",
          "gen_ai.request.model": "claude-standin",
          "gen_ai.usage.input_tokens": 21,
          "gen_ai.usage.output_tokens": 4
        })
        assert.strictEqual(chat.parentSpanId, named(receiver.spans(), "agent round").spanId)
        assert.isTrue(
          receiver.points().some((p) =>
            p.name === "gen_ai.client.token.usage" && p.attributes["gen_ai.provider.name"] === "anthropic"
          )
        )
        noByteHas(receiver, API_KEY)
      }))
  })
})
