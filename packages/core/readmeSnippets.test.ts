import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

const here = import.meta.dir
const root = resolve(here, '../..')
const readme = readFileSync(join(here, 'README.md'), 'utf8')
// Inside the repository (and git-ignored), so the snippets resolve the workspace packages as a user's file would.
const scratch = join(here, '.readme-snippets')
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** The fenced blocks of one language, in order. */
const blocks = (language: string) =>
  [...readme.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map(
    (match) => match[1] ?? '',
  )

/** Runs one snippet as its own module: under `bun test` when it declares tests, else as a script. */
async function run(code: string, index: number) {
  mkdirSync(scratch, { recursive: true })
  const declaresTests = code.includes("from 'bun:test'")
  const file = join(scratch, `snippet-${index}${declaresTests ? '.test' : ''}.ts`)
  writeFileSync(file, code)
  const child = Bun.spawn(declaresTests ? ['bun', 'test', file] : ['bun', file], {
    cwd: root,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { exitCode, output: stdout + stderr }
}

describe('packages/core/README.md', () => {
  test('behavior: every TypeScript snippet runs to the end without a failed assertion', async () => {
    const snippets = blocks('ts')
    expect(snippets.length).toBeGreaterThanOrEqual(7)
    for (const [index, code] of snippets.entries()) {
      const { exitCode, output } = await run(code, index)
      expect(exitCode, `snippet ${index} failed:\n${code}\n${output}`).toBe(0)
    }
  })

  test('behavior: the Hono snippet is examples/hono-node/app.js, word for word, in under 30 lines', () => {
    const app = readFileSync(join(root, 'examples/hono-node/app.js'), 'utf8')
    expect(blocks('js')).toContain(app)
    expect(app.trimEnd().split('\n').length).toBeLessThan(30)
  })
})
