import { afterAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, readUntil } from './support/process.ts'

// Walks the README's "Try a paid order in two minutes" as a new user does: `bun start dev`, then each command it
// prints, pasted as it is. Every wait is on a condition (the text printed, the process's exit).
setDefaultTimeout(180_000)
const root = join(import.meta.dir, '..')
const readme = readFileSync(join(root, 'README.md'), 'utf8')
const section = readme.slice(
  readme.indexOf('## Try a paid order in two minutes'),
  readme.indexOf('## Commands'),
)

const port = freePort()
const dev = Bun.spawn(['bun', 'start', 'dev'], {
  cwd: root,
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', PORT: String(port) },
  stdout: 'pipe',
  stderr: 'pipe',
})
afterAll(() => dev.kill('SIGKILL'))

describe('agentmarket dev (README: "Try a paid order in two minutes")', () => {
  let printed = ''

  test('behavior: the README names the commands the sandbox prints', async () => {
    expect(section).toContain('bun start dev')
    printed = await readUntil(dev.stdout, (text) => text.includes('order.ts mpp'), 120_000)
    for (const rail of ['card', 'escrow', 'job', 'x402', 'mpp']) {
      expect(section).toContain(`bun examples/paid-order/order.ts ${rail}`)
      expect(printed).toContain(`bun examples/paid-order/order.ts ${rail}`)
    }
    expect(printed).toContain(`http://127.0.0.1:${port}`)
  })

  test("behavior: the sandbox's seller is live: its bot beats", async () => {
    // Until its first beat has landed (never: the test's timeout fails it).
    const agent = `http://127.0.0.1:${port}/api/community/agents/sandbox-seller`
    let status = ''
    while (status !== 'live') {
      if (status) await Bun.sleep(50)
      ;({ status } = ((await (await fetch(agent)).json()) as { heartbeat: { status: string } }).heartbeat)
    }
    expect(status).toBe('live')
  })

  for (const rail of ['card', 'escrow', 'job', 'x402', 'mpp'] as const) {
    test(`behavior: the printed ${rail} command, pasted as it is, orders, pays and sees the seller deliver`, async () => {
      const line = printed.split('\n').find((text) => text.trim().endsWith(`order.ts ${rail}`))
      expect(line).toBeDefined()
      const run = Bun.spawn(['bash', '-c', (line ?? '').trim()], {
        cwd: root,
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const [out, err, code] = await Promise.all([
        new Response(run.stdout).text(),
        new Response(run.stderr).text(),
        run.exited,
      ])
      expect({ code, err }).toEqual({ code: 0, err: '' })
      expect(out).toMatch(new RegExp(`paid task_[0-9a-f]+ by ${rail}`))
      expect(out).toMatch(
        /completed: http:\/\/127\.0\.0\.1:\d+\/api\/agents\/sandbox-seller\/tasks\/task_[0-9a-f]+/,
      )
    })
  }

  test('behavior: Ctrl-C stops the sandbox and removes its data', async () => {
    const folder = /data {8}(\S+)/.exec(printed)?.[1]
    expect(folder).toBeDefined()
    dev.kill('SIGINT')
    expect(await dev.exited).toBe(0)
    expect(existsSync(folder ?? '')).toBe(false)
    // Its seller bot met no error on any rail (a job once submitted is not submitted again: that reverts).
    const logged = await new Response(dev.stderr).text()
    expect(logged.split('\n').filter((line) => line.startsWith('sandbox seller:'))).toEqual([])
    const refused = await fetch(`http://127.0.0.1:${port}/api/health/live`).then(
      () => false,
      () => true,
    )
    expect(refused).toBe(true)
  })
})
