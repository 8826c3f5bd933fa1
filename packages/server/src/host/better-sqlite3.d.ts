/**
 * The part of better-sqlite3's API (the driver under @effect/sql-sqlite-node, which ships no
 * types of its own) that the approval gate's reader uses (inbox/ApprovalRules.ts).
 */
declare module "better-sqlite3" {
  interface Statement<P extends Array<unknown>, R> {
    pluck(): Statement<P, R>
    get(...params: P): R | undefined
    all(...params: P): Array<R>
  }
  interface Database {
    prepare<P extends Array<unknown>, R>(sql: string): Statement<P, R>
    close(): void
  }
  interface Options {
    readonly readonly?: boolean
    readonly fileMustExist?: boolean
  }
  const Database: new(filename: string, options?: Options) => Database
  export default Database
}
