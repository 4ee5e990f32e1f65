import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SMTPServer } from 'smtp-server'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { signedRequestHeaders } from '../packages/server/src/testing/http.ts'
import { outboxReaches } from './support/outbox.ts'
import { freePort, runToEnd, startMarketServer } from './support/process.ts'
import { sendMail } from './support/smtp.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-logs-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

type LogLine = {
  time: string
  level: string
  msg: string
  requestId?: string
  status?: number
  path?: string
}

/** JSON over HTTP; the answer, its body read. */
async function send(
  base: string,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...init.headers }
  if (init.body !== undefined) headers['content-type'] ??= 'application/json'
  const answer = await fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  })
  const text = await answer.text()
  return { status: answer.status, requestId: answer.headers.get('x-request-id'), text }
}

/** A chain RPC URL that cannot answer, carrying a key in each place providers put one (user, path, query). */
const RPC_WITH_KEYS =
  'http://rpc-user-secret:rpc-pass-secret@127.0.0.1:9/v2/rpc-path-secret?key=rpc-query-secret'

/** `bun start` on its own database file in the test folder, at log level `level`, its standard output piped. */
function loggingServer(file: string, level: string) {
  return startMarketServer(
    { DATABASE_URL: `file:${join(folder, file)}`, CHAIN_RPC_URL: RPC_WITH_KEYS, LOG_LEVEL: level },
    { stdout: 'pipe' },
  )
}

/** Stops `server` and returns all it wrote to standard output. */
async function stopAndRead(server: Awaited<ReturnType<typeof startMarketServer>>): Promise<string> {
  server.process.kill('SIGTERM')
  const output = await new Response(server.process.stdout as ReadableStream).text()
  await server.process.exited
  return output
}

/** The JSON lines of a log. */
const parsed = (output: string) =>
  output
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as LogLine)

describe('structured logs (bun start)', () => {
  test('behavior: one JSON line per request with the id echoed in X-Request-Id, and no secret in any line', async () => {
    const server = await loggingServer('market.db', 'info')
    const base = server.base
    const email = 'buyer.secret@example.com'
    const registered = await send(base, '/api/agents/register', {
      method: 'POST',
      body: {
        name: 'logged-seller',
        walletAddress: '0x1111111111111111111111111111111111111111',
        skills: [{ name: 'Deep Research', type: 'purchasable', price: 1 }, { name: 'Ping' }],
      },
      headers: { 'x-request-id': 'trace-from-proxy.1' },
    })
    const { apiKey, pairingCode } = JSON.parse(registered.text) as { apiKey: string; pairingCode: string }
    const ordered = await send(base, '/api/agents/logged-seller/tasks', {
      method: 'POST',
      body: { skill: 'ping' },
    })
    const { task_id: taskId } = JSON.parse(ordered.text) as { task_id: string }
    const owner = privateKeyToAccount(generatePrivateKey())
    const pairing = '/api/community/users/someone/pair-agent'
    const proof = await signedRequestHeaders(
      owner,
      {
        market: `http://localhost:${new URL(base).port}`,
        method: 'POST',
        path: pairing,
        body: JSON.stringify({ pairingCode }),
      },
      new Date(),
    )
    const answers = [
      registered,
      ordered,
      await send(base, `/api/agents/logged-seller/tasks/${taskId}`),
      await send(base, `/api/agents/logged-seller/tasks/${taskId}/verify-payment`, {
        method: 'POST',
        body: { tx_hash: `0x${'00'.repeat(32)}` },
      }),
      await send(base, '/api/agents/logged-seller/heartbeat', {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}` },
      }),
      await send(base, '/api/agents/logged-seller/tasks', {
        method: 'POST',
        body: { skill: 'deep-research', params: { topic: 'params-secret-topic' }, buyer_email: email },
      }),
      await send(base, pairing, {
        method: 'POST',
        body: { pairingCode },
        headers: { 'x-wallet-address': owner.address, ...proof },
      }),
      await send(base, '/api/community/users/someone/invite', {
        headers: { 'x-wallet-signature': `0x${'ab'.repeat(65)}`, 'x-wallet-timestamp': '1700000000' },
      }),
      await send(base, '/api/community/agents?q=search-secret-word'),
      await send(base, '/api/community/agents?q=nul%00-secret-word'),
      await send(base, '/api/agents/logged-seller', {
        method: 'PUT',
        body: { bio: 'bio\u0000-secret-text' },
        headers: { authorization: `Bearer ${apiKey}` },
      }),
      await send(base, '/api/no-such-route', { headers: { 'x-request-id': 'bad id\twith tab' } }),
      // An order with a payment to check: the chain is asked and cannot answer (503 chain_unavailable).
      await send(base, '/api/agents/logged-seller/tasks', {
        method: 'POST',
        body: {
          skill: 'deep-research',
          tx_hash: `0x${'11'.repeat(32)}`,
          payer_signature: `0x${'22'.repeat(65)}`,
        },
      }),
    ]
    const output = await stopAndRead(server)
    const lines = parsed(output)

    for (const line of lines) {
      expect(Date.parse(line.time)).not.toBeNaN()
      expect(['info', 'warn', 'error']).toContain(line.level)
    }
    // The start-up health checks are requests too.
    // A 5xx answer's line is a `request failed` warning.
    const requests = lines.filter(
      (line) =>
        (line.msg === 'request' || line.msg === 'request failed') && line.path !== '/api/community/health',
    )
    expect(requests).toHaveLength(answers.length)
    for (const answer of answers) {
      expect(answer.requestId).toMatch(/^[A-Za-z0-9._:-]{1,128}$/)
      expect(requests.find((line) => line.requestId === answer.requestId)?.status).toBe(answer.status)
    }
    expect(answers[0]?.requestId).toBe('trace-from-proxy.1')
    expect(answers.at(-2)?.requestId).not.toContain('bad id')
    // A NUL in a search or a bio is a 400 at validation, never a 500 from the database.
    expect(
      answers.filter((answer) => answer.text.includes('control characters')).map((a) => a.status),
    ).toEqual([400, 400])
    expect(lines.map((line) => line.msg)).toEqual(expect.arrayContaining(['listening', 'stopping']))

    for (const secret of [
      apiKey,
      pairingCode,
      proof['x-wallet-signature'],
      'ab'.repeat(65),
      email,
      'params-secret-topic',
      'search-secret-word',
      'nul-secret-word',
      'secret-text',
      taskId,
      taskId.slice(5),
      'rpc-user-secret',
      'rpc-pass-secret',
      'rpc-path-secret',
      'rpc-query-secret',
    ])
      expect(output).not.toContain(secret)
    // The chain was asked (and failed): its URL's keys are in no answer either.
    expect(answers.map((answer) => answer.status)).toContain(503)
    for (const answer of answers) expect(answer.text).not.toMatch(/rpc-(user|pass|path|query)-secret/)
  })

  test('attack: the database token and the relay password appear in no line, even when the relay refuses the password', async () => {
    // A relay that takes the password (so the server really sends it) and refuses it, as one with a rotated secret.
    const offered: string[] = []
    const relay = new SMTPServer({
      allowInsecureAuth: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onAuth: (auth, _session, callback) => {
        offered.push(auth.password ?? '')
        callback(new Error('Authentication refused'))
      },
    })
    const relayPort = freePort()
    await new Promise<void>((listening) => relay.listen(relayPort, '127.0.0.1', () => listening()))
    const database = `file:${join(folder, 'relay.db')}`
    const smtpPort = freePort()
    const server = await startMarketServer(
      {
        DATABASE_URL: database,
        DATABASE_AUTH_TOKEN: 'db-token-secret',
        SMTP_OUTBOUND_URL: `smtp://relay-user-secret:relay-pass-secret@127.0.0.1:${relayPort}`,
        SMTP_INBOUND_PORT: String(smtpPort),
        ORDER_MAILBOX: 'orders@market.test',
        MAIL_AUTH: 'off',
        CHAIN_RPC_URL: 'http://127.0.0.1:9',
        LOG_LEVEL: 'info',
      },
      { stdout: 'pipe' },
    )
    const messageId = `<logs-${Date.now()}@buyer.test>`
    await sendMail(smtpPort, {
      from: 'ann@buyer.test',
      to: 'orders@market.test',
      subject: 'No Such Skill',
      text: '{}',
      messageId,
    })
    // The reply's first attempt failed at the relay's refusal of the password.
    const row = await outboxReaches(database, messageId, (reply) => reply.lastError !== null)
    const output = await stopAndRead(server)
    await new Promise<void>((closed) => relay.close(() => closed()))
    expect(offered).toContain('relay-pass-secret')
    expect(output).toContain('mail relay refused sends')
    for (const secret of ['db-token-secret', 'relay-pass-secret', 'relay-user-secret']) {
      expect(output).not.toContain(secret)
      expect(row.lastError).not.toContain(secret)
    }
  }, 300_000)

  test('attack: a malformed setting is refused at start naming the variable, never its secret or the password in its URL', async () => {
    const entry = join(import.meta.dir, '../packages/server/src/main.ts')
    const cases: [Record<string, string>, string][] = [
      [
        { SMTP_OUTBOUND_URL: 'http://relay-user-secret:relay-pass-secret@mail.example:25/x' },
        'SMTP_OUTBOUND_URL="http://mail.example:25/…"',
      ],
      [
        { SMTP_OUTBOUND_URL: 'smtp//relay-user-secret:relay-pass-secret@mail.example' },
        'SMTP_OUTBOUND_URL is invalid',
      ],
      [
        { DATABASE_URL: 'mysql://db-user-secret:db-pass-secret@db.example/market' },
        'DATABASE_URL="mysql://db.example/…"',
      ],
      [
        { CHAIN_RPC_URL: 'ftp://rpc-user-secret@rpc.example/v2/rpc-path-secret?key=rpc-query-secret' },
        'CHAIN_RPC_URL="ftp://rpc.example/…"',
      ],
      [{ MPP_SECRET_KEY: 'mpp-secret-too-short' }, 'MPP_SECRET_KEY is invalid'],
      [{ PAIRING_SECRET: 'pairing-secret-too-short' }, 'PAIRING_SECRET is invalid'],
      [{ X402_SETTLER_KEY: 'settler-key-secret' }, 'X402_SETTLER_KEY is invalid'],
    ]
    for (const [env, named] of cases) {
      const run = await runToEnd(['bun', entry], {
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: ':memory:', PORT: String(freePort()), ...env },
      })
      const printed = `${run.stdout}${run.stderr}`
      expect(run.exitCode).toBe(1)
      expect(printed).toContain(named)
      expect(printed).not.toMatch(/secret/)
    }
  }, 300_000)

  test('behavior: LOG_LEVEL=off writes nothing and sends no X-Request-Id', async () => {
    const server = await loggingServer('quiet.db', 'off')
    const answer = await send(server.base, '/api/community/health')
    expect(answer.status).toBe(200)
    expect(answer.requestId).toBeNull()
    expect(await stopAndRead(server)).toBe('')
  })

  test('attack: requests without a usable Host (HTTP/1.0, Host a/b) get real answers, problems included, each with an id and a line', async () => {
    const server = await loggingServer('hostless.db', 'info')
    const port = Number(new URL(server.base).port)
    /** The raw answer to `head` (a request line and headers), sent on its own connection. */
    const raw = (head: string) =>
      new Promise<string>((done) => {
        let answer = ''
        const socket = connect(port, '127.0.0.1', () => socket.write(`${head}\r\n\r\n`))
        socket.on('data', (data) => {
          answer += data.toString()
        })
        socket.on('close', () => done(answer))
        socket.on('error', () => done(answer))
        setTimeout(() => socket.end(), 500)
      })
    const answers = [
      await raw('GET /api/no-such-route HTTP/1.0'),
      await raw('GET /api/community/agents?q=ping HTTP/1.0'),
      await raw('PUT /api/community/health HTTP/1.1\r\nHost: a/b\r\nX-Request-Id: hostless-1'),
      await raw('GET /api/agents/nobody/agent-card.json HTTP/1.1\r\nHost: "evil\\'),
    ]
    const output = await stopAndRead(server)
    const status = (answer: string) => Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1])
    expect(answers.map(status)).toEqual([404, 200, 405, 404])
    for (const answer of [answers[0], answers[2], answers[3]])
      expect(answer?.toLowerCase()).toContain('content-type: application/problem+json')
    expect(answers[2]?.toLowerCase()).toContain('x-request-id: hostless-1')
    const lines = parsed(output).filter(
      (line) => line.msg === 'request' && line.path !== '/api/community/health',
    )
    expect(lines.map((line) => [line.path, line.status])).toEqual([
      ['/api/no-such-route', 404],
      ['/api/community/agents', 200],
      ['/api/agents/nobody/agent-card.json', 404],
    ])
    for (const answer of answers) expect(answer.toLowerCase()).toMatch(/x-request-id: [a-z0-9._:-]+/)
    expect(output).not.toContain('"level":"error"')
  })
})
