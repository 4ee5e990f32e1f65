import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { runToEnd } from '../support/process.ts'

// The client's examples in packages/client/README.md and README.md's "Use the client" and "Owners, users and the
// feed" type-check against the client
// as a user's file would import it (`@agentmarket/client`), so a renamed method or option fails here.

const root = resolve(import.meta.dir, '../..')
// Inside the repository (and git-ignored), so the snippets resolve the workspace package as a user's file would.
const scratch = join(root, 'packages/client/.readme-snippets')
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
// tsc over the client and viem's types: the verdict is its exit and output; this bound only ends a hang.
const HANG_BOUND_MS = 600_000

/** The fenced TypeScript blocks of `text`. */
const tsBlocks = (text: string) =>
  [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '')

/** README.md's section under `heading`, up to the next `## `. */
function section(text: string, heading: string): string {
  const start = text.indexOf(heading)
  if (start < 0) throw new Error(`no ${heading}`)
  const end = text.indexOf('\n## ', start + heading.length)
  return text.slice(start, end < 0 ? undefined : end)
}

describe("the client's README examples", () => {
  test(
    'behavior: every TypeScript example of the client type-checks against @agentmarket/client',
    async () => {
      const snippets = [
        ...tsBlocks(readFileSync(join(root, 'packages/client/README.md'), 'utf8')),
        ...tsBlocks(section(readFileSync(join(root, 'README.md'), 'utf8'), '## Use the client')),
        ...tsBlocks(section(readFileSync(join(root, 'README.md'), 'utf8'), '### Owners, users and the feed')),
      ]
      expect(snippets.length).toBe(3)
      mkdirSync(scratch, { recursive: true })
      const files = snippets.map((code, index) => {
        const file = `snippet-${index}.ts`
        writeFileSync(join(scratch, file), code)
        return file
      })
      const config = {
        extends: '../../../tsconfig.json',
        include: files,
        compilerOptions: { noUnusedLocals: false },
      }
      writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify(config))
      const run = await runToEnd(['bunx', 'tsc', '--noEmit', '-p', join(scratch, 'tsconfig.json')], {
        cwd: root,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? root },
      })
      expect(run.stdout + run.stderr).toBe('')
      expect(run.exitCode).toBe(0)
    },
    HANG_BOUND_MS,
  )
})
