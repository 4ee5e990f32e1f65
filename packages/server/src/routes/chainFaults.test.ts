import { describe, expect, test } from 'bun:test'
import { type ChainReader, ChainUnavailableError } from '@agentmarket/core'
import { PAYER, payment, SELLER, scriptedChain, TX_HASH } from '../testing/chain.ts'
import { expectProblemShape, testApp } from '../testing/http.ts'

/** A seller with a wallet and a pending 1.5 USDC task. */
async function pendingTask(chain: ChainReader) {
  const app = await testApp('2026-06-01T12:00:00.000Z', { chain })
  const { key } = await app.register('seller', {
    skills: [{ name: 'Report', type: 'purchasable', price: 1.5 }],
  })
  await app.call('PUT', '/api/agents/seller', { key, body: { walletAddress: SELLER } })
  const created = await app.call('POST', '/api/agents/seller/tasks', { body: { skill: 'report' } })
  const taskId = created.json.task_id as string
  const proof = created.json.payment.payer_proof
  const payerSignature = await PAYER.signTypedData({
    ...proof,
    message: { ...proof.message, txHash: TX_HASH },
  })
  const verify = () =>
    app.call('POST', `/api/agents/seller/tasks/${taskId}/verify-payment`, {
      body: { tx_hash: TX_HASH, payer_signature: payerSignature },
    })
  const status = async () => (await app.call('GET', `/api/agents/seller/tasks/${taskId}`)).json.status
  return { verify, status }
}

describe('payment verification under chain faults', () => {
  test('behavior: a head that goes backwards (a lagging node behind a load balancer) counts fewer confirmations: 202, not paid', async () => {
    const { chain, script } = scriptedChain()
    script.receipts = [[payment(100n)]]
    script.heads = [102n, 99n, 101n, 102n]
    const { verify, status } = await pendingTask(chain)
    expect((await verify()).status).toBe(200) // head 102: 3 confirmations
    const again = await pendingTask(chain)
    const behind = await again.verify() // head 99: the node has not seen block 100 yet
    expect(behind.status).toBe(202)
    expect(behind.json).toMatchObject({ verified: false, state: 'pending', confirmations: 0, required: 3 })
    expect(await again.status()).toBe('pending_payment')
    expect((await again.verify()).json).toMatchObject({ confirmations: 2 }) // head 101
    expect(await status()).toBe('paid')
  })

  test('error: a node that times out or fails answers 503 with Retry-After and changes nothing', async () => {
    const { chain, script } = scriptedChain()
    const { verify, status } = await pendingTask(chain)
    for (const fault of [new ChainUnavailableError('timeout'), new ChainUnavailableError('HTTP 502')]) {
      script.heads = [fault]
      script.receipts = [[payment(100n)]]
      const answer = await verify()
      expectProblemShape(answer, 503, 'chain_unavailable')
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(await status()).toBe('pending_payment')
      script.heads = [200n]
      script.receipts = [fault]
      expectProblemShape(await verify(), 503, 'chain_unavailable')
      expect(await status()).toBe('pending_payment')
    }
  })

  test('error: a receipt from a block past the head read in the same check counts 0 confirmations', async () => {
    const { chain, script } = scriptedChain()
    script.heads = [100n]
    script.receipts = [[payment(105n)]]
    const { verify, status } = await pendingTask(chain)
    const answer = await verify()
    expect(answer.status).toBe(202)
    expect(answer.json.confirmations).toBe(0)
    expect(await status()).toBe('pending_payment')
  })
})
