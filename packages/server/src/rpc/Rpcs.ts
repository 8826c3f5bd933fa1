/**
 * Every RPC group the host serves (Agent, Inbox, Mcp, Host, Tic), merged: what the host's RPC
 * server (RpcServer.ts) serves and what the command line's client of the host (cli/RpcHost.ts)
 * calls. A module of its own so that a client loads only the groups' schemas, not the handlers
 * behind them (the agent, the TIC, their model providers).
 *
 * @since 0.1.0
 */
import { AgentRpcs, HostRpcs, InboxRpcs, McpRpcs, TicRpcs } from "@skald/domain"

/** Every group the host serves. */
export class Rpcs extends AgentRpcs.AgentRpcs.merge(
  InboxRpcs.InboxRpcs,
  McpRpcs.McpRpcs,
  HostRpcs.HostRpcs,
  TicRpcs.TicRpcs
) {}
