import { describe, expect, test } from 'bun:test'
import { Errors, Expires, Store } from 'mppx'
import {
  type Address,
  createClient,
  custom,
  encodeAbiParameters,
  encodeEventTopics,
  type Hex,
  keccak256,
  stringToHex,
} from 'viem'
import { tempo as tempoChain } from 'viem/tempo/chains'
import { currentScope, inScope, RequestScope } from '../ports/requestScope.ts'
import { TRANSFER_WITH_MEMO_EVENT_ABI } from './MppMemo.ts'
import { receiptBroadcast, withTaskClaim } from './MppReceipt.ts'

const REALM = 'market.example'
const CURRENCY: Address = '0x20C000000000000000000000b9537d11c60E8b50'
const SELLER: Address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const PAYER: Address = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'
const HASH: Hex = `0x${'ab'.repeat(32)}`
const CHALLENGE_ID = 'challenge-of-this-order'

/** The first `bytes` bytes of keccak256(text), as hex digits. */
const digits = (text: string, bytes: number) => keccak256(stringToHex(text)).slice(2, 2 + 2 * bytes)
/** The attribution memo mppx's clients write: tag, version 1, realm, a client fingerprint, the challenge. */
const memo = (challengeId: string): Hex =>
  `0x${digits('mpp', 4)}01${digits(REALM, 10)}${'00'.repeat(10)}${digits(challengeId, 7)}`

/** A mined, succeeded receipt of HASH paying SELLER 10000 from PAYER with a memo naming CHALLENGE_ID. */
const receipt = () => ({
  transactionHash: HASH,
  status: '0x1',
  from: PAYER,
  logs: [
    {
      address: CURRENCY,
      topics: encodeEventTopics({
        abi: TRANSFER_WITH_MEMO_EVENT_ABI,
        eventName: 'TransferWithMemo',
        args: { from: PAYER, to: SELLER, memo: memo(CHALLENGE_ID) },
      }),
      data: encodeAbiParameters([{ type: 'uint256' }], [10_000n]),
    },
  ],
})

/** The verification over a node that answers every receipt read with `receipt()`, and the methods it was asked. */
function verification() {
  const asked: string[] = []
  const fallback: unknown[] = []
  const client = createClient({
    chain: tempoChain,
    transport: custom({
      async request({ method }: { method: string }) {
        asked.push(method)
        return method === 'eth_getTransactionReceipt' ? receipt() : null
      },
    }),
  })
  const broadcast = receiptBroadcast({
    library: { Errors, Expires, Store },
    fallback: async (input) => {
      fallback.push(input)
      return 'fallback'
    },
    getClient: () => client,
    store: Store.memory(),
  })
  return { broadcast, asked, fallback }
}

/** A hash credential for HASH under the challenge of this order. */
const credential = (payload: { type: string } & Record<string, unknown> = { type: 'hash', hash: HASH }) => ({
  credential: {
    challenge: {
      id: CHALLENGE_ID,
      realm: REALM,
      expires: new Date(Date.now() + 60_000).toISOString(),
      request: { amount: '10000', currency: CURRENCY, recipient: SELLER, methodDetails: { chainId: 4217 } },
    },
    payload,
    source: `did:pkh:eip155:4217:${PAYER}`,
  },
})

describe('receiptBroadcast: a hash credential verified from its receipt', () => {
  test('behavior: pays with one receipt read and nothing else asked of the node', async () => {
    const { broadcast, asked } = verification()
    expect(await broadcast(credential())).toMatchObject({
      method: 'tempo',
      status: 'success',
      reference: HASH,
    })
    expect(asked).toEqual(['eth_getTransactionReceipt'])
  })

  test('attack: the same hash twice at once pays once; the other is refused as used', async () => {
    const { broadcast } = verification()
    const outcomes = await Promise.allSettled([broadcast(credential()), broadcast(credential())])
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1)
    const refused = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult
    expect(String(refused.reason)).toContain('already been used')
  })

  test('attack: a hash that paid earlier pays nothing again', async () => {
    const { broadcast } = verification()
    await broadcast(credential())
    await expect(broadcast(credential())).rejects.toThrow('already been used')
  })

  test('behavior: a signed transaction, or a payload that is no transaction hash, goes elsewhere or is refused', async () => {
    const { broadcast, asked, fallback } = verification()
    expect(await broadcast(credential({ type: 'transaction', signature: '0x76' }))).toBe('fallback' as never)
    expect(fallback).toHaveLength(1)
    await expect(broadcast(credential({ type: 'hash', hash: '0x1234' }))).rejects.toThrow(
      'not a transaction hash',
    )
    expect(asked).toEqual([])
  })

  test("behavior: a charge under withTaskClaim takes no replay claim (its task is the claim), in the request's one scope and only while it runs", async () => {
    const { broadcast } = verification()
    const request = new RequestScope(true, Number.POSITIVE_INFINITY, Date.now)
    await inScope(request, async () => {
      // Twice under the task's claim: neither takes the replay marker (the caller's task insert refuses the second).
      await withTaskClaim(() => broadcast(credential()))
      await withTaskClaim(async () => {
        expect(currentScope()).toBe(request)
        return broadcast(credential())
      })
      expect(request.taskClaim).toBe(false)
      // Outside it, in the same request, the replay marker is taken: the first use passes, the next is refused.
      await broadcast(credential())
      await expect(broadcast(credential())).rejects.toThrow('already been used')
    })
    // Outside any request, withTaskClaim opens a scope of its own.
    expect(currentScope()).toBeUndefined()
    await withTaskClaim(async () => expect(currentScope()?.taskClaim).toBe(true))
  })
})
