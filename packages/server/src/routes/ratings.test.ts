import { describe, expect, test } from 'bun:test'
import { jobSteps, type TaskPayment, type TaskRecord } from '@agentmarket/core'
import { keccak256, stringToHex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { expectProblemShape, testApp } from '../testing/http.ts'

const buyers = Array.from({ length: 3 }, () => privateKeyToAccount(generatePrivateKey()))
const [buyer, secondBuyer, thirdBuyer] = buyers as [
  (typeof buyers)[0],
  (typeof buyers)[0],
  (typeof buyers)[0],
]
const sellerWallet = privateKeyToAccount(generatePrivateKey())
const ownerWallet = privateKeyToAccount(generatePrivateKey())
let serial = 0

/** A market whose seller has tasks paid on chain (stored as the verification would store them). */
async function market() {
  const app = await testApp()
  const seller = await app.register('seller', {
    bio: 'writes',
    skills: [{ name: 'Essay', type: 'purchasable', price: 10 }],
  })
  await app.call('PUT', '/api/agents/seller', {
    key: seller.key,
    body: { walletAddress: sellerWallet.address },
  })
  await app.pair('owner', seller.pairingCode, ownerWallet)
  /** A task of the seller paid by `from` (10 USDC by transfer), in `status`. */
  const paidTask = async (
    from: `0x${string}`,
    status: TaskRecord['status'] = 'completed',
    method: TaskPayment['method'] = 'transfer',
  ) => {
    serial += 1
    const id = `task_${serial.toString(16).padStart(32, '0')}`
    const at = app.clock.now()
    const task: TaskRecord = {
      id,
      agentName: 'seller',
      skillName: 'Essay',
      skillSlug: 'essay',
      sla: 'best effort',
      status: status === 'completed' ? 'paid' : status,
      priceBaseUnits: 10_000_000n,
      payTo: sellerWallet.address,
      params: null,
      buyer: null,
      buyerEmail: null,
      buyerWallet: null,
      payment: {
        method,
        txHash: keccak256(stringToHex(id)),
        escrowTaskId: null,
        amountBaseUnits: 10_000_000n,
        from,
        at,
      },
      pendingCheck: null,
      resultUrl: 'https://example.com/r',
      idempotency: null,
      clientKey: '',
      expiresAt: null,
      createdAt: at,
      completedAt: null,
      slaSeconds: null,
      reviewSeconds: 3600,
      reveal: 'on_delivery',
      deliveredAt: status === 'delivered' ? at : null,
      outcome: null,
      entries: [],
      jobId: null,
      rating: null,
    }
    expect((await app.store.insertTask(task, [])).outcome).toBe('inserted')
    // Completed as the seller's delivery completes it: counted, its buyer credited to the trust.
    const delivery = jobSteps.delivery({ ...task, reviewSeconds: 0 }, 'https://example.com/r', at)
    if (status === 'completed') expect(await app.store.changeTask(delivery)).toBe(true)
    return id
  }
  const path = (id: string) => `/api/agents/seller/tasks/${id}`
  /** `wallet`'s signature of the rating of `id` with `score` and `comment`. */
  const sign = async (wallet: typeof buyer, id: string, score: number, comment = '') => {
    const { rate } = (await app.call('GET', path(id))).json
    return wallet.signTypedData({ ...rate, message: { ...rate.message, score, comment } })
  }
  const rate = (id: string, body: Record<string, unknown>) => app.call('POST', `${path(id)}/rating`, { body })
  return { ...app, seller, paidTask, path, sign, rate }
}

describe('ratings bound to the payment', () => {
  test('behavior: the wallet that paid rates its finished task once; the agent shows it with counts; the list exports ERC-8004 feedback', async () => {
    const { paidTask, sign, rate, call, path } = await market()
    const id = await paidTask(buyer.address)
    const task = (await call('GET', path(id))).json
    expect(task.rate.message).toEqual({
      market: 'http://localhost:3000',
      agent: 'seller',
      task: id,
      score: 0,
      comment: '',
    })
    const rated = await rate(id, { score: 4, comment: 'good', signature: await sign(buyer, id, 4, 'good') })
    expect(rated.status).toBe(200)
    expect(rated.json).toMatchObject({
      rating: { score: 4, comment: 'good', wallet: buyer.address },
      rate: null,
    })
    const profile = (await call('GET', '/api/community/agents/seller')).json
    expect(profile.ratings).toEqual({ count: 1, average: 4, buyers: 1 })
    const list = (await call('GET', '/api/agents/seller/ratings')).json
    expect(list.total).toBe(1)
    const [entry] = list.ratings
    expect(JSON.stringify(entry)).not.toContain(id)
    expect(entry).toMatchObject({ score: 4, comment: 'good', wallet: buyer.address, skill: 'Essay' })
    expect(entry.erc8004.args).toMatchObject({
      value: 80,
      valueDecimals: 0,
      tag1: 'starred',
      tag2: 'essay',
      agentId: null,
    })
    expect(entry.erc8004.args.feedbackHash).toBe(
      keccak256(stringToHex(JSON.stringify(entry.erc8004.feedback))),
    )
    expect(entry.erc8004.feedback.proofOfPayment).toEqual({
      fromAddress: buyer.address,
      toAddress: sellerWallet.address,
      chainId: '8453',
      txHash: entry.payment.tx_hash,
    })
    const kinds = (await call('GET', '/api/feed/live')).json.events.map(
      (event: { kind: string }) => event.kind,
    )
    expect(kinds[0]).toBe('task.rated')
  })

  test("behavior: the agent's page shows its ratings and its on-time share, as the API has them", async () => {
    const { paidTask, sign, rate, app } = await market()
    const page = async () => (await app.handle(new Request('http://localhost/agents/seller'))).text()
    expect(await page()).toContain('<dt>Ratings</dt><dd>none yet</dd>')
    const id = await paidTask(buyer.address)
    expect((await rate(id, { score: 4, signature: await sign(buyer, id, 4) })).status).toBe(200)
    const shown = await page()
    expect(shown).toContain('<dt>Ratings</dt><dd>4.0 / 5 from 1 rating by 1 buyer</dd>')
    expect(shown).toContain('<dt>On time</dt><dd>100% of 1 delivery (0 disputes, 0 refunds)</dd>')
  })

  test('attack: the wrong wallet, the seller, its owner, another score or task, and a second rating change nothing', async () => {
    const { paidTask, sign, rate, call, path } = await market()
    const id = await paidTask(buyer.address)
    const other = await paidTask(buyer.address)
    for (const [wallet, score, signed, task] of [
      [secondBuyer, 5, 5, id],
      [sellerWallet, 5, 5, id],
      [buyer, 5, 1, id],
      [buyer, 5, 5, other],
    ] as const) {
      const signature = await sign(wallet, task, signed)
      expectProblemShape(await rate(id, { score, signature }), 401, 'invalid_signature')
    }
    // The seller's own wallet, or its owner's, paying its task: never a rating.
    for (const wallet of [sellerWallet, ownerWallet]) {
      const own = await paidTask(wallet.address)
      expectProblemShape(
        await rate(own, { score: 5, signature: await sign(wallet, own, 5) }),
        403,
        'rating_not_allowed',
      )
    }
    expectProblemShape(await rate(id, { score: 6, signature: await sign(buyer, id, 5) }), 400, 'invalid_body')
    expectProblemShape(
      await rate(id, { score: 2.5, signature: await sign(buyer, id, 5) }),
      400,
      'invalid_body',
    )
    const first = await rate(id, { score: 2, signature: await sign(buyer, id, 2) })
    expect(first.status).toBe(200)
    // A replay of the same signed rating, or a racing second one: already rated.
    const signature = await (async () => {
      const rateTemplate = first.json.rate ?? null
      expect(rateTemplate).toBeNull()
      return buyer.signTypedData({
        domain: { name: 'agentmarket', version: '1', chainId: 8453 },
        types: {
          TaskRating: [
            { name: 'market', type: 'string' },
            { name: 'agent', type: 'string' },
            { name: 'task', type: 'string' },
            { name: 'score', type: 'uint8' },
            { name: 'comment', type: 'string' },
          ],
        },
        primaryType: 'TaskRating',
        message: { market: 'http://localhost:3000', agent: 'seller', task: id, score: 5, comment: '' },
      })
    })()
    expectProblemShape(await rate(id, { score: 5, signature }), 409, 'already_rated')
    expect((await call('GET', path(id))).json.rating.score).toBe(2)
    expect((await call('GET', '/api/community/agents/seller')).json.ratings).toEqual({
      count: 1,
      average: 2,
      buyers: 1,
    })
  })

  test('error: an unfinished task, a free one or one paid by MPP cannot be rated', async () => {
    const { paidTask, rate, call, path } = await market()
    for (const [status, method] of [
      ['paid', 'transfer'],
      ['delivered', 'transfer'],
      ['completed', 'mpp'],
    ] as const) {
      const id = await paidTask(buyer.address, status, method)
      expect((await call('GET', path(id))).json.rate).toBeNull()
      expectProblemShape(await rate(id, { score: 5, signature: `0x${'11'.repeat(65)}` }), 409, 'not_ratable')
    }
  })

  test('behavior: each buyer wallet is one vote in the trust score: one unhappy buyer rating many tasks takes at most a third of the paid points', async () => {
    const { paidTask, sign, rate, call } = await market()
    const profile = async () => (await call('GET', '/api/community/agents/seller')).json
    // Three fresh buyers pay for delivered tasks: 4 × 10 USDC, 10 and 10: credit 30 USDC from 3 wallets without
    // history elsewhere, which count together as one buyer of 10 USDC: 10 paid points. Each vote weighs 1 (10 USDC).
    const ids = [] as string[]
    for (let i = 0; i < 4; i++) ids.push(await paidTask(buyer.address))
    const happy = await paidTask(secondBuyer.address)
    const middling = await paidTask(thirdBuyer.address)
    // Self-made: registered, profile, wallet, an owner proven by signature: 20.
    expect((await profile()).trustScore).toBe(30)
    for (const id of ids)
      expect((await rate(id, { score: 1, signature: await sign(buyer, id, 1) })).status).toBe(200)
    // One vote of 0 among the prior's two: 10 × 2/3 = 6.7 paid points, whatever number of tasks it rated.
    expect((await profile()).trustScore).toBe(27)
    await rate(happy, { score: 5, signature: await sign(secondBuyer, happy, 5) })
    expect((await profile()).trustScore).toBe(28) // 10 × 3/4 = 7.5, rounded half up
    await rate(middling, { score: 3, signature: await sign(thirdBuyer, middling, 3) })
    expect((await profile()).trustScore).toBe(27) // 10 × 3.5/5 = 7
    expect((await profile()).ratings).toEqual({ count: 6, average: 2, buyers: 3 })
  })
})
