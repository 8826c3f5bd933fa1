/**
 * The host's database: one SQLite file (WAL) under the data folder, migrated on open by
 * numbered migrations. Everything else talks to `SqlClient` through the repositories, so
 * another SQL engine could replace SQLite by swapping this layer and the migrations' dialect.
 *
 * @since 0.1.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqliteMigrator from "@effect/sql-sqlite-node/SqliteMigrator"
import * as Migrator from "@effect/sql/Migrator"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Fs from "node:fs"
import { DatabaseError } from "./HostError.js"
import m0001 from "./migrations/0001_mcp_servers.js"
import m0002 from "./migrations/0002_mcp_status.js"
import m0003 from "./migrations/0003_mcp_events.js"
import m0004 from "./migrations/0004_app_meta.js"
import m0005 from "./migrations/0005_status_process.js"
import m0006 from "./migrations/0006_chat.js"
import m0007 from "./migrations/0007_settings.js"
import m0008 from "./migrations/0008_status_cause.js"
import m0009 from "./migrations/0009_mcp_grants.js"
import m0010 from "./migrations/0010_inbox.js"
import m0011 from "./migrations/0011_approval_rules.js"
import m0012 from "./migrations/0012_server_roots.js"
import m0013 from "./migrations/0013_mcp_server_oauth.js"
import m0014 from "./migrations/0014_mcp_event_claims.js"
import m0015 from "./migrations/0015_chat_append_triggers.js"
import m0016 from "./migrations/0016_chat_session_parent.js"
import m0017 from "./migrations/0017_guest_process_groups.js"
import m0018 from "./migrations/0018_stack_grant_owners.js"
import { ensurePrivateDir, Paths, PRIVATE_FILE_MODE, privateFile } from "./Paths.js"
import * as Rows from "./Rows.js"

/** The database file exists but cannot be used: it is empty, not SQLite, or corrupt. */
export class DatabaseUnusable extends Schema.TaggedError<DatabaseUnusable>("@skald/server/DatabaseUnusable")(
  "DatabaseUnusable",
  { path: Schema.String, reason: Schema.String }
) {
  override get message(): string {
    return `the database ${this.path} cannot be used: ${this.reason}. Restore it from a backup, ` +
      "or move it aside to start with an empty registry (a new database is created where none exists)"
  }
}

/** The first 16 bytes of every SQLite 3 database file. */
const SQLITE_HEADER = Buffer.from("SQLite format 3\0", "latin1")

/**
 * Checks an existing file before SQLite opens it: SQLite takes a zero-byte file for a new database
 * (and would silently start an empty registry over it), so it is refused, as is a file without
 * the SQLite header. A missing file is fine: it is created.
 */
export const checkFile = (path: string): Effect.Effect<void, DatabaseUnusable> => {
  const unreadable = (error: unknown) =>
    new DatabaseUnusable({
      path,
      reason: `it cannot be read (${error instanceof Error ? error.message : String(error)})`
    })
  return Effect.gen(function*() {
    if (!(yield* Effect.sync(() => Fs.existsSync(path)))) return
    const head = Buffer.alloc(16)
    const read = yield* Effect.acquireUseRelease(
      Effect.try({ try: () => Fs.openSync(path, "r"), catch: unreadable }),
      (fd) => Effect.try({ try: () => Fs.readSync(fd, head, 0, 16, 0), catch: unreadable }),
      (fd) => Effect.sync(() => Fs.closeSync(fd))
    )
    if (read === 0) return yield* new DatabaseUnusable({ path, reason: "the file is empty (0 bytes)" })
    if (read < 16 || !head.equals(SQLITE_HEADER)) {
      return yield* new DatabaseUnusable({
        path,
        reason: "it is not a SQLite database (it does not start with the SQLite header)"
      })
    }
  })
}

/** What SQLite said, when a failure (or defect) of opening or migrating is a damaged file. */
const unusableReason = (cause: Cause.Cause<unknown>): string | undefined => {
  for (const error of [...Cause.failures(cause), ...Cause.defects(cause)]) {
    // better-sqlite3's SqliteError carries the code; a SqlError wraps it as its cause.
    for (let e: unknown = error, depth = 0; typeof e === "object" && e !== null && depth < 4; depth++) {
      const code = (e as { code?: unknown }).code
      const said = `(SQLite: ${String((e as { message?: unknown }).message)})`
      if (typeof code === "string" && code.startsWith("SQLITE_CORRUPT")) return `it is corrupt ${said}`
      if (code === "SQLITE_NOTADB") return `it is not a SQLite database ${said}`
      e = (e as { cause?: unknown }).cause
    }
  }
  return undefined
}
/**
 * A failure (or defect: the migrator dies with the `MigrationError` of a migration that failed) to
 * open or migrate a database that is not a damaged file. A migration that cannot be applied (a
 * table another tool created, a file from a newer version) makes it `DatabaseUnusable`; any other
 * failure (a folder not writable, …) is a `DatabaseError`.
 */
const openingFailed = (path: string, cause: Cause.Cause<unknown>): DatabaseError | DatabaseUnusable | undefined => {
  for (const error of [...Cause.failures(cause), ...Cause.defects(cause)]) {
    if (error instanceof Migrator.MigrationError) {
      const sqlite = error.cause instanceof SqlError ? Rows.databaseError("")(error.cause) : undefined
      const reason = sqlite === undefined ? error.message : `${error.message} (SQLite: ${sqlite.reason})`
      return new DatabaseUnusable({ path, reason: `its migrations cannot be applied: ${reason}` })
    }
    if (error instanceof SqlError) return Rows.databaseError(`open the database ${path}`)(error)
  }
  const failure = Cause.failureOption(cause)
  return Option.isSome(failure)
    ? new DatabaseError({ operation: `open the database ${path}`, reason: String(failure.value) })
    : undefined
}

/**
 * The numbered migrations, in order, one file each under `migrations/`. Never edit one that has
 * shipped: add the next file and its line here.
 */
export const migrations = {
  "0001_mcp_servers": m0001,
  "0002_mcp_status": m0002,
  "0003_mcp_events": m0003,
  "0004_app_meta": m0004,
  "0005_status_process": m0005,
  "0006_chat": m0006,
  "0007_settings": m0007,
  "0008_status_cause": m0008,
  "0009_mcp_grants": m0009,
  "0010_inbox": m0010,
  "0011_approval_rules": m0011,
  "0012_server_roots": m0012,
  "0013_mcp_server_oauth": m0013,
  "0014_mcp_event_claims": m0014,
  "0015_chat_append_triggers": m0015,
  "0016_chat_session_parent": m0016,
  "0017_guest_process_groups": m0017,
  "0018_stack_grant_owners": m0018
}

/**
 * Opens (creating the data folder, 0700, and the file, 0600, if needed) and migrates the database.
 * An existing file that is empty, not SQLite, or corrupt fails with `DatabaseUnusable`, and is left
 * untouched; any other failure to open or migrate it is a `DatabaseError`.
 */
export const layer: Layer.Layer<
  SqlClient.SqlClient | SqliteClient.SqliteClient,
  DatabaseUnusable | DatabaseError,
  Paths
> = Layer.unwrapEffect(
  Effect.gen(function*() {
    const paths = yield* Paths
    const sidecars = [`${paths.database}-wal`, `${paths.database}-shm`]
    // The folder is 0700 and the database 0600 before SQLite opens it: SQLite gives the -wal and
    // -shm files it creates the database file's mode. A new file is created empty (a valid, empty
    // database) by this layer, before any connection holds a lock on it; an existing one is only
    // chmod-ed (by path: opening and closing it here would drop SQLite's locks).
    yield* Effect.sync(() => ensurePrivateDir(paths.dataDir))
    yield* checkFile(paths.database)
    yield* Effect.sync(() => {
      try {
        Fs.closeSync(Fs.openSync(paths.database, "wx", PRIVATE_FILE_MODE))
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      }
      for (const file of [paths.database, ...sidecars]) privateFile(file)
    })
    const client = SqliteClient.layer({ filename: paths.database }).pipe(
      Layer.tap((context) =>
        Effect.sync(() => sidecars.forEach(privateFile)).pipe(
          // WAL with synchronous=NORMAL: a commit is not fsync-ed (the WAL is at checkpoints), which
          // costs ~0.1-0.2 ms per write here. A crash of the process loses nothing committed; a power
          // loss or an OS crash may roll back the last commits, never corrupt the file (docs/manager.md).
          Effect.zipRight(Context.get(context, SqliteClient.SqliteClient)`PRAGMA synchronous = NORMAL`)
        )
      )
    )
    const migrator = SqliteMigrator.layer({ loader: SqliteMigrator.fromRecord(migrations) }).pipe(
      Layer.provide(NodeContext.layer)
    )
    return Layer.provideMerge(migrator, client).pipe(
      Layer.catchAllCause(
        (cause): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient, DatabaseUnusable | DatabaseError> => {
          const reason = unusableReason(cause)
          if (reason !== undefined) return Layer.fail(new DatabaseUnusable({ path: paths.database, reason }))
          const failed = openingFailed(paths.database, cause)
          return failed === undefined ? Layer.failCause(cause as Cause.Cause<never>) : Layer.fail(failed)
        }
      )
    )
  })
)
