/**
 * The 13 tools (seed: "SSH MCP Server"): aliases, exec with sudo, the SFTP text tools,
 * upload/download, sysinfo and systemd. Every handler turns a `ToolError` into an `isError`
 * result with its message, and every text that leaves (results, log lines) passes the redactor.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js"
import { z } from "zod"
import { ALIAS_NAME, AliasStore, AUTH_METHODS, connectionKey, HOST, SUDO_METHODS, USER } from "./aliases.js"
import type { Alias } from "./aliases.js"
import type { Config } from "./config.js"
import * as Diagnostics from "./diagnostics.js"
import { messageOf, ToolError } from "./errors.js"
import * as Exec from "./exec.js"
import * as FsTools from "./fsTools.js"
import type { Log } from "./log.js"
import type { Connection, Pool } from "./pool.js"
import type { CallContext, Secrets } from "./secrets.js"
import * as Transfer from "./transfer.js"

export interface Deps {
  readonly config: Config
  readonly aliases: AliasStore
  readonly pool: Pool
  readonly secrets: Secrets
  readonly log: Log
}

type Extra = { readonly signal: AbortSignal; readonly requestId?: string | number }

const text = (value: string, isError = false): CallToolResult => ({
  content: [{ type: "text", text: value }],
  ...(isError ? { isError: true } : {})
})

const aliasArg = z.string().regex(ALIAS_NAME).describe("The alias name (see list_aliases)")

export const register = (server: McpServer, deps: Deps): void => {
  const { aliases, config, log, pool, secrets } = deps

  /** Runs a handler: errors become isError results, every text is redacted. */
  const handle =
    <A>(tool: string, run: (args: A, ctx: CallContext) => Promise<CallToolResult>) =>
    async (args: A, extra: Extra): Promise<CallToolResult> => {
      const ctx: CallContext = { signal: extra.signal, requestId: extra.requestId }
      let result: CallToolResult
      try {
        result = await run(args, ctx)
      } catch (error) {
        if (error instanceof ToolError) result = text(error.message, true)
        else {
          log.error(`${tool}: unexpected error: ${messageOf(error)}`)
          result = text(`${tool} failed unexpectedly: ${messageOf(error)}`, true)
        }
      }
      return redactResult(result, secrets)
    }

  /** The alias's pooled connection for the duration of `use`. */
  const withConnection = async <A>(
    name: string,
    ctx: CallContext,
    use: (c: Connection, alias: Alias) => Promise<A>
  ) => {
    const alias = await aliases.get(name)
    return pool.use(name, alias, ctx, (c) => use(c, alias))
  }
  const withSftp = <A>(name: string, ctx: CallContext, use: (sftp: Awaited<ReturnType<Pool["sftp"]>>) => Promise<A>) =>
    withConnection(name, ctx, async (c) => use(await pool.sftp(c)))

  // --- aliases ----------------------------------------------------------------------------------

  server.registerTool(
    "list_aliases",
    {
      title: "List SSH aliases",
      description: "Lists the SSH aliases (name, user@host:port, auth, sudo method, host-key policy) and whether a " +
        "pooled connection is open. Aliases hold no secrets.",
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false }
    },
    handle<Record<string, never>>("list_aliases", async () => {
      const all = await aliases.all()
      if (all.size === 0) return text(`No aliases yet (${aliases.file}): add one with add_alias.`)
      const lines = [...all.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, a]) => {
        const status = pool.status(name)
        return [
          name,
          `${a.user}@${a.host}:${a.port}`,
          `auth=${a.auth}${a.key_path !== undefined ? ` key_path=${a.key_path}` : ""}`,
          `sudo=${a.sudo.method}`,
          `accept_new_host_key=${a.accept_new_host_key}`,
          status === undefined
            ? "not connected"
            : `connected (#${status.id}, ${status.busy ? "busy" : `idle ${Math.round(status.idleMs / 1000)} s`})`
        ].join("  ")
      })
      return text(lines.join("\n"))
    })
  )

  const addAliasInput = z.object({
    name: z.string().regex(ALIAS_NAME).describe("Alias name: letters, digits, '.', '_' or '-' (at most 64)"),
    host: z.string().regex(HOST).describe("Host name or IP address"),
    port: z.number().int().min(1).max(65535).default(22).describe("SSH port (default 22)"),
    user: z.string().regex(USER).describe("Login user"),
    auth: z.enum(AUTH_METHODS).default("key").describe(
      "key: SSH key / ssh-agent (an encrypted key's passphrase is asked for when needed); password: the login " +
        "password is asked for by elicitation when connecting. Never pass a password here."
    ),
    key_path: z.string().min(1).optional().describe(
      "Private key file for auth=key (default: ssh-agent and ~/.ssh/id_*)"
    ),
    sudo_method: z.enum(SUDO_METHODS).default("prompt").describe(
      "prompt: sudo -S, the password is asked for by elicitation when sudo wants it (the default; when in doubt use " +
        "this); nopasswd: sudo -n, never prompts — only when the user has a NOPASSWD rule, otherwise every sudo call " +
        "fails fast; none: sudo disabled"
    ),
    accept_new_host_key: z.boolean().default(false).describe(
      "Trust the host key on first connection and record it in known_hosts (a changed key is always rejected)"
    )
  }).strict()

  server.registerTool(
    "add_alias",
    {
      title: "Add or update an SSH alias",
      description:
        "Adds (or replaces) an SSH alias. No secret is ever stored: passwords and passphrases are asked for " +
        "by elicitation when a connection needs them and kept only in memory. Unknown hosts are rejected unless " +
        "accept_new_host_key=true.",
      inputSchema: addAliasInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false }
    },
    handle<z.infer<typeof addAliasInput>>("add_alias", async (args) => {
      const alias: Alias = {
        host: args.host,
        port: args.port,
        user: args.user,
        auth: args.auth,
        ...(args.key_path !== undefined ? { key_path: args.key_path } : {}),
        sudo: { method: args.sudo_method },
        accept_new_host_key: args.accept_new_host_key
      }
      if (alias.auth === "password" && alias.key_path !== undefined) {
        throw new ToolError("key_path only applies to auth=key")
      }
      const before = (await aliases.all()).get(args.name)
      const replaced = await aliases.put(args.name, alias)
      if (before !== undefined && connectionKey(before) !== connectionKey(alias)) {
        pool.closeAlias(args.name, "the alias changed")
        secrets.dropAlias(args.name)
      }
      log.info(`alias ${args.name} ${replaced ? "updated" : "added"}: ${alias.user}@${alias.host}:${alias.port}`)
      return text(
        `${
          replaced ? "Updated" : "Added"
        } alias ${args.name}: ${alias.user}@${alias.host}:${alias.port}, auth=${alias.auth}` +
          `${alias.key_path !== undefined ? ` (key ${alias.key_path})` : ""}, sudo=${alias.sudo.method}, ` +
          `accept_new_host_key=${alias.accept_new_host_key}.`
      )
    })
  )

  server.registerTool(
    "remove_alias",
    {
      title: "Remove an SSH alias",
      description:
        "Removes an alias, closes its pooled connection and forgets its cached secrets (known_hosts is left as is).",
      inputSchema: { name: aliasArg },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false }
    },
    handle<{ name: string }>("remove_alias", async ({ name }) => {
      const removed = await aliases.remove(name)
      pool.closeAlias(name, "the alias was removed")
      secrets.dropAlias(name)
      if (!removed) throw new ToolError(`no alias named ${JSON.stringify(name)}`)
      log.info(`alias ${name} removed`)
      return text(`Removed alias ${name}.`)
    })
  )

  // --- exec -------------------------------------------------------------------------------------

  const execOutput = {
    exit_code: z.number().int().nullable(),
    signal: z.string().nullable(),
    stdout: z.string(),
    stderr: z.string(),
    stdout_omitted_bytes: z.number().int(),
    stderr_omitted_bytes: z.number().int(),
    timed_out: z.boolean()
  }

  server.registerTool(
    "exec",
    {
      title: "Run a command over SSH",
      description:
        "Runs a shell command on the alias's host (no pty, stdin closed) and returns exit_code, stdout and " +
        "stderr (each capped; the middle of a long output is omitted). sudo=true runs it with sudo via /bin/sh -c " +
        "(sudo_user: as that user instead of root) using the alias's sudo method; a sudo password is asked for by " +
        "elicitation only when sudo wants one. The file tools run as the login user: for privileged writes use " +
        "exec with sudo and tee/install.",
      inputSchema: {
        alias: aliasArg,
        command: z.string().min(1).describe("The command line, run by the login shell (by /bin/sh -c under sudo)"),
        sudo: z.boolean().default(false).describe("Run with sudo (per the alias's sudo method)"),
        sudo_user: z.string().regex(USER).optional().describe("Run as this user with sudo -u (implies sudo)"),
        timeout: z.number().positive().optional().describe(
          `Seconds before the command is killed (default ${config.execTimeoutMs / 1000})`
        )
      },
      outputSchema: execOutput,
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true }
    },
    handle<
      { alias: string; command: string; sudo: boolean; sudo_user?: string | undefined; timeout?: number | undefined }
    >(
      "exec",
      async (args, ctx) => {
        const options: Exec.RunOptions = {
          timeoutMs: args.timeout !== undefined ? args.timeout * 1000 : config.execTimeoutMs,
          maxBytes: config.maxOutputBytes,
          ctx
        }
        const outcome = await withConnection(args.alias, ctx, (c, alias) =>
          args.sudo || args.sudo_user !== undefined
            ? Exec.runSudo(c, args.command, options, {
              aliasName: args.alias,
              alias,
              user: args.sudo_user,
              secrets,
              log
            })
            : Exec.run(c, args.command, options))
        return execResult(outcome, options.timeoutMs)
      }
    )
  )

  // --- SFTP text tools --------------------------------------------------------------------------

  server.registerTool(
    "read_file",
    {
      title: "Read a remote text file",
      description: "Reads a text file on the alias's host (SFTP, as the login user). Output: numbered lines " +
        "('     1<TAB>text', cat -n style), `limit` lines from line `offset`; a last line says how to read on.",
      inputSchema: {
        alias: aliasArg,
        path: z.string().min(1).describe("Remote path (relative paths and ~/ are from the login user's home)"),
        offset: z.number().int().min(1).default(1).describe("First line to show (1-based)"),
        limit: z.number().int().min(1).max(100_000).default(2000).describe("Number of lines to show")
      },
      annotations: { readOnlyHint: true, openWorldHint: true }
    },
    handle<{ alias: string; path: string; offset: number; limit: number }>("read_file", async (args, ctx) =>
      text(
        await withSftp(
          args.alias,
          ctx,
          (sftp) => FsTools.readFile(sftp, args.path, args.offset, args.limit, config.maxFileBytes)
        )
      ))
  )

  server.registerTool(
    "list_files",
    {
      title: "List a remote directory",
      description:
        "Lists a directory on the alias's host (SFTP). Output: its real path ending in '/', then one entry " +
        "a line relative to it: 'dir/', 'file  (N bytes)', 'link -> target', sorted by name; recursive descends " +
        "depth-first (not into symlinks).",
      inputSchema: {
        alias: aliasArg,
        path: z.string().min(1).default(".").describe("Remote directory (default: the login user's home)"),
        recursive: z.boolean().default(false),
        max_entries: z.number().int().min(1).max(100_000).default(1000)
      },
      annotations: { readOnlyHint: true, openWorldHint: true }
    },
    handle<{ alias: string; path: string; recursive: boolean; max_entries: number }>(
      "list_files",
      async (args, ctx) =>
        text(
          await withSftp(
            args.alias,
            ctx,
            (sftp) => FsTools.listFiles(sftp, args.path, args.recursive, args.max_entries)
          )
        )
    )
  )

  server.registerTool(
    "grep_files",
    {
      title: "Search remote files",
      description: "Searches text files under a remote path for a JavaScript regular expression (SFTP, recursive, " +
        "binary files skipped). Output: 'path:line: text' per match, paths relative to the searched directory.",
      inputSchema: {
        alias: aliasArg,
        pattern: z.string().min(1).describe("A JavaScript regular expression"),
        path: z.string().min(1).default(".").describe("File or directory to search (default: home)"),
        glob: z.string().optional().describe("Only files matching this glob (e.g. '*.conf', 'src/**/*.ts')"),
        ignore_case: z.boolean().default(false),
        max_results: z.number().int().min(1).max(10_000).default(200)
      },
      annotations: { readOnlyHint: true, openWorldHint: true }
    },
    handle<
      {
        alias: string
        pattern: string
        path: string
        glob?: string | undefined
        ignore_case: boolean
        max_results: number
      }
    >(
      "grep_files",
      async (args, ctx) =>
        text(
          await withSftp(args.alias, ctx, (sftp) =>
            FsTools.grepFiles(sftp, {
              pattern: args.pattern,
              path: args.path,
              glob: args.glob,
              ignoreCase: args.ignore_case,
              maxResults: args.max_results,
              maxFileBytes: config.maxFileBytes,
              maxFiles: 5000
            }))
        )
    )
  )

  server.registerTool(
    "edit_file",
    {
      title: "Edit a remote text file",
      description: "Replaces an exact string in a remote text file (SFTP, as the login user). old_string must occur " +
        "exactly once unless replace_all=true. An empty old_string creates a new file with new_string.",
      inputSchema: {
        alias: aliasArg,
        path: z.string().min(1),
        old_string: z.string().describe("The exact text to replace (whitespace included)"),
        new_string: z.string().describe("The replacement text"),
        replace_all: z.boolean().default(false)
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true }
    },
    handle<{ alias: string; path: string; old_string: string; new_string: string; replace_all: boolean }>(
      "edit_file",
      async (args, ctx) =>
        text(
          await withSftp(
            args.alias,
            ctx,
            (sftp) =>
              FsTools.editFile(sftp, args.path, args.old_string, args.new_string, args.replace_all, config.maxFileBytes)
          )
        )
    )
  )

  server.registerTool(
    "replace_lines",
    {
      title: "Replace lines of a remote text file",
      description: "Replaces lines start_line..end_line (1-based, inclusive) of a remote text file with new_content " +
        "(end_line = start_line - 1 inserts before start_line; empty new_content deletes). Answers with the new " +
        "lines and some context, numbered like read_file.",
      inputSchema: {
        alias: aliasArg,
        path: z.string().min(1),
        start_line: z.number().int().min(1),
        end_line: z.number().int().min(0),
        new_content: z.string()
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true }
    },
    handle<{ alias: string; path: string; start_line: number; end_line: number; new_content: string }>(
      "replace_lines",
      async (args, ctx) =>
        text(
          await withSftp(args.alias, ctx, (sftp) =>
            FsTools.replaceLines(
              sftp,
              args.path,
              args.start_line,
              args.end_line,
              args.new_content,
              config.maxFileBytes
            ))
        )
    )
  )

  // --- transfer ---------------------------------------------------------------------------------

  const destinationRule = "A destination ending in '/' or naming an existing directory receives the source inside it " +
    "(keeping its name); otherwise it is the exact target path. Missing parent directories are created."

  server.registerTool(
    "upload",
    {
      title: "Upload files",
      description: `Copies a local file or directory (recursively) to the alias's host over SFTP. ${destinationRule}`,
      inputSchema: {
        alias: aliasArg,
        local_path: z.string().min(1).describe("File or directory on the machine running this server"),
        remote_path: z.string().min(1).describe("Remote destination")
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true }
    },
    handle<{ alias: string; local_path: string; remote_path: string }>(
      "upload",
      async (args, ctx) =>
        text(await withSftp(args.alias, ctx, (sftp) => Transfer.upload(sftp, args.local_path, args.remote_path)))
    )
  )

  server.registerTool(
    "download",
    {
      title: "Download files",
      description: `Copies a remote file or directory (recursively) to this machine over SFTP. ${destinationRule}`,
      inputSchema: {
        alias: aliasArg,
        remote_path: z.string().min(1).describe("Remote file or directory"),
        local_path: z.string().min(1).describe("Local destination")
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true }
    },
    handle<{ alias: string; remote_path: string; local_path: string }>(
      "download",
      async (args, ctx) =>
        text(await withSftp(args.alias, ctx, (sftp) => Transfer.download(sftp, args.remote_path, args.local_path)))
    )
  )

  // --- diagnostics ------------------------------------------------------------------------------

  server.registerTool(
    "sysinfo",
    {
      title: "System information",
      description: "Host name, OS, kernel, uptime, load, CPUs, memory, root disk and init system of the alias's host " +
        "(one 'key: value' a line).",
      inputSchema: { alias: aliasArg },
      annotations: { readOnlyHint: true, openWorldHint: true }
    },
    handle<{ alias: string }>("sysinfo", async ({ alias }, ctx) => {
      const outcome = await withConnection(
        alias,
        ctx,
        (c) => Exec.run(c, Diagnostics.SYSINFO_SCRIPT, { timeoutMs: 30_000, maxBytes: config.maxOutputBytes, ctx })
      )
      if (outcome.exitCode !== 0 && outcome.stdout.trim() === "") {
        throw new ToolError(
          `sysinfo failed on alias ${alias} (exit ${outcome.exitCode ?? outcome.signal}): ${outcome.stderr.trim()}`
        )
      }
      return text(outcome.stdout.trimEnd())
    })
  )

  server.registerTool(
    "systemd",
    {
      title: "Manage systemd units",
      description:
        "systemctl/journalctl on the alias's host: status, is-active, is-enabled, list-units, list-failed, " +
        "logs (journalctl -u), and start/stop/restart/reload/enable/disable (with sudo by default). Answers at once " +
        "with an error when the host does not run systemd.",
      inputSchema: {
        alias: aliasArg,
        action: z.enum(Diagnostics.SYSTEMD_ACTIONS),
        unit: z.string().optional().describe("Unit name, e.g. nginx.service (list-units: an optional pattern)"),
        lines: z.number().int().min(1).max(10_000).default(50).describe("Log lines for status and logs"),
        sudo: z.boolean().optional().describe("Run with sudo (default: for start/stop/restart/reload/enable/disable)")
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true }
    },
    handle<
      {
        alias: string
        action: Diagnostics.SystemdAction
        unit?: string | undefined
        lines: number
        sudo?: boolean | undefined
      }
    >(
      "systemd",
      async (args, ctx) => {
        const command = Diagnostics.systemdCommand(args.action, args.unit, args.lines)
        const options: Exec.RunOptions = { timeoutMs: 60_000, maxBytes: config.maxOutputBytes, ctx }
        return withConnection(args.alias, ctx, async (c, alias) => {
          const probe = await Exec.run(c, Diagnostics.SYSTEMD_PROBE, { ...options, timeoutMs: 15_000 })
          const said = probe.stdout.trim()
          if (said !== "systemd") {
            const init = said.startsWith("no-systemd ") ? said.slice("no-systemd ".length) : "unknown"
            throw new ToolError(
              `systemd is not running on alias ${args.alias} (${alias.host}): PID 1 is '${init}', so systemctl cannot manage ` +
                `units there. Use exec with the host's own service tools (e.g. 'service <name> status' or its init scripts).`
            )
          }
          const sudo = args.sudo ?? (Diagnostics.MUTATING.has(args.action) && alias.user !== "root")
          const outcome = sudo
            ? await Exec.runSudo(c, command, options, { aliasName: args.alias, alias, user: undefined, secrets, log })
            : await Exec.run(c, command, options)
          const body = [outcome.stdout.trimEnd(), outcome.stderr.trimEnd()].filter((s) => s !== "").join("\n")
          return text(`$ ${command}\nexit code ${outcome.exitCode ?? outcome.signal}\n${body}`.trimEnd())
        })
      }
    )
  )
}

const execResult = (outcome: Exec.ExecOutcome, timeoutMs: number): CallToolResult => {
  const structured = {
    exit_code: outcome.exitCode,
    signal: outcome.signal,
    stdout: outcome.stdout,
    stderr: outcome.stderr,
    stdout_omitted_bytes: outcome.stdoutOmitted,
    stderr_omitted_bytes: outcome.stderrOmitted,
    timed_out: outcome.timedOut
  }
  const status = outcome.timedOut
    ? `timed out after ${timeoutMs / 1000} s (killed)`
    : outcome.exitCode !== null
    ? `exit code ${outcome.exitCode}`
    : `killed by signal ${outcome.signal ?? "?"}`
  const section = (name: string, body: string) =>
    `--- ${name} ---\n${body === "" ? "(empty)" : body.replace(/\n$/, "")}`
  return {
    content: [{
      type: "text",
      text: `${status}\n${section("stdout", outcome.stdout)}\n${section("stderr", outcome.stderr)}`
    }],
    structuredContent: structured,
    ...(outcome.timedOut ? { isError: true } : {})
  }
}

const redactResult = (result: CallToolResult, secrets: Secrets): CallToolResult => {
  const content = result.content.map((
    block
  ) => (block.type === "text" ? { ...block, text: secrets.redact(block.text) } : block))
  const structured = result.structuredContent === undefined
    ? undefined
    : redactValue(result.structuredContent, secrets) as Record<string, unknown>
  return { ...result, content, ...(structured !== undefined ? { structuredContent: structured } : {}) }
}

const redactValue = (value: unknown, secrets: Secrets): unknown => {
  if (typeof value === "string") return secrets.redact(value)
  if (Array.isArray(value)) return value.map((v) => redactValue(v, secrets))
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactValue(v, secrets)]))
  }
  return value
}
