import { describe, expect, test } from 'bun:test'
import { createHash, createHmac } from 'node:crypto'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { memoryStore } from '../adapters/memoryStore.ts'
import { defaultConfig } from '../Config.ts'
import { hashSecret } from '../Credentials.ts'
import { Marketplace } from '../Marketplace.ts'
import { manualClock } from '../ports/Clock.ts'
import { useNativeHashes } from '../ports/Hashes.ts'
import { walletProofTypedData } from '../WalletProof.ts'
import type { ProvedRequest } from './users/index.ts'

// Key rotation on memoryStore, without a server: two marketplaces over one store stand for two processes sharing a
// database (each with its own memory of keys). The wire and the real processes are in tests/security/keyRotation.

const MARKET = 'https://market.example'
const store = memoryStore()
const clock = manualClock('2026-06-01T12:00:00Z')
const processA = Marketplace.create({ store, clock, config: defaultConfig(MARKET) })
const processB = Marketplace.create({ store, clock, config: defaultConfig(MARKET) })
const noProof: ProvedRequest = {
  proof: { signature: undefined, timestamp: undefined },
  method: 'POST',
  path: '',
}

/** A wallet proof of POST …/keys/rotate (no body) by `wallet`, at the clock moved one second on. */
async function rotationProof(wallet: ReturnType<typeof privateKeyToAccount>, name: string, path?: string) {
  clock.advance(1000)
  const signed = path ?? `/api/agents/${name}/keys/rotate`
  const timestamp = BigInt(clock.now().getTime())
  const body = new Uint8Array(0)
  const signature = await wallet.signTypedData(
    walletProofTypedData({ market: MARKET, method: 'POST', path: signed, body }, timestamp),
  )
  const proof = { signature, timestamp: String(timestamp), scheme: 'eip712' }
  return { proof, method: 'POST', path: `/api/agents/${name}/keys/rotate`, body }
}

/** Registers `name` and pairs it to `username` owned by `wallet`. */
async function ownedAgent(name: string, username: string, wallet: ReturnType<typeof privateKeyToAccount>) {
  const { apiKey, pairingCode } = await processA.registerAgent({ name })
  clock.advance(1000)
  const path = `/api/community/users/${username}/pair-agent`
  const body = new TextEncoder().encode(JSON.stringify({ pairingCode }))
  const timestamp = BigInt(clock.now().getTime())
  const signature = await wallet.signTypedData(
    walletProofTypedData({ market: MARKET, method: 'POST', path, body }, timestamp),
  )
  const proof = { signature, timestamp: String(timestamp), scheme: 'eip712' }
  await processA.pairAgent(username, wallet.address, { proof, method: 'POST', path, body }, { pairingCode })
  return apiKey
}

describe('rotateApiKey on memoryStore', () => {
  test("behavior: the agent's key rotates it; the old key stops at once in the other process, which had it in memory", async () => {
    const { apiKey: oldKey } = await processA.registerAgent({ name: 'rotor' })
    // Process B authenticates the old key once, so it remembers it.
    expect((await processB.heartbeat('rotor', oldKey)).status).toBe('live')
    const rotated = await processA.rotateApiKey('rotor', oldKey, noProof)
    expect(rotated).toMatchObject({ agent: 'rotor', rotatedAt: clock.now().toISOString() })
    expect(rotated.apiKey).toMatch(/^amk_[0-9a-f]{64}$/)
    expect((await store.getAgent('rotor'))?.apiKeyHash).toBe(hashSecret(rotated.apiKey))
    for (const market of [processA, processB]) {
      await expect(market.heartbeat('rotor', oldKey)).rejects.toMatchObject({ code: 'unauthorized' })
      await expect(market.rotateApiKey('rotor', oldKey, noProof)).rejects.toMatchObject({ status: 401 })
    }
    expect((await processB.heartbeat('ROTOR', rotated.apiKey)).agent).toBe('rotor')
    expect((await processA.updateAgent('rotor', rotated.apiKey, { bio: 'new key' })).bio).toBe('new key')
  })

  test('race: a profile update whose key is rotated between its authentication and its write is 401 and lands nothing', async () => {
    const { apiKey: oldKey } = await processA.registerAgent({ name: 'midrotation', bio: 'before' })
    // Another process rotates the key just after this one read the agent to authenticate the update.
    let rotateAfterRead = true
    const racing = new Proxy(store, {
      get(target, property, receiver) {
        if (property !== 'getAgent') return Reflect.get(target, property, receiver)
        return async (name: string) => {
          const agent = await target.getAgent(name)
          if (rotateAfterRead && agent) {
            rotateAfterRead = false
            await target.rotateApiKey(name, agent.apiKeyHash, hashSecret('amk_rotated_elsewhere'))
          }
          return agent
        }
      },
    })
    const racingProcess = Marketplace.create({ store: racing, clock, config: defaultConfig(MARKET) })
    await expect(racingProcess.updateAgent('midrotation', oldKey, { bio: 'old key' })).rejects.toMatchObject({
      status: 401,
    })
    expect(rotateAfterRead).toBe(false)
    const agent = await store.getAgent('midrotation')
    expect(agent?.bio).toBe('before')
    expect(agent?.revision).toBe(1)
    expect(
      (await store.listEvents({ limit: 50 })).filter(
        (event) => event.agent === 'midrotation' && event.kind === 'agent.updated',
      ),
    ).toEqual([])
  })

  test('race: a milestone whose key is rotated between its authentication and its write is 401 and lands nothing', async () => {
    const { apiKey: oldKey } = await processA.registerAgent({ name: 'msrotation' })
    // Another process rotates the key just after this one read the store to authenticate the milestone (by the agent
    // or by the key's hash, whichever it reads).
    let rotateAfterRead = true
    const rotateOnce = async (name: string | null) => {
      const agent = name === null ? null : await store.getAgent(name)
      if (!rotateAfterRead || !agent) return
      rotateAfterRead = false
      await store.rotateApiKey(agent.name, agent.apiKeyHash, hashSecret('amk_rotated_elsewhere'))
    }
    const racing = new Proxy(store, {
      get(target, property, receiver) {
        if (property === 'getAgent')
          return async (name: string) => {
            const agent = await target.getAgent(name)
            await rotateOnce(agent?.name ?? null)
            return agent
          }
        if (property === 'findAgentNameByKeyHash')
          return async (hash: string) => {
            const owner = await target.findAgentNameByKeyHash(hash)
            await rotateOnce(owner)
            return owner
          }
        return Reflect.get(target, property, receiver)
      },
    })
    const racingProcess = Marketplace.create({ store: racing, clock, config: defaultConfig(MARKET) })
    const sent = racingProcess.recordMilestone('msrotation', oldKey, { date: '2026-05-01', title: 'old key' })
    await expect(sent).rejects.toMatchObject({ status: 401 })
    expect(rotateAfterRead).toBe(false)
    const agent = await store.getAgent('msrotation')
    expect([agent?.claimedMilestones, agent?.verifiedMilestones]).toEqual([0, 0])
    expect(await store.listMilestones('msrotation', 10)).toEqual([])
    const events = await store.listEvents({ limit: 50 })
    expect(
      events.filter((event) => event.agent === 'msrotation' && event.kind === 'milestone.recorded'),
    ).toEqual([])
  })

  test('behavior: a milestone with a key another process rotated away is 401, though this process remembers the key', async () => {
    const { apiKey: oldKey } = await processA.registerAgent({ name: 'msremembered' })
    // Process B authenticates the old key once (a heartbeat), so it remembers it; process A rotates it.
    expect((await processB.heartbeat('msremembered', oldKey)).status).toBe('live')
    const { apiKey: newKey } = await processA.rotateApiKey('msremembered', oldKey, noProof)
    const body = { date: '2026-05-01', title: 'stale key' }
    await expect(processB.recordMilestone('msremembered', oldKey, body)).rejects.toMatchObject({
      status: 401,
    })
    expect(await store.listMilestones('msremembered', 10)).toEqual([])
    expect((await processB.recordMilestone('MSREMEMBERED', newKey, body)).title).toBe('stale key')
    expect((await store.getAgent('msremembered'))?.claimedMilestones).toBe(1)
  })

  test('work: a keyed write hashes its key once, in a process that has not seen it and after a rotation elsewhere', async () => {
    let hashed = 0
    useNativeHashes({
      sha256: (text) => {
        hashed++
        return createHash('sha256').update(text).digest('hex')
      },
      hmacSha256: (key, text, encoding) => createHmac('sha256', key).update(text).digest(encoding),
    })
    const { apiKey } = await processA.registerAgent({ name: 'hashonce' })
    const writes = [
      (market: typeof processA, key: string) => market.heartbeat('hashonce', key),
      (market: typeof processA, key: string) => market.updateAgent('hashonce', key, { bio: 'once' }),
      (market: typeof processA, key: string) =>
        market.recordMilestone('hashonce', key, { date: '2026-05-01', title: 'once' }),
    ]
    for (const write of writes) {
      // A process that has never seen the key (it reads the store), then one that remembers it.
      const fresh = Marketplace.create({ store, clock, config: defaultConfig(MARKET) })
      for (const market of [fresh, fresh]) {
        hashed = 0
        await write(market, apiKey)
        expect(hashed).toBe(1)
      }
    }
    // A process remembers the key, another rotates it: the refused write is retried on the store's word, same hash.
    const remembering = Marketplace.create({ store, clock, config: defaultConfig(MARKET) })
    await remembering.heartbeat('hashonce', apiKey)
    await processA.rotateApiKey('hashonce', apiKey, noProof)
    for (const write of writes) {
      hashed = 0
      await expect(write(remembering, apiKey)).rejects.toMatchObject({ status: 401 })
      expect(hashed).toBe(1)
    }
  })

  test('attack: another agent key is 403, no credential is 401 naming both ways, and nothing changes', async () => {
    const { apiKey: victimKey } = await processA.registerAgent({ name: 'victim1' })
    const { apiKey: attackerKey } = await processA.registerAgent({ name: 'attacker1' })
    await expect(processA.rotateApiKey('victim1', attackerKey, noProof)).rejects.toMatchObject({
      status: 403,
    })
    const bare = processA.rotateApiKey('victim1', undefined, noProof)
    await expect(bare).rejects.toMatchObject({ status: 401, code: 'unauthorized' })
    await expect(bare).rejects.toHaveProperty('challenge', expect.stringContaining('WalletSignature'))
    expect((await store.getAgent('victim1'))?.apiKeyHash).toBe(hashSecret(victimKey))
  })

  test('race: of concurrent rotations with one key exactly one answers a key, and only that key works', async () => {
    const { apiKey } = await processA.registerAgent({ name: 'racer' })
    const outcomes = await Promise.allSettled(
      [processA, processB, processA, processB].map((market) => market.rotateApiKey('racer', apiKey, noProof)),
    )
    const won = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value.apiKey] : []))
    expect(won).toHaveLength(1)
    for (const outcome of outcomes)
      if (outcome.status === 'rejected') expect([401, 409]).toContain(outcome.reason.status)
    expect((await store.getAgent('racer'))?.apiKeyHash).toBe(hashSecret(won[0] ?? ''))
  })

  test("behavior: the owner's wallet proof rotates a lost key, once; a replay, another wallet or an unowned agent is refused", async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const stranger = privateKeyToAccount(generatePrivateKey())
    const lostKey = await ownedAgent('owned', 'ann', owner)
    const proof = await rotationProof(owner, 'owned')
    const rotated = await processA.rotateApiKey('owned', undefined, proof)
    await expect(processB.heartbeat('owned', lostKey)).rejects.toMatchObject({ status: 401 })
    await expect(processB.rotateApiKey('owned', undefined, proof)).rejects.toMatchObject({
      code: 'proof_replayed',
    })
    await expect(
      processA.rotateApiKey('owned', undefined, await rotationProof(stranger, 'owned')),
    ).rejects.toMatchObject({ status: 403 })
    const elsewhere = await rotationProof(owner, 'owned', '/api/agents/owned/pairing-code')
    const misdirected = await processA.rotateApiKey('owned', undefined, elsewhere).catch((error) => error)
    expect([401, 403]).toContain(misdirected.status)
    const { apiKey: unownedKey } = await processA.registerAgent({ name: 'unowned' })
    await expect(
      processA.rotateApiKey('unowned', undefined, await rotationProof(owner, 'unowned')),
    ).rejects.toMatchObject({ status: 403 })
    expect((await store.getAgent('owned'))?.apiKeyHash).toBe(hashSecret(rotated.apiKey))
    expect((await store.getAgent('unowned'))?.apiKeyHash).toBe(hashSecret(unownedKey))
  })
})
