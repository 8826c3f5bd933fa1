/**
 * The host's database: one SQLite file (WAL) under the data folder, migrated on open by
 * numbered migrations. Everything else talks to `SqlClient` through the repositories, so
 * another SQL engine could replace SQLite by swapping this layer and the migrations' dialect.
 *
 * @since 0.1.0
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqliteMigrator from "@effect/sql-sqlite-node/SqliteMigrator"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Fs from "node:fs"
import { ensurePrivateDir, Paths, PRIVATE_FILE_MODE, privateFile } from "./Paths.js"

/** The numbered migrations, in order. Never edit one that has shipped: add the next. */
export const migrations = {
  "0001_mcp_servers": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE mcp_servers (
      name          TEXT PRIMARY KEY NOT NULL,
      transport     TEXT NOT NULL CHECK (transport IN ('stdio', 'http')),
      command       TEXT,
      args          TEXT NOT NULL DEFAULT '[]',
      env           TEXT NOT NULL DEFAULT '{}',
      url           TEXT,
      api_key       TEXT,
      description   TEXT,
      friendly_name TEXT,
      enabled       INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
      created_at    TEXT NOT NULL,
      updated_at    TEXT NOT NULL,
      CHECK ((transport = 'stdio' AND command IS NOT NULL) OR (transport = 'http' AND url IS NOT NULL))
    )`
  }),
  "0002_mcp_status": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE mcp_server_status (
      name       TEXT PRIMARY KEY NOT NULL,
      status     TEXT NOT NULL CHECK (status IN ('starting', 'connected', 'failed', 'disabled')),
      error      TEXT,
      tool_count INTEGER,
      pid        INTEGER,
      since      TEXT NOT NULL
    )`
    yield* sql`CREATE TABLE host_heartbeat (
      id         INTEGER PRIMARY KEY CHECK (id = 1),
      pid        INTEGER NOT NULL,
      started_at TEXT NOT NULL,
      beat_at    TEXT NOT NULL
    )`
  }),
  "0003_mcp_events": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE mcp_events (
      id           INTEGER PRIMARY KEY AUTOINCREMENT,
      server       TEXT NOT NULL,
      method       TEXT NOT NULL,
      params       TEXT,
      received_at  TEXT NOT NULL,
      status       TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'processed')),
      processed_at TEXT
    )`
    yield* sql`CREATE INDEX mcp_events_pending ON mcp_events (status, id)`
  }),
  "0004_app_meta": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE app_meta (
      key   TEXT PRIMARY KEY NOT NULL,
      value TEXT NOT NULL
    )`
  })
}

/** Opens (creating the data folder, 0700, and the file, 0600, if needed) and migrates the database. */
export const layer: Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient, unknown, Paths> = Layer.unwrapEffect(
  Effect.gen(function*() {
    const paths = yield* Paths
    const sidecars = [`${paths.database}-wal`, `${paths.database}-shm`]
    // The folder is 0700 and the database 0600 before SQLite opens it: SQLite gives the -wal and
    // -shm files it creates the database file's mode. A new file is created empty (a valid, empty
    // database) by this layer, before any connection holds a lock on it; an existing one is only
    // chmod-ed (by path: opening and closing it here would drop SQLite's locks).
    yield* Effect.sync(() => {
      ensurePrivateDir(paths.dataDir)
      try {
        Fs.closeSync(Fs.openSync(paths.database, "wx", PRIVATE_FILE_MODE))
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
      }
      for (const file of [paths.database, ...sidecars]) privateFile(file)
    })
    const client = SqliteClient.layer({ filename: paths.database }).pipe(
      Layer.tap(() => Effect.sync(() => sidecars.forEach(privateFile)))
    )
    const migrator = SqliteMigrator.layer({ loader: SqliteMigrator.fromRecord(migrations) }).pipe(
      Layer.provide(NodeContext.layer)
    )
    return Layer.provideMerge(migrator, client)
  })
)
