/**
 * Lazy MCP tool loading, below the turn loop: the `<!-- MCP_LIST -->` block (pure), and the round's
 * tools (agent/Catalog.ts), `activate_tools`, the `config` group and `dispatch_agent` against a
 * real manager on a temp home, with SDK fixture servers over stdio.
 */
import { assert, describe, it } from "@effect/vitest"
import { McpServerEntry, ServerName } from "@skald/domain"
import * as Catalog from "@skald/server/agent/Catalog"
import { ChatStore } from "@skald/server/agent/ChatStore"
import * as Grants from "@skald/server/agent/Grants"
import * as McpList from "@skald/server/agent/McpList"
import * as ActivateTools from "@skald/server/agent/tools/ActivateTools"
import * as ConfigTools from "@skald/server/agent/tools/ConfigTools"
import * as DispatchAgent from "@skald/server/agent/tools/DispatchAgent"
import { McpManager } from "@skald/server/host/McpManager"
import { SecretStore } from "@skald/server/host/SecretStore"
import { Cause, Context, Effect, Exit, Fiber, Layer } from "effect"
import * as Fs from "node:fs"
import { fixture } from "./fixtures/fixtures.js"
import { fixtureEntry, startManager, tempHome, waitForState } from "./host-support.js"
import { eventuallyEffect } from "./support.js"

const summary = (name: string, enabled = true, description?: string) =>
  McpServerEntry.ServerSummary.make({
    name: ServerName.make(name),
    transport: "stdio",
    enabled,
    state: enabled ? "connected" : "disabled",
    ...(description === undefined ? {} : { description })
  })

describe("the MCP_LIST block", () => {
  const servers = [
    summary("tavily", true, "Web search and content extraction"),
    summary("gmail", true, "Mail"),
    summary("off", false, "A disabled one"),
    summary("long", true, "x".repeat(500))
  ]

  it("no grants: every enabled server under Available with its (bounded) description, none Active", () => {
    const block = McpList.render({ servers, grants: [] })
    assert.include(block, "**Available** — call `activate_tools([\"name\"])` to load tools:")
    assert.include(block, "- `tavily`: Web search and content extraction")
    assert.include(block, "- `gmail`: Mail")
    assert.notInclude(block, "`off`")
    assert.include(block, `- \`long\`: ${"x".repeat(McpList.DESCRIPTION_MAX - 1)}…\n`)
    assert.include(block, "**Active**: none yet.")
  })

  it("grants: active servers (with bounded instructions), disabled and deleted grants said to offer nothing", () => {
    const grants = Grants.resolve(["gmail", "off", "gone", Grants.CONFIG_GROUP], servers)
    const block = McpList.render({
      servers,
      grants,
      instructions: new Map([["gmail", `Use labels. ${"y".repeat(2000)}`], ["off", "never shown"]])
    })
    assert.notInclude(block, "- `gmail`:")
    assert.include(
      block,
      "**Active** — tools callable as `mcp__<name>__<tool>`:\n- `gmail`\n  Instructions: Use labels."
    )
    const instructionLine = block.split("\n").find((l) => l.startsWith("  Instructions:"))!
    assert.isAtMost(instructionLine.length, "  Instructions: ".length + McpList.INSTRUCTIONS_MAX)
    assert.include(block, "- `off` (disabled: offers no tools until it is enabled again)")
    assert.include(block, "- `gone` (deleted: offers no tools unless it is registered again)")
    assert.notInclude(block, "never shown")
    assert.notInclude(block, "`config`") // the block is MCP-only
  })

  it("a prompt without the tag is unchanged; the tag is replaced where it stands", () => {
    assert.strictEqual(McpList.inject("You are x.", { servers, grants: [] }), "You are x.")
    const out = McpList.inject("Before.\n\n<!-- MCP_LIST -->\n\nAfter.", { servers, grants: [] })
    assert.isTrue(out.startsWith("Before.\n\n## MCP servers\n"))
    assert.isTrue(out.endsWith("\n\nAfter."))
    assert.notInclude(out, McpList.TAG)
  })

  it.effect("includes are resolved before the tag (an included file may carry it), nested and bounded", () =>
    Effect.gen(function*() {
      const files: Record<string, string> = {
        "shared/tools.md": "Tools:\n<!-- include: shared/inner.md -->\n",
        "shared/inner.md": "<!-- MCP_LIST -->",
        "loop.md": "<!-- include: loop.md -->"
      }
      const read = (f: string) =>
        Object.hasOwn(files, f) ? Effect.succeed(files[f]!) : Effect.fail(new Error(`no ${f}`))
      const resolved = yield* McpList.resolveIncludes("Main.\n<!-- include: shared/tools.md -->\nEnd.", read)
      assert.strictEqual(resolved, "Main.\nTools:\n<!-- MCP_LIST -->\nEnd.")
      assert.include(McpList.inject(resolved, { servers, grants: [] }), "- `tavily`: Web search")
      assert.strictEqual(
        yield* McpList.resolveIncludes("<!-- include: missing.md -->", read),
        "(the included file missing.md could not be read)"
      )
      // A file including itself stops at the bound.
      assert.strictEqual(yield* McpList.resolveIncludes("<!-- include: loop.md -->", read), "<!-- include: loop.md -->")
    }))
})

/** A manager on a temp home with two echo servers, plus the grants and chat tables and a session. */
const setup = Effect.gen(function*() {
  const home = yield* tempHome
  const { context } = yield* startManager(home)
  const full = yield* Layer.build(
    Layer.provideMerge(Layer.merge(Grants.Grants.Default, ChatStore.Default), Layer.succeedContext(context))
  )
  const provide = <A, E, R>(eff: Effect.Effect<A, E, R>) => Effect.provide(eff, full) as Effect.Effect<A, E, never>
  const manager = Context.get(full, McpManager)
  yield* manager.register(fixtureEntry("alpha", "echo"))
  yield* manager.register(fixtureEntry("beta", "echo"))
  yield* waitForState(manager, "alpha", "connected")
  yield* waitForState(manager, "beta", "connected")
  const session = (yield* provide(Effect.flatMap(ChatStore, (s) => s.createSession({ agent: "main" })))).id
  return { home, manager, provide, session, root: Grants.sessionScope(session) }
})

const names = (r: Catalog.Round) => ({ builtins: [...r.builtins.keys()].sort(), mcp: r.mcp.map((t) => t.name).sort() })

describe("the round's tools against a real manager", () => {
  it.scopedLive("no grants: the base tools only; activate_tools offers exactly that server's tools next", () =>
    Effect.gen(function*() {
      const { manager, provide, root } = yield* setup
      const before = names(yield* provide(Catalog.round({ scope: root, dispatch: true })))
      assert.deepStrictEqual(before, { builtins: ["activate_tools", "dispatch_agent"], mcp: [] })

      const servers = yield* manager.list
      const answer = yield* provide(ActivateTools.run(root, { groups: ["alpha", "nope"] }, servers))
      assert.deepStrictEqual(answer.activated, ["alpha"])
      assert.deepStrictEqual(answer.unknown, ["nope"])
      assert.deepStrictEqual(answer.available, ["alpha", "beta", "config"])
      assert.strictEqual(answer.scope, "session")
      assert.include(ActivateTools.answer(answer), "Activated alpha (scope: session)")
      assert.include(ActivateTools.answer(answer), "Unknown group(s): nope. Available groups: alpha, beta, config.")

      const after = yield* provide(Catalog.round({ scope: root, dispatch: true }))
      const alphaTools = (yield* manager.toolsFor(["alpha"])).map((t) => t.name).sort()
      assert.isAbove(alphaTools.length, 0)
      assert.deepStrictEqual(names(after).mcp, alphaTools)
      assert.isTrue(after.mcp.every((t) => t.server === "alpha"))
      // The list block, with the echo server's instructions under it.
      const prompt = yield* provide(Catalog.systemPrompt("<!-- MCP_LIST -->", after))
      assert.include(prompt.split("**Active**")[0]!, "- `beta`")
      assert.include(prompt, "- `alpha`\n  Instructions: Say something and it is said back.")

      const again = yield* provide(ActivateTools.run(root, { groups: ["alpha"] }, servers))
      assert.deepStrictEqual(again.alreadyActive, ["alpha"])
      // Bad arguments are an error the model reads.
      const bad = yield* provide(ActivateTools.run(root, { groups: [] }, servers)).pipe(Effect.flip)
      assert.strictEqual(bad._tag, "ToolInputError")
      // At the nesting bound, dispatch_agent is not offered; the visibility filter applies to all.
      const bounded = yield* provide(
        Catalog.round({ scope: root, dispatch: false, visible: (n) => n !== "mcp__alpha__echo" })
      )
      assert.deepStrictEqual(names(bounded).builtins, ["activate_tools"])
      assert.notInclude(names(bounded).mcp, "mcp__alpha__echo")
    }))

  it.scopedLive("a turn's kept round: the same object while nothing changed; made anew when a server goes, or after forget", () =>
    Effect.gen(function*() {
      const { manager, provide, root } = yield* setup
      const kept = Catalog.kept()
      const ask = (input: Partial<Catalog.RoundInput> = {}) =>
        provide(Catalog.round({ scope: root, dispatch: true, always: "all", kept, ...input }))
      const first = yield* ask()
      assert.includeMembers(names(first).mcp, ["mcp__alpha__echo", "mcp__beta__echo"])
      assert.strictEqual(yield* ask(), first)
      // Asked for something else (no dispatch_agent): another round.
      const bounded = yield* ask({ dispatch: false })
      assert.notStrictEqual(bounded, first)
      assert.notInclude(names(bounded).builtins, "dispatch_agent")
      const version = yield* manager.version
      // A server disconnected: the manager's version moved, and its tools are gone from the next round.
      yield* manager.setEnabled(ServerName.make("beta"), false)
      yield* eventuallyEffect(manager.toolsFor(["beta"]), (tools) => tools.length === 0, "beta's tools to be gone")
      assert.notStrictEqual(yield* manager.version, version)
      const without = yield* ask({ dispatch: false })
      assert.notInclude(names(without).mcp, "mcp__beta__echo")
      assert.include(names(without).mcp, "mcp__alpha__echo")
      assert.strictEqual(yield* ask({ dispatch: false }), without)
      // A built-in tool ran (Catalog.forget): read again, though nothing changed.
      Catalog.forget(kept)
      const reread = yield* ask({ dispatch: false })
      assert.notStrictEqual(reread, without)
      assert.deepStrictEqual(names(reread), names(without))
    }))

  it.scopedLive("the config group: hidden until activated; register, list, toggle, delete live; secrets never echoed", () =>
    Effect.gen(function*() {
      const { home, manager, provide, root } = yield* setup
      const run = (name: string, args: unknown) => provide(ConfigTools.run(name, args))
      assert.isFalse(
        names(yield* provide(Catalog.round({ scope: root, dispatch: true }))).builtins.includes("register_mcp")
      )
      yield* provide(ActivateTools.run(root, { groups: ["config"] }, yield* manager.list))
      assert.deepStrictEqual(
        names(yield* provide(Catalog.round({ scope: root, dispatch: true }))).builtins,
        [
          "activate_tools",
          "delete_mcp",
          "dispatch_agent",
          "list_items",
          "list_secrets",
          "register_mcp",
          "set_secret",
          "toggle_item"
        ]
      )

      const echo = fixture("echo")
      const registered = yield* run("register_mcp", {
        name: "gamma",
        transport: "stdio",
        command: echo.command,
        args: echo.args,
        env: { GAMMA_TOKEN: "s3cret-gamma" },
        description: "An echo server",
        friendly_name: "Gamma"
      })
      assert.include(registered, "Registered the MCP server gamma")
      yield* waitForState(manager, "gamma", "connected")
      // The env value went to the secret store, not the registry.
      assert.notInclude(Fs.readFileSync(`${home}/data/skald.db`).toString("latin1"), "s3cret-gamma")

      const listed = JSON.parse(yield* run("list_items", { type: "mcp" })) as Array<Record<string, unknown>>
      const gamma = listed.find((s) => s.name === "gamma")!
      assert.deepStrictEqual(
        { ...gamma, tool_count: typeof gamma.tool_count },
        {
          name: "gamma",
          status: "connected",
          enabled: true,
          description: "An echo server",
          friendly_name: "Gamma",
          tool_count: "number"
        }
      )
      assert.isAbove(gamma.tool_count as number, 0)
      assert.notInclude(JSON.stringify(listed), "s3cret")

      // Granted, then disabled: the grant stays and offers nothing; enabled again: offered again.
      yield* provide(ActivateTools.run(root, { groups: ["gamma"] }, yield* manager.list))
      assert.include(yield* run("toggle_item", { kind: "mcp", id: "gamma", enabled: false }), "disabled")
      yield* waitForState(manager, "gamma", "disabled")
      const off = yield* provide(Catalog.round({ scope: root, dispatch: true }))
      assert.deepStrictEqual(names(off).mcp, [])
      assert.include(McpList.render(off), "- `gamma` (disabled: offers no tools until it is enabled again)")
      yield* run("toggle_item", { kind: "mcp", id: "gamma", enabled: true })
      yield* waitForState(manager, "gamma", "connected")
      assert.isTrue(
        names(yield* provide(Catalog.round({ scope: root, dispatch: true }))).mcp.includes("mcp__gamma__echo")
      )

      assert.include(yield* run("delete_mcp", { name: "gamma" }), "Deleted")
      yield* waitForState(manager, "gamma", "absent")
      const gone = yield* provide(Catalog.round({ scope: root, dispatch: true }))
      assert.deepStrictEqual(names(gone).mcp, [])
      assert.deepStrictEqual(gone.grants.map((g) => [g.name, g.state]), [["config", "config"], [
        "gamma",
        "not registered"
      ]])
      const unknown = yield* run("delete_mcp", { name: "gamma" }).pipe(Effect.flip)
      assert.strictEqual(unknown._tag, "UnknownServer")

      // Secrets: the value is never in an answer.
      const set = yield* run("set_secret", { name: "API_TOKEN", value: "value-never-echoed" })
      assert.include(set, "API_TOKEN")
      assert.notInclude(set, "value-never-echoed")
      const secrets = yield* run("list_secrets", {})
      assert.include(secrets, "API_TOKEN")
      assert.notInclude(secrets, "value-never-echoed")
      assert.notInclude(secrets, "s3cret-gamma")
      const badSecret = yield* run("set_secret", { name: "API_TOKEN", value: "value-never-echoed", extra: 1 }).pipe(
        Effect.flip
      )
      assert.notInclude(badSecret.message, "value-never-echoed")
      const stored = yield* provide(Effect.flatMap(SecretStore, (s) => s.get("API_TOKEN")))
      assert.isDefined(stored)

      // register_mcp's arguments follow the seed's table.
      const wrong = yield* run("register_mcp", { name: "x", transport: "stdio", url: "http://127.0.0.1:1" }).pipe(
        Effect.flip
      )
      assert.include(wrong.message, "a stdio server needs `command`")
      const exists = yield* run("register_mcp", { name: "alpha", transport: "http", url: "http://127.0.0.1:9/mcp" })
        .pipe(
          Effect.flip
        )
      assert.strictEqual(exists._tag, "ServerAlreadyRegistered")
    }))

  it.scopedLive("dispatch_agent: a frame starts at zero, activates its own; its grants vanish when it ends, the parent's stay", () =>
    Effect.gen(function*() {
      const { manager, provide, root } = yield* setup
      yield* provide(ActivateTools.run(root, { groups: ["alpha"] }, yield* manager.list))
      let frameScope: Grants.Scope | undefined
      const result = yield* provide(DispatchAgent.run(
        { scope: root, depth: 0 },
        { agent: "helper", task: "do it" },
        (frame) =>
          Effect.gen(function*() {
            frameScope = frame.scope
            assert.strictEqual(frame.depth, 1)
            assert.strictEqual(frame.agent, "helper")
            assert.deepStrictEqual(names(yield* Catalog.round({ scope: frame.scope, dispatch: true })).mcp, [])
            const a = yield* ActivateTools.run(frame.scope, { groups: ["beta"] }, yield* manager.list)
            assert.strictEqual(a.scope, `stack ${(frame.scope as { stack: string }).stack}`)
            const r = yield* Catalog.round({ scope: frame.scope, dispatch: true })
            assert.isTrue(r.mcp.every((t) => t.server === "beta"))
            return `done: ${frame.task}`
          })
      ))
      assert.strictEqual(result, "done: do it")
      const grants = yield* provide(
        Effect.flatMap(Grants.Grants, (g) => Effect.all([g.list(root), g.list(frameScope!)]))
      )
      assert.deepStrictEqual(grants, [["alpha"], []])

      // A frame stopped with its parent leaves nothing behind either.
      let stopped: Grants.Scope | undefined
      const fiber = yield* Effect.fork(
        provide(
          DispatchAgent.run({ scope: root, depth: 0 }, { agent: "h", task: "t" }, (frame) =>
            Effect.gen(function*() {
              stopped = frame.scope
              yield* ActivateTools.run(frame.scope, { groups: ["beta", "config"] }, yield* manager.list)
              return yield* Effect.never
            }))
        )
      )
      yield* Effect.yieldNow().pipe(Effect.repeat({ until: () => stopped !== undefined }))
      yield* provide(Effect.flatMap(Grants.Grants, (g) => g.list(stopped!))).pipe(
        Effect.repeat({ until: (l) => l.length === 2 })
      )
      const exit = yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause))
      assert.deepStrictEqual(yield* provide(Effect.flatMap(Grants.Grants, (g) => g.list(stopped!))), [])

      // Nesting is bounded.
      const deep = yield* provide(
        DispatchAgent.run({ scope: root, depth: 3 }, { agent: "h", task: "t" }, () => Effect.succeed("never"))
      ).pipe(Effect.flip)
      assert.include(deep.message, "at most 3 deep")
    }))
})
