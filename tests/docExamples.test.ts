import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { TaskState } from '@a2a-js/sdk'
import { createClient, type RegisterInput } from '@agentmarket/client'
import { freePort, type MarketServer, startMarketServer } from './support/process.ts'

// The e-mail and A2A examples of the docs, run as a reader runs them, against a real `bun start`: the only edits are
// the address (the docs' port 2525 or 3000 becomes the test's free port). A doc example that stops working fails here.
setDefaultTimeout(120_000)
const root = join(import.meta.dir, '..')
const scratch = mkdtempSync(join(root, 'tests', '.doc-examples-'))
const servers: MarketServer[] = []
afterAll(() => {
  for (const server of servers) server.stop()
  rmSync(scratch, { recursive: true, force: true })
})

/** The first fenced block of `language` in `file` after the line holding `after`. */
function codeBlock(file: string, after: string, language: string): string {
  const text = readFileSync(join(root, file), 'utf8')
  const from = text.indexOf(after)
  expect(from).toBeGreaterThan(-1)
  const open = text.indexOf(`\`\`\`${language}\n`, from)
  const start = open + language.length + 4
  return text.slice(start, text.indexOf('\n```', start))
}

/** A skill as registration takes it. */
type SkillInput = NonNullable<RegisterInput['skills']>[number]

/** Runs `argv` in the scratch folder: its exit code and output. */
async function run(argv: string[]) {
  const child = Bun.spawn(argv, { cwd: scratch, stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { code, out, err }
}

/** Registers `name` selling `skills` on `base`, paid to `walletAddress` when given: its API key. */
async function register(base: string, name: string, skills: SkillInput[], walletAddress?: string) {
  const market = createClient({ baseUrl: base })
  const { apiKey } = await market.register({ name, skills, ...(walletAddress && { walletAddress }) })
  return apiKey
}

describe('the docs examples, run as written', () => {
  test('behavior: README "Orders by e-mail", the curl example, takes an order from ann@example.com', async () => {
    const smtpPort = freePort()
    const server = await startMarketServer({
      DATABASE_URL: `file:${join(scratch, 'mail.db')}`,
      MAIL_AUTH: 'off',
      SMTP_INBOUND_PORT: String(smtpPort),
    })
    servers.push(server)
    const key = await register(server.base, 'pinger', [{ name: 'ping' }])
    const example = codeBlock('README.md', 'authentication, no TLS. With curl:', 'sh')
    expect(example).toContain('localhost:2525')
    const result = await run(['bash', '-c', example.replaceAll('localhost:2525', `localhost:${smtpPort}`)])
    expect(result.code).toBe(0)
    const tasks = await fetch(`${server.base}/api/agents/pinger/tasks?status=all`, {
      headers: { authorization: `Bearer ${key}` },
    })
    const { tasks: list } = (await tasks.json()) as { tasks: { buyer_email: string; skill: string }[] }
    expect(list).toEqual([expect.objectContaining({ buyer_email: 'ann@example.com', skill: 'ping' })])
  })

  test('behavior: docs/a2a.md "A client, in a few lines" gets the menu by plain text, then a task by the data part', async () => {
    const server = await startMarketServer({ DATABASE_URL: `file:${join(scratch, 'a2a.db')}` })
    servers.push(server)
    await register(
      server.base,
      'scout',
      [{ name: 'Deep Search', type: 'purchasable', price: 1 }],
      '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    )
    const example = codeBlock('docs/a2a.md', '## A client, in a few lines', 'ts')
    expect(example).toContain('http://localhost:3000/')
    const script = join(scratch, 'a2a-example.ts')
    writeFileSync(
      script,
      `${example.replaceAll('http://localhost:3000/', `${server.base}/`)}\nconsole.log(JSON.stringify({ menu, task }))\n`,
    )
    const result = await run(['bun', script])
    expect(result.err).toBe('')
    expect(result.code).toBe(0)
    const { menu, task } = JSON.parse(result.out) as {
      menu: { parts: unknown[] }
      task: { id: string; status: { state: number } }
    }
    // Plain text is answered by a message naming the data part that orders each skill.
    expect(JSON.stringify(menu.parts)).toContain('"order":{"skill":"deep-search"')
    expect(task.id).toMatch(/^task_/)
    expect(task.status.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
  })
})
