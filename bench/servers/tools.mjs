// The tools both bench servers offer: echo, big (~100 KB of text), and 4,998 fillers, so that
// tools/list pages 5,000 tools 100 at a time.
export const TOOL_COUNT = 5000
export const PAGE = 100
export const big = "x".repeat(100 * 1024)
const schema = { type: "object", properties: { message: { type: "string" } } }

export const tools = [
  { name: "echo", description: "Echoes its message", inputSchema: schema },
  { name: "big", description: "Returns ~100 KB of text", inputSchema: { type: "object" } }
]
for (let i = 0; i < TOOL_COUNT - 2; i++) {
  tools.push({ name: `tool_${i}`, description: `Filler tool number ${i}`, inputSchema: schema })
}

/** One page of tools/list for a cursor (the cursor is the start index). */
export const listPage = (cursor) => {
  const start = cursor ? Number(cursor) : 0
  const page = tools.slice(start, start + PAGE)
  const next = start + PAGE < tools.length ? String(start + PAGE) : undefined
  return next ? { tools: page, nextCursor: next } : { tools: page }
}

/** The text a tools/call answers with. */
export const callText = (name, args) => (name === "big" ? big : String(args?.message ?? ""))
