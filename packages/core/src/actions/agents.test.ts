import { describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { memoryStore } from '../adapters/memoryStore.ts'
import { defaultConfig } from '../Config.ts'
import { hashSecret } from '../Credentials.ts'
import { Marketplace } from '../Marketplace.ts'
import { manualClock } from '../ports/Clock.ts'
import { afterEachWrite } from '../ports/storeReads.ts'
import { walletProofTypedData } from '../WalletProof.ts'

// The agent and owner actions on memoryStore, without a server: fast checks of the rules; the route tests keep
// the wire.

const MARKET = 'https://market.example'

function marketOnMemory() {
  const store = memoryStore()
  const clock = manualClock('2026-06-01T12:00:00Z')
  return { market: Marketplace.create({ store, clock, config: defaultConfig(MARKET) }), store, clock }
}

/** A pairing of `code` to `username`, signed (EIP-712) by `owner` at the market's clock. */
async function pairing(
  owner: ReturnType<typeof privateKeyToAccount>,
  username: string,
  code: string,
  at: Date,
) {
  const path = `/api/community/users/${username}/pair-agent`
  const body = new TextEncoder().encode(JSON.stringify({ pairingCode: code }))
  const timestamp = BigInt(at.getTime())
  const signature = await owner.signTypedData(
    walletProofTypedData({ market: MARKET, method: 'POST', path, body }, timestamp),
  )
  return {
    proof: { signature, timestamp: String(timestamp), scheme: 'eip712' },
    method: 'POST',
    path,
    body,
  }
}

describe('agent actions on memoryStore', () => {
  test('behavior: registering keeps the key hashed and the pairing code keyed; the code expires in 7 days', async () => {
    const { market, store } = marketOnMemory()
    const registered = await market.registerAgent({ name: 'Scout', skills: ['ping'] })
    const record = await store.getAgent('scout')
    expect(record?.apiKeyHash).toBe(hashSecret(registered.apiKey))
    expect(record?.pairingCodeHash).toMatch(/^h1:[0-9a-f]{64}$/)
    expect(registered.pairingCodeExpiresAt).toBe('2026-06-08T12:00:00.000Z')
  })

  test('behavior: a pairing signed by the wallet binds the owner once; a replayed proof and an expired code are refused', async () => {
    const { market, clock } = marketOnMemory()
    const owner = privateKeyToAccount(generatePrivateKey())
    const { pairingCode, apiKey } = await market.registerAgent({ name: 'pet' })
    const request = await pairing(owner, 'ann', pairingCode, clock.now())
    const paired = await market.pairAgent('ann', owner.address, request, { pairingCode })
    expect(paired.user.username).toBe('ann')
    await expect(market.pairAgent('ann', owner.address, request, { pairingCode })).rejects.toMatchObject({
      code: 'proof_replayed',
    })
    await expect(market.issuePairingCode('pet', apiKey)).rejects.toMatchObject({
      code: 'agent_already_paired',
    })

    const other = await market.registerAgent({ name: 'late' })
    clock.advance(7 * 24 * 60 * 60 * 1000 + 1)
    const late = await pairing(owner, 'ann', other.pairingCode, clock.now())
    await expect(
      market.pairAgent('ann', owner.address, late, { pairingCode: other.pairingCode }),
    ).rejects.toMatchObject({
      code: 'pairing_code_expired',
    })
    const renewed = await market.issuePairingCode('late', other.apiKey)
    const fresh = await pairing(owner, 'ann', renewed.pairingCode, clock.now())
    expect(
      (await market.pairAgent('ann', owner.address, fresh, { pairingCode: renewed.pairingCode })).agent.name,
    ).toBe('late')
  })

  test('error: control characters in a bio are refused and change nothing', async () => {
    const { market } = marketOnMemory()
    const { apiKey } = await market.registerAgent({ name: 'scout', bio: 'kept' })
    await expect(market.updateAgent('scout', apiKey, { bio: 'cut\u0000here' })).rejects.toMatchObject({
      code: 'invalid_body',
      status: 400,
    })
    expect((await market.getAgent('scout')).bio).toBe('kept')
  })
})

describe('newest milestones of an agent record', () => {
  test('behavior: read again only when the milestone counts change, by this market or by another on the same store', async () => {
    const { market, store } = marketOnMemory()
    const { apiKey } = await market.registerAgent({ name: 'miles', skills: ['ping'] })
    await market.recordMilestone('miles', apiKey, { date: '2026-05-01', title: 'first' })
    let reads = 0
    const listMilestones = store.listMilestones.bind(store)
    store.listMilestones = (...args) => {
      reads++
      return listMilestones(...args)
    }
    const titles = (view: { milestones: { title: string }[] }) => view.milestones.map((m) => m.title)
    // Profile edits answer the whole record: the milestones come from memory while the counts stand.
    for (const bio of ['one', 'two', 'three'])
      expect(titles(await market.updateAgent('miles', apiKey, { bio }))).toEqual(['first'])
    expect(reads).toBe(1)
    await market.recordMilestone('miles', apiKey, { date: '2026-05-02', title: 'second' })
    expect(titles(await market.updateAgent('miles', apiKey, { bio: 'four' }))).toEqual(['second', 'first'])
    expect(reads).toBe(2)
    // Another process on the same store records one (older date): the counts move, so it is read again.
    const other = Marketplace.create({
      store,
      clock: manualClock('2026-06-01T12:00:00Z'),
      config: defaultConfig(MARKET),
    })
    await other.recordMilestone('miles', apiKey, { date: '2026-04-01', title: 'older' })
    expect(titles(await market.updateAgent('miles', apiKey, { bio: 'five' }))).toEqual([
      'second',
      'first',
      'older',
    ])
    expect(reads).toBe(3)
  })
})

describe('signed A2A cards', () => {
  /** A market whose card signer counts what it signs, on a memory store given a change version as SQL stores keep. */
  function countingMarket() {
    let version = 0
    const store = {
      ...afterEachWrite(memoryStore(), () => {
        version++
      }),
      changeVersion: async () => String(version),
    }
    const clock = manualClock('2026-06-01T12:00:00Z')
    const signed: string[] = []
    const cardSigner = {
      async sign(card: object) {
        const name = String((card as { name?: unknown }).name)
        signed.push(name)
        return [{ protected: 'p', signature: `${name}:${JSON.stringify(card).length}` }]
      },
      async publicKeys() {
        return []
      },
    }
    const market = Marketplace.create({ store, clock, cardSigner, config: defaultConfig(MARKET) })
    return { market, signed, clock }
  }

  test('behavior: an agent card is signed once per version of the card, and again when the card changes', async () => {
    const { market, signed, clock } = countingMarket()
    const { apiKey } = await market.registerAgent({ name: 'Signer', skills: ['ping'] })
    await market.heartbeat('signer', apiKey)
    const first = await market.a2aAgentCard('signer')
    for (let i = 0; i < 5; i++) expect(await market.a2aAgentCard('Signer')).toEqual(first)
    expect(signed).toEqual(['Signer'])
    await market.updateAgent('signer', apiKey, { bio: 'a longer bio than before' })
    const changed = await market.a2aAgentCard('signer')
    expect(changed.signatures?.[0]?.signature).not.toBe(first.signatures?.[0]?.signature)
    expect(signed).toEqual(['Signer', 'Signer'])
    clock.advance(10 * 60_000) // liveness moves (live -> idle): the card is made, and signed, again
    await market.a2aAgentCard('signer')
    expect(signed.length).toBe(3)
  })

  test('behavior: the marketplace card is signed again only when its text changes', async () => {
    const { market, signed } = countingMarket()
    const card = { name: 'market', version: '1' }
    const first = await market.signA2aCard(card)
    expect(await market.signA2aCard({ ...card })).toEqual(first)
    expect(signed).toEqual(['market'])
    await market.signA2aCard({ ...card, version: '2' })
    expect(signed).toEqual(['market', 'market'])
  })
})
