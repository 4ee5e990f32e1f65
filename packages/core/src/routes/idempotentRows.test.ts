import { describe, expect, test } from 'bun:test'
import { memoryStore } from '../adapters/memoryStore.ts'
import { defaultConfig, type IdempotencyQuota } from '../Config.ts'
import { StorageFullError, StoreUnavailableError } from '../errors.ts'
import { Marketplace } from '../Marketplace.ts'
import { manualClock } from '../ports/Clock.ts'
import type { Store } from '../ports/Store.ts'
import { createFetchHandler } from './fetchHandler.ts'

// A write under an Idempotency-Key when its database fails under it, driven through the fetch handler: a retry never
// records a second milestone, whatever failed.

const base = 'http://market.test'

/**
 * A market whose milestone inserts go through `insert` (the real one by default) and whose kv updates through
 * `kvUpdate`, with a clock the test moves; `quota` is the idempotency quota, and a request's X-Test-Client header
 * names its client address.
 */
async function market(
  insert?: (real: Store['insertMilestone']) => Store['insertMilestone'],
  kvUpdate?: (real: Store['kvUpdate']) => Store['kvUpdate'],
  quota?: IdempotencyQuota,
) {
  const store = memoryStore()
  const entries = new Set<string>()
  const quotaRows = new Set<string>()
  const update = kvUpdate ? kvUpdate(store.kvUpdate.bind(store)) : store.kvUpdate.bind(store)
  store.kvUpdate = (key, change) => {
    if (key.startsWith('idem:')) entries.add(key)
    if (key.startsWith('idem-quota:')) quotaRows.add(key)
    return update(key, change)
  }
  const real = store.insertMilestone.bind(store)
  if (insert) store.insertMilestone = insert(real)
  const clock = manualClock('2026-06-01T12:00:00.000Z')
  const config = defaultConfig(base, quota ? { idempotencyQuota: quota } : {})
  const handler = createFetchHandler(Marketplace.create({ store, clock, config }), {
    clientOf: (request) => request.headers.get('x-test-client'),
  })
  const send = async (method: string, path: string, init: { body?: unknown; headers?: object } = {}) => {
    const response = await handler.fetch(
      new Request(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...init.headers },
        ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
      }),
    )
    return { status: response.status, headers: response.headers, json: await response.json() }
  }
  const registered = await send('POST', '/api/agents/register', { body: { name: 'scout' } })
  const key = registered.json.apiKey as string
  /** Records the milestone "Shipped" under the Idempotency-Key `idem`. */
  const record = (idem: string) =>
    send('POST', '/api/agents/scout/milestones', {
      body: { date: '2026-05-01', title: 'Shipped' },
      headers: { authorization: `Bearer ${key}`, 'idempotency-key': idem },
    })
  const count = async () =>
    (await send('GET', '/api/agents/scout/milestones')).json.milestones.length as number
  return { clock, record, count, store, entries, quotaRows, send, key }
}

describe('Idempotency-Key when the database fails under a write', () => {
  test('a retry while the first request is still under way is 409 idempotency_key_in_use with Retry-After, then gets its answer', async () => {
    let release = () => {}
    let started = () => {}
    const running = new Promise<void>((resolve) => {
      started = resolve
    })
    const { record, count } = await market((real) => async (milestone, events) => {
      started()
      await new Promise<void>((resolve) => {
        release = resolve
      })
      return real(milestone, events)
    })
    const first = record('m-1')
    await running
    const meanwhile = await record('m-1')
    expect(meanwhile.status).toBe(409)
    expect(meanwhile.json.code).toBe('idempotency_key_in_use')
    expect(Number(meanwhile.headers.get('retry-after'))).toBeGreaterThan(0)
    release()
    const done = await first
    expect(done.status).toBe(201)
    const retry = await record('m-1')
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect(retry.json).toEqual(done.json)
    expect(await count()).toBe(1)
  })

  test('a write that landed but whose answer was lost (outcome unknown) is never run again under its key', async () => {
    let fail = true
    const { clock, record, count } = await market((real) => async (milestone, events, apiKeyHash) => {
      const landed = await real(milestone, events, apiKeyHash)
      if (fail) throw new StoreUnavailableError('unknown')
      return landed
    })
    const first = await record('m-2')
    expect(first.status).toBe(503)
    expect(first.json.code).toBe('outcome_unknown')
    fail = false
    // The request has ended: a retry is told at once that its outcome is unknown, not "still under way".
    expect((await record('m-2')).json.code).toBe('idempotency_outcome_unknown')
    clock.advance(61_000)
    const retry = await record('m-2')
    expect(retry.status).toBe(409)
    expect(retry.json.code).toBe('idempotency_outcome_unknown')
    expect(await count()).toBe(1)
  })

  test('a failure that changed nothing frees the key: the retry runs and is kept', async () => {
    let fail = true
    const { record, count } = await market((real) => async (milestone, events, apiKeyHash) => {
      if (fail) throw new StoreUnavailableError('unchanged')
      return real(milestone, events, apiKeyHash)
    })
    expect((await record('m-3')).json.code).toBe('database_unavailable')
    fail = false
    const retry = await record('m-3')
    expect(retry.status).toBe(201)
    expect(retry.headers.get('idempotent-replayed')).toBeNull()
    expect((await record('m-3')).headers.get('idempotent-replayed')).toBe('true')
    expect(await count()).toBe(1)
  })

  test('a store fault after an earlier write of the same request landed is an unknown outcome, never "nothing changed"', async () => {
    // Adding a webhook writes the endpoint, then the fan-out cursor: the database goes away between the two.
    let fail = true
    const { clock, send, key } = await market(undefined, (real) => (name, change) => {
      if (fail && name.startsWith('webhooks:')) throw new StoreUnavailableError('unchanged')
      return real(name, change)
    })
    const add = () =>
      send('POST', '/api/agents/scout/webhooks', {
        body: { url: 'https://hooks.example/in' },
        headers: { authorization: `Bearer ${key}`, 'idempotency-key': 'w-1' },
      })
    const first = await add()
    expect(first.status).toBe(503)
    expect(first.json.code).toBe('outcome_unknown')
    fail = false
    // Before: "nothing changed" freed the key, and this retry added a second endpoint.
    clock.advance(61_000)
    const retry = await add()
    expect(retry.status).toBe(409)
    expect(retry.json.code).toBe('idempotency_outcome_unknown')
    const listed = await send('GET', '/api/agents/scout/webhooks', {
      headers: { authorization: `Bearer ${key}` },
    })
    expect(listed.json.webhooks).toHaveLength(1)
  })

  test('a write refused as "nothing changed" while the store could not free its key (the disk full) runs again on the retry once the store takes writes', async () => {
    let full = true
    const { record, count, store } = await market(
      (real) => async (milestone, events) => {
        if (full) throw new StorageFullError()
        return real(milestone, events)
      },
      (real) => (name, change) => {
        // The key is taken before the disk fills; freeing it afterwards is refused like every other write.
        if (full && name.startsWith('idem:') && change(null).op !== 'set') throw new StorageFullError()
        return real(name, change)
      },
    )
    const remove = store.kvDelete.bind(store)
    store.kvDelete = async (name) => {
      if (full) throw new StorageFullError()
      return remove(name)
    }
    expect((await record('m-full')).json.code).toBe('storage_full')
    full = false
    // Before: the key stayed "under way" (409 idempotency_key_in_use), then "outcome unknown" for good.
    const retry = await record('m-full')
    expect(retry.status).toBe(201)
    expect(await count()).toBe(1)
  })

  test("attack: after a store fault the answer does not wait for the key's ending to be written (a stuck database would make it wait a second deadline)", async () => {
    let claims = 0
    let endingStarted = () => {}
    const ending = new Promise<void>((resolve) => (endingStarted = resolve))
    const { record } = await market(undefined, (real) => async (name, change) => {
      if (!name.startsWith('idem:')) return real(name, change)
      if (++claims === 1) throw new StoreUnavailableError('unknown')
      // The database is stuck: the key's ending (freeing the claim) never returns.
      endingStarted()
      return new Promise<never>(() => {})
    })
    const answer = record('m-stuck')
    await ending
    const first = await Promise.race([
      answer,
      new Promise<'waiting'>((resolve) => setImmediate(() => resolve('waiting'))),
    ])
    expect(first).toMatchObject({ status: 503, json: { code: 'outcome_unknown' } })
  })

  test('a key claim that landed after its deadline (a database frozen under it) is freed, so the retry runs at once instead of hearing "under way" for a minute', async () => {
    let frozen = true
    const { record, count } = await market(undefined, (real) => async (name, change) => {
      if (!frozen || !name.startsWith('idem:')) return real(name, change)
      frozen = false
      // The statement runs once the database thaws, but its caller was already told the deadline passed.
      await real(name, change)
      throw new StoreUnavailableError('unknown')
    })
    const first = await record('m-frozen')
    expect(first.status).toBe(503)
    expect(first.json.code).toBe('outcome_unknown')
    // Before: 409 idempotency_key_in_use until the claim's minute was over (the second attack's F3).
    const retry = await record('m-frozen')
    expect(retry.status).toBe(201)
    expect(await count()).toBe(1)
  })

  test('attack: whole-profile edits under fresh keys do not each keep their large answer: over 16 KiB, a retry is told to read it', async () => {
    const { send, key, store, entries } = await market()
    const skills = Array.from({ length: 30 }, (_, index) => ({
      name: `skill-${index}`,
      description: 'x'.repeat(900),
    }))
    const edit = () =>
      send('PUT', '/api/agents/scout', {
        body: { skills },
        headers: { authorization: `Bearer ${key}`, 'idempotency-key': 'profile-1' },
      })
    const first = await edit()
    expect(first.status).toBe(200)
    expect(JSON.stringify(first.json).length).toBeGreaterThan(16 * 1024)
    let largest = 0
    for (const name of entries) largest = Math.max(largest, JSON.stringify(await store.kvGet(name)).length)
    // Before: the entry held the sealed answer, about twice its 28 KiB.
    expect(largest).toBeLessThan(1024)
    const retry = await edit()
    expect(retry.status).toBe(409)
    expect(retry.json.code).toBe('idempotency_replay_expired')
  })

  test("attack: after an outage the first request under a new key does not carry the backlog of other keys' endings: it answers while they are still being written", async () => {
    let down = true
    let stuck = new Set<string>()
    const { record, entries } = await market(undefined, (real) => async (name, change) => {
      if (down && name.startsWith('idem:')) throw new StoreUnavailableError('unchanged')
      // Writing the endings kept during the outage hangs (a database slow to catch up).
      if (stuck.has(name)) return new Promise<never>(() => {})
      return real(name, change)
    })
    for (const idem of ['a', 'b', 'c']) expect((await record(`outage-${idem}`)).status).toBe(503)
    down = false
    stuck = new Set(entries)
    // Before: this request wrote every kept ending first, in line, and hung on the first.
    const fresh = await record('after-outage')
    expect(fresh.status).toBe(201)
  })

  test("a keyed write's bytes written to the store do not grow with the keyed writes of its hour", async () => {
    const { record, store } = await market(undefined, undefined, { answers: 1_000_000, bytes: 1_000_000_000 })
    let written = 0
    const size = (value: unknown) => JSON.stringify(value).length
    const put = store.kvPut.bind(store)
    store.kvPut = (name, value, options) => {
      written += size(value)
      return put(name, value, options)
    }
    const update = store.kvUpdate.bind(store)
    store.kvUpdate = (name, change) =>
      update(name, (current) => {
        const outcome = change(current)
        if (outcome.op === 'set') written += size(outcome.value)
        return outcome
      })
    const bytesOf = async (idem: string) => {
      written = 0
      expect((await record(idem)).status).toBe(201)
      return written
    }
    const first = await bytesOf('w-0')
    for (let n = 1; n < 1999; n++) expect((await record(`w-${n}`)).status).toBe(201)
    const last = await bytesOf('w-1999')
    // Before: each write appended its name to an hour's list of 16 and wrote the list again (~125 names, 8 KB, here).
    expect(last).toBeLessThanOrEqual(first + 64)
  })

  test('a key nobody retries is removed from the store after its 24 hours', async () => {
    const { clock, record, store, entries } = await market()
    expect((await record('old')).status).toBe(201)
    const [old] = [...entries]
    if (!old) throw new Error('no entry was written')
    expect(await store.kvGet(old)).not.toBeNull()
    clock.advance(25 * 3600_000)
    // Each new key sweeps a few expired rows of the store.
    for (let n = 0; n < 400 && (await store.kvGet(old)) !== null; n++) await record(`new-${n}`)
    expect(await store.kvGet(old)).toBeNull()
  })
})

describe('the quota of answers kept for replays', () => {
  /** How many kept entries hold an answer, and their sealed bytes. */
  async function kept(store: Store, entries: Set<string>) {
    let answers = 0
    let bytes = 0
    for (const name of entries) {
      const entry = (await store.kvGet(name)) as { sealed?: { iv: string; data: string } | null } | null
      if (!entry?.sealed) continue
      answers++
      bytes += entry.sealed.iv.length + entry.sealed.data.length
    }
    return { answers, bytes }
  }

  test('attack: past its quota of stored bytes a client keeps no more answers; its writes still run once; an API key shown once is still kept, a pairing code is not', async () => {
    const { record, count, store, entries, send } = await market(undefined, undefined, {
      answers: 1000,
      bytes: 2000,
    })
    for (let n = 0; n < 20; n++) expect((await record(`fill-${n}`)).status).toBe(201)
    const { answers, bytes } = await kept(store, entries)
    expect(bytes).toBeLessThanOrEqual(2000)
    expect(answers).toBeGreaterThan(0)
    expect(answers).toBeLessThan(20)
    const late = await record('fill-19')
    expect(late.status).toBe(409)
    expect(late.json.code).toBe('idempotency_replay_expired')
    expect(await count()).toBe(20)
    // A registration's key is shown once: losing its answer would lose the key, so it is kept past the quota.
    const register = () =>
      send('POST', '/api/agents/register', {
        body: { name: 'late-one' },
        headers: { 'idempotency-key': 'reg' },
      })
    const first = await register()
    expect(first.status).toBe(200)
    const again = await register()
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.json.apiKey).toBe(first.json.apiKey)
    // A secret anyone holding the key can issue again (a pairing code, a webhook secret) on a route limited like any
    // write is held to the quota: else a client would keep 600 B-5 KB a write past it (the second attack's F1).
    const issue = (key: string) =>
      send('POST', '/api/agents/late-one/pairing-code', {
        headers: { 'idempotency-key': key, authorization: `Bearer ${first.json.apiKey}` },
      })
    const before = await kept(store, entries)
    for (let n = 0; n < 12; n++) expect((await issue(`code-${n}`)).status).toBe(200)
    const after = await kept(store, entries)
    expect(after.bytes - before.bytes).toBeLessThanOrEqual(2000)
    expect(after.answers - before.answers).toBeLessThan(12)
    const reissued = await issue('code-11')
    expect(reissued.status).toBe(409)
    expect(reissued.json.code).toBe('idempotency_replay_expired')
    expect(reissued.json.detail).toContain('issue a new one')
  })

  test('attack: many API keys from the /64s of one IPv6 /48 keep at most eight quotas in all', async () => {
    const { send, store, entries } = await market(undefined, undefined, { answers: 1, bytes: 1_000_000 })
    for (let n = 0; n < 12; n++) {
      const client = `2001:db8:7:${n.toString(16)}::1`
      const registered = await send('POST', '/api/agents/register', {
        body: { name: `spread-${n}` },
        headers: { 'x-test-client': client },
      })
      for (const idem of ['x', 'y'])
        await send('POST', `/api/agents/spread-${n}/milestones`, {
          body: { date: '2026-05-01', title: 'Shipped' },
          headers: {
            authorization: `Bearer ${registered.json.apiKey}`,
            'idempotency-key': `${idem}-${n}`,
            'x-test-client': client,
          },
        })
    }
    // Each /64 holds one answer, its /48 eight: eight kept, not twelve (or twenty-four).
    expect((await kept(store, entries)).answers).toBe(8)
  })

  /** A market keeping two answers a client, with helpers to register an agent and write a keyed milestone. */
  async function twoAnswerMarket() {
    const built = await market(undefined, undefined, { answers: 2, bytes: 1_000_000 })
    const agent = async (name: string) =>
      (await built.send('POST', '/api/agents/register', { body: { name } })).json.apiKey as string
    const write = (client: string, apiKey: string, name: string, idem: string) =>
      built.send('POST', `/api/agents/${name}/milestones`, {
        body: { date: '2026-05-01', title: 'Shipped' },
        headers: { authorization: `Bearer ${apiKey}`, 'idempotency-key': idem, 'x-test-client': client },
      })
    return { ...built, agent, write }
  }

  test("a client's quota rows go once their answers are forgotten, and its quota is whole again", async () => {
    const { clock, store, entries, quotaRows, agent, write } = await twoAnswerMarket()
    const alice = await agent('alice')
    for (let n = 0; n < 3; n++) await write('203.0.113.1', alice, 'alice', `a-${n}`)
    expect((await kept(store, entries)).answers).toBe(2)
    const own = [...quotaRows]
    expect(own).toHaveLength(2)
    clock.advance(26 * 3600_000)
    // Other clients' new keys sweep a few expired rows each: alice's rows go with her expired keys.
    const bob = await agent('bob')
    for (let n = 0; n < 400 && (await store.kvGet(own[0] ?? '')) !== null; n++)
      await write(`198.51.100.${n % 250}`, bob, 'bob', `b-${n}`)
    for (let n = 0; n < 400 && (await store.kvGet(own[1] ?? '')) !== null; n++)
      await write(`198.51.100.${n % 250}`, bob, 'bob', `c-${n}`)
    for (const row of own) expect(await store.kvGet(row)).toBeNull()
    const again = await write('203.0.113.1', alice, 'alice', 'a-new')
    expect((await write('203.0.113.1', alice, 'alice', 'a-new')).json).toEqual(again.json)
  })

  test("a client's quota row charged again later stays while its later answers are kept: each charge pushes its expiry forward", async () => {
    const { clock, store, quotaRows, agent, write } = await twoAnswerMarket()
    const alice = await agent('alice')
    await write('203.0.113.1', alice, 'alice', 'a-0')
    const own = [...quotaRows]
    clock.advance(20 * 3600_000)
    await write('203.0.113.1', alice, 'alice', 'a-1')
    clock.advance(6 * 3600_000)
    // Past the first answer's 25 hours, other clients' keys sweep every expired row.
    const bob = await agent('bob')
    for (let n = 0; n < 50; n++) await write(`198.51.100.${n}`, bob, 'bob', `b-${n}`)
    for (const row of own) expect(await store.kvGet(row)).not.toBeNull()
    // Her quota still counts the later answer: one more is kept, the next is not.
    expect((await write('203.0.113.1', alice, 'alice', 'a-2')).status).toBe(201)
    const refused = await write('203.0.113.1', alice, 'alice', 'a-3')
    expect((await write('203.0.113.1', alice, 'alice', 'a-3')).json.code).toBe('idempotency_replay_expired')
    expect(refused.status).toBe(201)
  })
})
