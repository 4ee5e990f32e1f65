import { describe, expect, setSystemTime, test } from 'bun:test'
import { Challenge, Errors, PaymentRequest } from 'mppx'
import { Mppx, tempo } from 'mppx/server'
import { createClient, custom } from 'viem'
import { tempo as tempoChain } from 'viem/tempo/chains'
import { memoryStore } from '../adapters/memoryStore.ts'
import { portableHashes } from '../ports/Hashes.ts'
import { createMppCharger } from './Mpp.ts'
import { type ChallengeLibrary, mppChallenges } from './MppChallenges.ts'

const SECRET = 'mpp-unit-secret-key-of-at-least-32-bytes!!'
const REALM = 'market.example'
/** mppx's challenge id: HMAC-SHA256 as base64url, by the hashes every host has. */
const challengeId = (key: string, message: string) => portableHashes.hmacSha256(key, message, 'base64url')
const CURRENCY = '0x20C000000000000000000000b9537d11c60E8b50'
const SELLER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const OTHER = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'
// A 402 needs only the client's chain (its id goes into the challenge); no request reaches this transport.
const client = createClient({
  chain: tempoChain,
  transport: custom({
    async request() {
      throw new Error('no RPC call is expected for a challenge')
    },
  }),
})
const settings = { secretKey: SECRET, realm: REALM, currency: CURRENCY, getClient: () => client } as const
/** mppx's own server, as its documentation configures it: the reference our 402 must equal. */
const reference = Mppx.create({
  secretKey: SECRET,
  realm: REALM,
  methods: [tempo.charge({ currency: CURRENCY, getClient: () => client })],
})

/** mppx's own parts, generating with the reference server: what the fast path is checked against. */
const referenceLibrary = (): ChallengeLibrary => ({
  generate: (options) => reference.challenge.tempo.charge(options),
  serializeChallenge: Challenge.serialize,
  serializeRecord: PaymentRequest.serialize,
  paymentRequiredProblem: (description) =>
    new Errors.PaymentRequiredError({ description }).toProblemDetails(),
})

/** The fields of one challenge for the seller's summary skill. */
const SUMMARY_FIELDS = {
  amount: '0.01',
  recipient: SELLER,
  description: 'd',
  scope: 'seller/summary',
  bodyDigest: 'ab'.repeat(32),
} as const

const order = (overrides: Partial<Parameters<ReturnType<typeof createMppCharger>['charge']>[1]> = {}) => ({
  amountBaseUnits: 10_000n,
  recipient: SELLER as `0x${string}`,
  description: 'Summary by seller: 0.01 USDC.e',
  scope: 'seller/summary',
  bodyDigest: 'ab'.repeat(32),
  ...overrides,
})
const request = (headers: Record<string, string> = {}) =>
  new Request(`https://${REALM}/api/agents/seller/tasks/summary`, { method: 'POST', headers })

/** Our 402 for `charge`, from the charger as the marketplace makes it. */
async function ours(charge = order(), charger = createMppCharger(settings, memoryStore())) {
  const outcome = await charger.charge(request(), charge)
  if (outcome.paid) throw new Error('a request without a credential was paid')
  return outcome.challenge
}

describe('the 402 challenge of a paid order', () => {
  test('behavior: it is the one mppx writes: the same fields, an id mppx verifies, the same problem with our code', async () => {
    const answer = await ours()
    const theirs = await reference.charge({
      amount: '0.01',
      recipient: SELLER,
      description: 'Summary by seller: 0.01 USDC.e',
      scope: 'seller/summary',
      meta: { bodyDigest: 'ab'.repeat(32) },
    })(request())
    if (theirs.status !== 402) throw new Error('mppx did not answer 402')
    const header = answer.headers.get('www-authenticate') ?? ''
    const challenge = Challenge.deserialize(header)
    const expected = Challenge.fromResponse(theirs.challenge)
    expect(Challenge.verify(challenge, { secretKey: SECRET })).toBe(true)
    // The same but for the challenge's own nonce, which mppx's charge does not draw (it takes our meta as it is).
    const { nonce, ...bound } = PaymentRequest.deserialize(challenge.opaque ?? '') as Record<string, string>
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(bound as Record<string, unknown>).toEqual(PaymentRequest.deserialize(expected.opaque ?? ''))
    const unbound = (made: Challenge.Challenge) => ({ ...made, id: '', expires: '', opaque: '', meta: {} })
    expect(unbound(challenge)).toEqual(unbound(expected))
    expect(header).toBe(Challenge.serialize(challenge))
    const expires = Date.parse(challenge.expires ?? '')
    expect(Math.abs(expires - Date.parse(expected.expires ?? ''))).toBeLessThan(5_000)
    expect(answer.status).toBe(402)
    expect(answer.headers.get('content-type')).toBe('application/problem+json')
    expect(answer.headers.get('cache-control')).toBe(theirs.challenge.headers.get('cache-control'))
    const problem = (await theirs.challenge.json()) as Record<string, unknown>
    expect(await answer.json()).toEqual({ ...problem, challengeId: challenge.id, code: 'payment_required' })
  })

  test('behavior: each challenge binds its own scope and body digest, though all share one template', async () => {
    const charger = createMppCharger(settings, memoryStore())
    const read = async (charge: ReturnType<typeof order>) =>
      Challenge.fromResponse(await ours(charge, charger))
    const first = await read(order())
    const otherBody = await read(order({ bodyDigest: 'cd'.repeat(32) }))
    const otherSkill = await read(order({ scope: 'seller/translate' }))
    for (const challenge of [first, otherBody, otherSkill])
      expect(Challenge.verify(challenge, { secretKey: SECRET })).toBe(true)
    expect(new Set([first.id, otherBody.id, otherSkill.id]).size).toBe(3)
    expect(PaymentRequest.deserialize(otherBody.opaque ?? '')).toMatchObject({
      _mppx_scope: 'seller/summary',
      bodyDigest: 'cd'.repeat(32),
    })
    expect(PaymentRequest.deserialize(otherSkill.opaque ?? '')).toMatchObject({
      _mppx_scope: 'seller/translate',
    })
  })

  test('behavior: the opaque and the problem body are written byte for byte as mppx writes them, ASCII or not', async () => {
    let generated = 0
    const library: ChallengeLibrary = {
      generate: (options) => {
        generated += 1
        return reference.challenge.tempo.charge(options)
      },
      serializeChallenge: Challenge.serialize,
      serializeRecord: PaymentRequest.serialize,
      paymentRequiredProblem: (description) =>
        new Errors.PaymentRequiredError({ description }).toProblemDetails(),
    }
    const issuer = mppChallenges({ secretKey: SECRET, hmac: challengeId, load: async () => library })
    const problem = library.paymentRequiredProblem('d')
    const scopes = ['seller/summary', 'seller/translate', 'a"b\\c/d', 'vendeur-é/résumé']
    for (const scope of scopes) {
      const fields = {
        amount: '0.01',
        recipient: SELLER as `0x${string}`,
        description: 'd',
        scope,
        bodyDigest: 'ab'.repeat(32),
      }
      const answer = await issuer.respond(fields)
      const challenge = Challenge.fromResponse(answer.clone())
      expect(Challenge.verify(challenge, { secretKey: SECRET })).toBe(true)
      const { nonce } = PaymentRequest.deserialize(challenge.opaque ?? '') as { nonce: string }
      expect(challenge.opaque).toBe(
        PaymentRequest.serialize({ bodyDigest: 'ab'.repeat(32), _mppx_scope: scope, nonce }),
      )
      expect(await answer.text()).toBe(
        JSON.stringify({ ...problem, challengeId: challenge.id, code: 'payment_required' }),
      )
    }
    // One template served them all: mppx made only its reference challenge.
    expect(generated).toBe(1)
  })

  test('attack: two 402s for the same order in the same millisecond are two challenges (each its own nonce, bound by the HMAC)', async () => {
    const charger = createMppCharger(settings, memoryStore())
    setSystemTime(new Date('2026-11-29T09:00:00.000Z'))
    try {
      const [first, second] = await Promise.all([ours(order(), charger), ours(order(), charger)])
      const [a, b] = [first, second].map((answer) => Challenge.fromResponse(answer as Response))
      expect(a?.expires).toBe(b?.expires)
      expect(a?.id).not.toBe(b?.id)
      for (const challenge of [a, b])
        expect(Challenge.verify(challenge as Challenge.Challenge, { secretKey: SECRET })).toBe(true)
    } finally {
      setSystemTime()
    }
  })

  test('behavior: a template is kept per price and payee: the same description at another price or payee asks that one', async () => {
    const charger = createMppCharger(settings, memoryStore())
    const read = async (charge: ReturnType<typeof order>) =>
      Challenge.fromResponse(await ours(charge, charger)).request as { amount: string; recipient: string }
    expect(await read(order())).toMatchObject({ amount: '10000', recipient: SELLER })
    expect(await read(order({ amountBaseUnits: 20_000n }))).toMatchObject({
      amount: '20000',
      recipient: SELLER,
    })
    expect(await read(order({ recipient: OTHER }))).toMatchObject({ amount: '10000', recipient: OTHER })
    expect(await read(order())).toMatchObject({ amount: '10000', recipient: SELLER })
  })

  test('error: when the fast path would differ from mppx (here a wrong HMAC), mppx makes every challenge itself', async () => {
    let hmacCalls = 0
    const library = referenceLibrary()
    const issuer = mppChallenges({
      secretKey: SECRET,
      hmac: async (key, message) => {
        hmacCalls += 1
        return `${await challengeId(key, message)}-wrong`
      },
      load: async () => library,
    })
    for (let round = 0; round < 3; round++) {
      const challenge = Challenge.fromResponse(await issuer.respond(SUMMARY_FIELDS))
      expect(Challenge.verify(challenge, { secretKey: SECRET })).toBe(true)
    }
    // Only the template's check ran the HMAC; every challenge after it was mppx's own.
    expect(hmacCalls).toBe(1)
  })
  test("work: mppx's parts are loaded once for many challenges, and again after a load that failed", async () => {
    const library = referenceLibrary()
    let loads = 0
    const issuer = mppChallenges({
      secretKey: SECRET,
      hmac: challengeId,
      load: async () => {
        loads += 1
        if (loads === 1) throw new Error('mppx is not there yet')
        return library
      },
    })
    await expect(issuer.respond(SUMMARY_FIELDS)).rejects.toThrow('mppx is not there yet')
    for (let round = 0; round < 5; round++) expect((await issuer.respond(SUMMARY_FIELDS)).status).toBe(402)
    expect(loads).toBe(2)
  })

  test("behavior: the charger's challenge is the one its charge answers a request without a credential with", async () => {
    const charger = createMppCharger(settings, memoryStore())
    const challenge = await charger.challenge(order())
    const charged = await ours(order(), charger)
    const [made, answered] = [Challenge.fromResponse(challenge), Challenge.fromResponse(charged)]
    expect({ ...made, id: '', expires: '', opaque: undefined }).toEqual({
      ...answered,
      id: '',
      expires: '',
      opaque: undefined,
    })
    // The same scope and body digest bound; each its own nonce.
    const bound = (opaque: unknown) => {
      const { nonce, ...rest } = PaymentRequest.deserialize(String(opaque)) as Record<string, unknown>
      expect(nonce).toBeString()
      return rest
    }
    expect(bound(made.opaque)).toEqual({ _mppx_scope: 'seller/summary', bodyDigest: 'ab'.repeat(32) })
    expect(bound(answered.opaque)).toEqual(bound(made.opaque))
    expect(Challenge.verify(made, { secretKey: SECRET })).toBe(true)
    expect([...challenge.headers.keys()]).toEqual([...charged.headers.keys()])
    const body = (response: Response) => response.json() as Promise<Record<string, unknown>>
    expect({ ...(await body(challenge)), challengeId: '' }).toEqual({
      ...(await body(charged)),
      challengeId: '',
    })
  })
})
