/**
 * What imported values become (ConfigImport.mapReferences with a context): the editors'
 * variables resolve to what the file's location and the user say, Claude Code's defaults apply
 * only when the variable is set nowhere, and what cannot be resolved is refused with a reason.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigImport } from "@skald/server"
import { Either, FastCheck as fc } from "effect"
import * as Path from "node:path"

const segment = fc.stringMatching(/^[A-Za-z0-9 ._-]{1,12}$/).filter((s) =>
  s !== "." && s !== ".." && s.trim() === s && s.length > 0
)
const folder = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => `/${parts.join("/")}`)
const varName = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,12}$/)
const plain = fc.string({ maxLength: 20 }).filter((s) => !s.includes("${") && !s.includes("}"))

describe("import variables", () => {
  it.prop("${workspaceFolder} is the folder holding .vscode/ or .cursor/; ${userHome} the home given", [
    folder,
    fc.constantFrom(".vscode", ".cursor"),
    folder,
    plain
  ], ([project, editor, home, text]) => {
    const context = { file: Path.join(project, editor, "mcp.json"), userHome: home }
    assert.deepStrictEqual(
      ConfigImport.mapReferences(`\${workspaceFolder}/${text}`, context),
      Either.right(`${project}/${text}`)
    )
    assert.deepStrictEqual(
      ConfigImport.mapReferences("${workspaceFolderBasename}", context),
      Either.right(Path.basename(project))
    )
    assert.deepStrictEqual(ConfigImport.mapReferences(`${text}\${userHome}`, context), Either.right(`${text}${home}`))
  })

  it.prop("a file outside .vscode/ and .cursor/ has no workspace folder: refused, saying why", [
    folder,
    fc.constantFrom("mcp.json", ".mcp.json", "claude_desktop_config.json")
  ], ([dir, file]) => {
    if (/^\.(vscode|cursor)$/.test(Path.basename(dir))) return
    const mapped = ConfigImport.mapReferences("${workspaceFolder}/x", { file: Path.join(dir, file) })
    assert.isTrue(Either.isLeft(mapped))
    if (Either.isLeft(mapped)) assert.include(mapped.left, ".vscode/")
  })

  it.prop(
    "${VAR:-default}: the reference when VAR is set, the default when it is not",
    [varName, plain, fc.boolean()],
    ([name, fallback, set]) => {
      const mapped = ConfigImport.mapReferences(`\${${name}:-${fallback}}`, { isSet: () => set })
      assert.deepStrictEqual(mapped, Either.right(set ? `\${${name}}` : fallback))
      // Without knowing, the reference stays.
      assert.deepStrictEqual(ConfigImport.mapReferences(`\${${name}:-${fallback}}`), Either.right(`\${${name}}`))
    }
  )

  it.prop("${env:VAR} (Cursor, VS Code) becomes ${VAR}; ${input:…} and ${cwd} are refused", [varName], ([name]) => {
    assert.deepStrictEqual(
      ConfigImport.mapReferences(`\${env:${name}}`, { userHome: "/h" }),
      Either.right(`\${${name}}`)
    )
    assert.isTrue(Either.isLeft(ConfigImport.mapReferences(`\${input:${name}}`, { userHome: "/h" })))
    assert.isTrue(Either.isLeft(ConfigImport.mapReferences("${cwd}/x", { userHome: "/h" })))
  })
})
