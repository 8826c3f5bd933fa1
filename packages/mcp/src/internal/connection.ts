/**
 * What every part of one connection's engine shares, built once by `McpClient.make` and handed to
 * each part (requests, server requests, the tool cache, initialize, tasks, tools/call, the reader):
 * the transport, the server's name (which initialize may change), the log, the clock and the
 * options resolved to milliseconds. One object per connection, never one per message.
 */
import * as McpError from "@skald/domain/McpError"
import type * as McpTool from "@skald/domain/McpTool"
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { CallOutcome, Options } from "../McpClient.js"
import type * as McpLog from "../McpLog.js"
import * as Protocol from "../Protocol.js"
import type { Service as Transport } from "../Transport.js"
import * as TaskPoller from "./taskPoller.js"

/** A JSON object as it came off the wire. */
export type JsonObject = McpTool.JsonObject

/** The error code of "URL elicitation required" (2025-11-25). */
export const URL_ELICITATION_REQUIRED = -32042
/** Reason sent in `notifications/cancelled` when the waiting fiber was interrupted by a stop. */
export const STOP_REASON = "cancelled by the client"
/** Reason sent in `notifications/cancelled` when the call timeout fired. */
export const TIMEOUT_REASON = "timeout"

/** The client's options, resolved once. */
export interface Settings {
  readonly callTimeoutMillis: number
  readonly startTimeoutMillis: number
  readonly lateGraceMillis: number
  readonly resetOnProgress: boolean
  readonly maxTotalMillis: number
  readonly userDeadline: Duration.Duration
  readonly rootsWait: Duration.Duration
  readonly taskTtlMillis: number | undefined
  readonly taskBounds: TaskPoller.Bounds
  readonly maxToolPages: number
  readonly maxListPages: number
  readonly nameFromServerInfo: boolean
  readonly clientInfo: { readonly name: string; readonly version: string }
}

export const settings = (options: Options): Settings => ({
  callTimeoutMillis: Duration.toMillis(options.callTimeout ?? Protocol.DEFAULT_CALL_TIMEOUT_MILLIS),
  startTimeoutMillis: Duration.toMillis(options.startTimeout ?? Protocol.DEFAULT_START_TIMEOUT_MILLIS),
  lateGraceMillis: Duration.toMillis(options.taskHandleGrace ?? "10 seconds"),
  resetOnProgress: options.resetTimeoutOnProgress ?? true,
  maxTotalMillis: Duration.toMillis(options.maxTotalTimeout ?? Protocol.DEFAULT_MAX_TOTAL_TIMEOUT_MILLIS),
  userDeadline: Duration.decode(options.userDeadline ?? "5 minutes"),
  rootsWait: Duration.decode(options.rootsWait ?? Protocol.DEFAULT_ROOTS_WAIT_MILLIS),
  taskTtlMillis: options.taskTtl === undefined ? undefined : Duration.toMillis(options.taskTtl),
  taskBounds: {
    ...TaskPoller.defaultBounds,
    ...(options.maxTaskWait !== undefined ? { maxWaitMillis: Duration.toMillis(options.maxTaskWait) } : {}),
    ...(options.pollIntervalBounds !== undefined
      ? {
        minPollMillis: Duration.toMillis(options.pollIntervalBounds.min),
        maxPollMillis: Duration.toMillis(options.pollIntervalBounds.max)
      }
      : {})
  },
  maxToolPages: options.maxToolPages ?? Protocol.MAX_TOOL_PAGES,
  maxListPages: options.maxListPages ?? Protocol.MAX_TOOL_PAGES,
  nameFromServerInfo: options.nameFromServerInfo === true,
  clientInfo: options.clientInfo ?? Protocol.CLIENT_INFO
})

/** Classifies a plain `tools/call` answer where it is delivered. */
export type Finish = (name: string, tool: McpTool.McpTool | undefined, raw: unknown) => Effect.Effect<CallOutcome>

/** One connection's shared context. */
export class Connection {
  /**
   * The name in errors and log lines: the transport's, or (nameFromServerInfo) the server's own
   * once initialize has answered; errors the transport raises after that are relabelled.
   */
  server: string
  renamed = false
  /**
   * Classifies a plain `tools/call` answer as it is delivered; installed by the tools/call part
   * once initialize has told which features the server has. Only entries that part registers use
   * it, and it registers none before then.
   */
  finish: Finish = () => Exit.die(new Error("McpClient: a tools/call answer came before the client was built"))
  constructor(
    readonly transport: Transport,
    readonly settings: Settings,
    readonly clock: Clock.Clock,
    private readonly sink: McpLog.Sink
  ) {
    this.server = transport.server
  }
  /** Every line of this connection goes to the sink in place at connect time, whichever fiber logs it. */
  readonly log = (tag: McpLog.Tag, text: string): Effect.Effect<void> =>
    this.sink.emit({ server: this.server, tag, text })
  /** The server broke the protocol (`detail` says how). */
  readonly protocolError = (detail: string): McpError.McpProtocolError =>
    new McpError.McpProtocolError({ server: this.server, detail })
  readonly relabel = <E extends McpError.McpError>(error: E): E =>
    this.renamed ? McpError.withServer(error, this.server) : error
}
