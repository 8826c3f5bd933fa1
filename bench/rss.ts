/**
 * A preload (`node --import …/rss.js`) for the command-line section: when the process ends it
 * writes its own peak RSS in bytes and the CPU time it used in µs (`process.resourceUsage()`:
 * this process only, not its children) to the file named by `BENCH_RSS_FILE`.
 */
import * as Fs from "node:fs"

const file = process.env.BENCH_RSS_FILE
if (file !== undefined) {
  // Children (the MCP server) inherit the environment but not the preload; clear it anyway.
  delete process.env.BENCH_RSS_FILE
  process.on("exit", () => {
    const usage = process.resourceUsage()
    Fs.writeFileSync(file, `${usage.maxRSS * 1024} ${usage.userCPUTime + usage.systemCPUTime}`)
  })
}
