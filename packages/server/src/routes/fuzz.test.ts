import { afterAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import fc from 'fast-check'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { testApp } from '../testing/http.ts'

/** Cases per run: thousands, bounded so the file stays a few seconds. */
const RUNS = 2_000
const folder = mkdtempSync(join(tmpdir(), 'agentmarket-fuzz-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

type Operation = { method: string; path: string; statuses: number[]; query: string[] }
type OpenApi = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, unknown>; parameters?: { in: string; name: string }[] }>
  >
}

/** Every operation of the served OpenAPI document, with the statuses it documents. */
function operationsOf(document: OpenApi): Operation[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path,
      statuses: Object.keys(operation.responses).map(Number),
      query: (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
    })),
  )
}

/** A digest of every row of every table (the search index's own tables aside): equal digests, nothing changed. */
async function digestOf(database: ReturnType<typeof createClient>): Promise<string> {
  const tables = await database.execute(
    "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like 'agent_search%' order by name",
  )
  const hash = createHash('sha256')
  for (const row of tables.rows) {
    const rows = await database.execute(`select * from "${String(row[0])}" order by 1`)
    hash.update(JSON.stringify(rows.rows, (_, value) => (typeof value === 'bigint' ? String(value) : value)))
  }
  return hash.digest('hex')
}

/** Header-safe printable ASCII (space to tilde). */
const text = (maxLength = 40) =>
  fc
    .string({ unit: 'grapheme-ascii', maxLength })
    .map((value) => [...value].filter((char) => char >= ' ' && char <= '~').join(''))

/** A fresh libSQL file and a reader of it beside the app. */
async function freshMarket(name: string) {
  const databaseUrl = `file:${join(folder, `${name}.db`)}`
  const app = await testApp('2026-06-01T12:00:00.000Z', { databaseUrl })
  return { app, database: createClient({ url: databaseUrl }) }
}

describe('property-based fuzzing of every OpenAPI operation', () => {
  test('error: every operation refused on a database where no secret was made yet (no endpoint added, no code issued) writes nothing: a check reads the secret it would compare with, never makes it', async () => {
    // Seen by the fuzzing below (seed 997654832): a task endpoint's deletion with a wrong secret made the webhook key.
    const { app, database } = await freshMarket('unmade-secrets')
    // No agent yet, so no pairing secret either: a code sent to be spent finds nothing and makes none (its signed
    // proof is spent, as every checked proof is, so it cannot be replayed).
    const settings = async () =>
      (await database.execute("select key from kv where key like 'setting:%'")).rows.map((row) => row.key)
    const pairing = await app.pair('someone', 'AGM-ABCD-EFGH', privateKeyToAccount(generatePrivateKey()))
    expect(pairing.status, pairing.text).toBe(404)
    expect(await settings()).toEqual([])
    const scout = await app.register('Scout', { skills: ['ping'] })
    const task = await app.call('POST', '/api/agents/Scout/tasks', { body: { skill: 'ping' } })
    const operations = operationsOf((await app.call('GET', '/api/openapi.json')).json as OpenApi)
    const credentials = [undefined, `Bearer ${scout.key.slice(0, -1)}0`, 'Bearer whsec_bm9wZQ', 'Payment abc']
    const bodies = [
      undefined,
      '{}',
      JSON.stringify({ pairingCode: 'AGM-ABCD-EFGH', name: 'x', skill: 'ping' }),
    ]
    let refused = 0
    for (const { method, path } of operations)
      for (const authorization of credentials)
        for (const body of method === 'GET' ? [undefined] : bodies) {
          const before = await digestOf(database)
          const url = path
            .replace('{name}', 'scout')
            .replace('{username}', 'someone')
            .replace('{id}', task.json.task_id)
            .replace(/\{[^}]+\}/g, 'wh_0123456789abcdef')
          const answer = await app.call(method, url, {
            body,
            headers: {
              ...(authorization && { authorization }),
              ...(body !== undefined && { 'content-type': 'application/json' }),
              'x-wallet-address': '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed',
              'x-wallet-signature': `0x${'1b'.repeat(65)}`,
              'x-wallet-timestamp': '1780315200',
            },
          })
          if (answer.status < 400) continue
          refused++
          expect(await digestOf(database), `${method} ${url} -> ${answer.status} ${answer.text}`).toBe(before)
        }
    database.close()
    expect(refused).toBeGreaterThan(operations.length)
  }, 300_000)

  test('error: random parameters, queries, headers and bodies get a documented status, problems as problem+json, never a 5xx; refusals change nothing', async () => {
    const databaseUrl = `file:${join(folder, 'market.db')}`
    const app = await testApp('2026-06-01T12:00:00.000Z', { databaseUrl })
    const scout = await app.register('Scout', {
      skills: ['ping', { name: 'Deep', type: 'purchasable', price: 0.5 }],
    })
    const other = await app.register('Other')
    await app.call('PUT', '/api/agents/Scout', {
      key: scout.key,
      body: { walletAddress: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed' },
    })
    const task = await app.call('POST', '/api/agents/Scout/tasks', { body: { skill: 'ping' } })
    const operations = operationsOf((await app.call('GET', '/api/openapi.json')).json as OpenApi)
    expect(operations.length).toBeGreaterThan(20)
    const database = createClient({ url: databaseUrl })

    const segment = fc.oneof(
      fc.constantFrom('Scout', 'scout', 'Other', 'ghost', task.json.task_id as string, 'ping', 'deep'),
      fc.stringMatching(/^[A-Za-z0-9_-]{1,60}$/),
      // Never empty: `/tasks/` with an empty id is another operation's path (the list), not a value of this one.
      text().filter((value) => value.length > 0),
    )
    const body = fc.oneof(
      fc.constant(undefined),
      fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
      fc
        .record(
          {
            name: fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{2,12}$/), text(), fc.integer()),
            skill: fc.oneof(fc.constantFrom('ping', 'deep'), text()),
            skills: fc.array(
              fc.oneof(
                text(10),
                fc.record({
                  name: text(10),
                  type: fc.constantFrom('free', 'purchasable'),
                  price: fc.double(),
                }),
              ),
            ),
            bio: fc.oneof(text(200), fc.constant(null)),
            date: fc.oneof(fc.constant('2026-01-01'), text(12)),
            title: text(),
            proof: fc.oneof(fc.constant('https://example.com/p'), text()),
            tx_hash: fc.oneof(fc.stringMatching(/^0x[0-9a-f]{64}$/), text()),
            result_url: fc.oneof(fc.constant('https://example.com/r'), text()),
            walletAddress: fc.oneof(fc.stringMatching(/^0x[0-9a-fA-F]{40}$/), text()),
            pairingCode: text(14),
            params: fc.jsonValue({ maxDepth: 3 }),
          },
          { requiredKeys: [] },
        )
        .map((value) => JSON.stringify(value)),
      text(200),
    )
    const headers = fc.record(
      {
        authorization: fc.oneof(
          fc.constantFrom(
            `Bearer ${scout.key}`,
            `Bearer ${other.key}`,
            'Bearer amk_nope',
            'Payment abc',
            'Basic x',
          ),
          text(),
        ),
        'content-type': fc.oneof(
          fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded'),
          text(),
        ),
        'x-wallet-address': fc.oneof(fc.stringMatching(/^0x[0-9a-fA-F]{40}$/), text()),
        'x-wallet-signature': fc.oneof(fc.stringMatching(/^0x[0-9a-f]{130}$/), text()),
        'x-wallet-timestamp': fc.oneof(
          fc.integer({ min: 1_780_000_000, max: 1_800_000_000 }).map(String),
          text(12),
        ),
        'idempotency-key': text(),
      },
      { requiredKeys: [] },
    )
    const query = (names: string[]) =>
      fc.dictionary(
        fc.constantFrom(...names, 'x'),
        fc.oneof(
          fc.integer({ min: -5, max: 500 }).map(String),
          text(),
          fc.constantFrom('completed', 'all', 'paid'),
        ),
        { maxKeys: 4 },
      )
    const request = fc.constantFrom(...operations).chain((operation) =>
      fc.record({
        operation: fc.constant(operation),
        segments: fc.array(segment, { minLength: 3, maxLength: 3 }),
        query: query(operation.query),
        headers,
        body: operation.method === 'GET' ? fc.constant(undefined) : body,
      }),
    )

    const anyOperationStatus = [...new Set(operations.flatMap(({ statuses }) => statuses))]
    let cases = 0
    const statuses = new Set<number>()
    await fc.assert(
      fc.asyncProperty(request, async ({ operation, segments, query: search, headers: sent, body: raw }) => {
        let index = 0
        const path = operation.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(segments[index++] ?? 'x'))
        const qs = new URLSearchParams(search).toString()
        const before = await digestOf(database)
        const answer = await app.call(operation.method, qs ? `${path}?${qs}` : path, {
          body: raw,
          headers: {
            ...sent,
            ...(raw === undefined ? {} : { 'content-type': sent['content-type'] ?? 'application/json' }),
          },
        })
        const where = `${operation.method} ${path}?${qs} -> ${answer.status} ${answer.text.slice(0, 200)}`
        expect(answer.status, where).toBeLessThan(answer.status === 503 ? 504 : 500)
        // A parameter of "." or ".." is a dot segment: the URL names another path (another operation, with its own
        // answers, e.g. the agent list's 400 for a query it does not take), which may take other methods (405).
        const rerouted = segments.slice(0, index).some((segment) => segment === '.' || segment === '..')
        expect(rerouted ? [...anyOperationStatus, 405] : operation.statuses, where).toContain(answer.status)
        if (answer.status >= 400) {
          expect(answer.headers.get('content-type'), where).toBe('application/problem+json')
          expect(answer.json?.status, where).toBe(answer.status)
          expect(await digestOf(database), where).toBe(before)
        }
        statuses.add(answer.status)
        cases++
      }),
      { numRuns: RUNS, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
    )
    database.close()
    expect(cases).toBe(RUNS)
    expect([...statuses].filter((status) => status >= 400).length).toBeGreaterThanOrEqual(3)
  }, 300_000)
})
