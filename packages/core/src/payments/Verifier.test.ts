import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import {
  type Address,
  decodeEventLog,
  encodeAbiParameters,
  encodeEventTopics,
  encodeFunctionData,
  getAddress,
  type Hex,
  InvalidAddressError,
  isAddressEqual,
  pad,
  parseAbi,
} from 'viem'
import type { ChainReader, PaymentReceipt, ReceiptLog } from '../ports/Chain.ts'
import { DEPOSIT_ABI, ESCROW_EVENT_ABI } from './Escrow.ts'
import {
  confirmationsOf,
  judgeEscrow,
  judgeTaskPayment,
  judgeTransfer,
  type RefusalReason,
  type TransferExpectation,
  type Verdict,
  verifyPayments,
} from './Verifier.ts'

const USDC: Address = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
const OTHER_TOKEN: Address = '0x4200000000000000000000000000000000000006'
const SELLER: Address = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const BUYER: Address = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359'
const STRANGER: Address = '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB'
const ESCROW: Address = '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb'
const BUNDLER: Address = '0x0000000000000000000000000000000000000b0b'
const TASK_ID = pad('0x1234', { size: 32 })
/** The slaDeadline the test deposits name, and the latest one their expectations take. */
const DEADLINE = 1_900_000_000n
const TRANSFER = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 value)'])
const NFT = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)'])

function transferLog(token: Address, from: Address, to: Address, value: bigint, logIndex = 0): ReceiptLog {
  return {
    address: token,
    topics: encodeEventTopics({ abi: TRANSFER, eventName: 'Transfer', args: { from, to } }) as Hex[],
    data: encodeAbiParameters([{ type: 'uint256' }], [value]),
    logIndex,
  }
}

function depositedLog(seller: Address, amount: bigint, slaDeadline = DEADLINE): ReceiptLog {
  return {
    address: ESCROW,
    topics: encodeEventTopics({
      abi: ESCROW_EVENT_ABI,
      eventName: 'Deposited',
      args: { taskId: TASK_ID, buyer: BUYER, seller },
    }) as Hex[],
    data: encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], [amount, slaDeadline]),
    logIndex: 1,
  }
}

function receipt(overrides: Partial<PaymentReceipt> = {}): PaymentReceipt {
  return {
    transactionHash: `0x${'ab'.repeat(32)}`,
    blockNumber: 100n,
    status: 'success',
    from: BUYER,
    to: USDC,
    input: '0x',
    logs: [transferLog(USDC, BUYER, SELLER, 10_000n)],
    ...overrides,
  }
}

const transfer = { token: USDC, recipient: SELLER, minAmount: 10_000n, minConfirmations: 3 }

describe('confirmationsOf', () => {
  test('behavior: the block holding the transaction counts as the first confirmation', () => {
    expect(confirmationsOf(100n, 100n)).toBe(1)
    expect(confirmationsOf(100n, 102n)).toBe(3)
    expect(confirmationsOf(100n, 99n)).toBe(0)
  })
})

describe('judgeTransfer', () => {
  test('behavior: a USDC transfer to the seller of at least the price, with 3 confirmations, pays', () => {
    expect(judgeTransfer(receipt(), 102n, transfer)).toEqual({
      ok: true,
      amount: 10_000n,
      from: BUYER,
      blockNumber: 100n,
      confirmations: 3,
    })
    const overpaid = receipt({ logs: [transferLog(USDC, BUYER, SELLER, 25_000n)] })
    expect(judgeTransfer(overpaid, 200n, transfer)).toMatchObject({ ok: true, amount: 25_000n })
  })

  test('behavior: not mined, or too few confirmations, is pending and retryable', () => {
    expect(judgeTransfer(null, 102n, transfer)).toEqual({
      ok: false,
      reason: 'pending',
      retryable: true,
      confirmations: 0,
      required: 3,
    })
    expect(judgeTransfer(receipt(), 100n, transfer)).toEqual({
      ok: false,
      reason: 'pending',
      retryable: true,
      confirmations: 1,
      required: 3,
    })
    expect(judgeTransfer(receipt(), 101n, transfer)).toMatchObject({ reason: 'pending', confirmations: 2 })
  })

  test('error: reverted', () => {
    expect(judgeTransfer(receipt({ status: 'reverted' }), 200n, transfer)).toEqual({
      ok: false,
      reason: 'reverted',
      retryable: false,
    })
  })

  test('error: wrong token — another ERC-20, an NFT transfer, or no transfer at all', () => {
    expect(
      judgeTransfer(receipt({ logs: [transferLog(OTHER_TOKEN, BUYER, SELLER, 10_000n)] }), 200n, transfer),
    ).toMatchObject({
      reason: 'wrong_token',
    })
    const nft: ReceiptLog = {
      address: USDC,
      topics: encodeEventTopics({
        abi: NFT,
        eventName: 'Transfer',
        args: { from: BUYER, to: SELLER, tokenId: 10_000n },
      }) as Hex[],
      data: '0x',
      logIndex: 0,
    }
    expect(judgeTransfer(receipt({ logs: [nft] }), 200n, transfer)).toMatchObject({ reason: 'wrong_token' })
    expect(judgeTransfer(receipt({ logs: [] }), 200n, transfer)).toMatchObject({ reason: 'wrong_token' })
  })

  test('error: wrong recipient', () => {
    expect(
      judgeTransfer(receipt({ logs: [transferLog(USDC, BUYER, STRANGER, 10_000n)] }), 200n, transfer),
    ).toMatchObject({
      reason: 'wrong_recipient',
      retryable: false,
    })
  })

  test('error: an amount below the price, even when several small transfers add up to it', () => {
    expect(
      judgeTransfer(receipt({ logs: [transferLog(USDC, BUYER, SELLER, 9_999n)] }), 200n, transfer),
    ).toMatchObject({
      reason: 'amount_mismatch',
    })
    const split = [transferLog(USDC, BUYER, SELLER, 5_000n, 0), transferLog(USDC, BUYER, SELLER, 5_000n, 1)]
    expect(judgeTransfer(receipt({ logs: split }), 200n, transfer)).toMatchObject({
      reason: 'amount_mismatch',
    })
  })

  test('error: wrong sender when the task names the buyer wallet; the log is judged, not receipt.from', () => {
    const fromStranger = receipt({ from: BUYER, logs: [transferLog(USDC, STRANGER, SELLER, 10_000n)] })
    expect(judgeTransfer(fromStranger, 200n, { ...transfer, sender: BUYER })).toMatchObject({
      reason: 'wrong_sender',
    })
    const viaBundler = receipt({
      from: BUNDLER,
      to: BUNDLER,
      logs: [transferLog(USDC, BUYER, SELLER, 10_000n)],
    })
    expect(judgeTransfer(viaBundler, 200n, { ...transfer, sender: BUYER })).toMatchObject({
      ok: true,
      from: BUYER,
    })
  })

  test('behavior: the matching log is found among others, with any address case', () => {
    const logs = [
      transferLog(OTHER_TOKEN, BUYER, SELLER, 1n, 0),
      transferLog(USDC, BUYER, STRANGER, 1n, 1),
      transferLog(USDC, BUYER, SELLER, 10_000n, 2),
    ]
    const lower = {
      ...transfer,
      token: USDC.toLowerCase() as Address,
      recipient: SELLER.toLowerCase() as Address,
    }
    expect(judgeTransfer(receipt({ logs }), 200n, lower)).toMatchObject({ ok: true, amount: 10_000n })
  })

  const paid = { ...transfer, sender: BUYER }

  test("error: an attacker's decoys pay nothing — another token, someone else, another sender, too little, malformed logs", () => {
    const nft: ReceiptLog = {
      ...transferLog(USDC, BUYER, SELLER, 10_000n),
      topics: [...transferLog(USDC, BUYER, SELLER, 10_000n).topics, pad('0x01')],
    }
    const shortData = { ...transferLog(USDC, BUYER, SELLER, 10_000n), data: '0x2710' as Hex }
    const dirtyTopic = transferLog(USDC, BUYER, SELLER, 10_000n)
    dirtyTopic.topics[2] = `0x${'11'.repeat(12)}${SELLER.slice(2).toLowerCase()}`
    const decoys = [transferLog(OTHER_TOKEN, BUYER, SELLER, 10_000n), nft, shortData, dirtyTopic]
    expect(judgeTransfer(receipt({ logs: decoys }), 200n, paid)).toMatchObject({ reason: 'wrong_token' })
    const toStranger = [...decoys, transferLog(USDC, BUYER, STRANGER, 10_000n)]
    expect(judgeTransfer(receipt({ logs: toStranger }), 200n, paid)).toMatchObject({
      reason: 'wrong_recipient',
    })
    const fromStranger = [...toStranger, transferLog(USDC, STRANGER, SELLER, 10_000n)]
    expect(judgeTransfer(receipt({ logs: fromStranger }), 200n, paid)).toMatchObject({
      reason: 'wrong_sender',
    })
    const tooLittle = [...fromStranger, transferLog(USDC, BUYER, SELLER, 9_999n)]
    expect(judgeTransfer(receipt({ logs: tooLittle }), 200n, paid)).toMatchObject({
      reason: 'amount_mismatch',
    })
    const paying = [...tooLittle, transferLog(USDC, BUYER, SELLER, 10_000n)]
    expect(judgeTransfer(receipt({ logs: paying }), 200n, paid)).toMatchObject({ ok: true, from: BUYER })
    expect(judgeTransfer(receipt({ logs: paying }), 101n, paid)).toMatchObject({ reason: 'pending' })
    expect(judgeTransfer(receipt({ logs: paying, status: 'reverted' }), 200n, paid)).toMatchObject({
      reason: 'reverted',
    })
  })

  test('behavior: topics in upper-case hex read as the same addresses', () => {
    const shouting = transferLog(USDC, BUYER, SELLER, 10_000n)
    shouting.topics = shouting.topics.map((topic) => `0x${topic.slice(2).toUpperCase()}` as Hex)
    expect(judgeTransfer(receipt({ logs: [shouting] }), 200n, paid)).toMatchObject({ ok: true, from: BUYER })
  })

  test('error: a malformed token address in a Transfer log throws, as isAddressEqual did', () => {
    const forged = { ...transferLog(USDC, BUYER, SELLER, 10_000n), address: '0x1234' as Address }
    expect(() => judgeTransfer(receipt({ logs: [forged] }), 200n, paid)).toThrow(InvalidAddressError)
  })

  test('behavior: any list of logs is judged as the filters over viem-decoded logs judged it', () => {
    const party = fc.constantFrom(BUYER, SELLER, STRANGER)
    const cased = (address: Address) =>
      fc.constantFrom(
        address,
        address.toLowerCase() as Address,
        `0x${address.slice(2).toUpperCase()}` as Address,
      )
    const log = fc
      .record({
        token: fc.constantFrom(USDC, OTHER_TOKEN).chain(cased),
        from: party,
        to: party,
        value: fc.constantFrom(1n, 9_999n, 10_000n, 25_000n),
        shape: fc.constantFrom('transfer', 'transfer', 'transfer', 'nft', 'short data', 'other event'),
      })
      .map(({ token, from, to, value, shape }): ReceiptLog => {
        const plain = transferLog(token, from, to, value)
        if (shape === 'nft') return { ...plain, topics: [...plain.topics, pad('0x01')] }
        if (shape === 'short data') return { ...plain, data: '0x01' }
        if (shape === 'other event') return { ...plain, topics: [TASK_ID, ...plain.topics.slice(1)] }
        return plain
      })
    const expectation = fc.record({
      recipient: fc.constantFrom(SELLER, STRANGER).chain(cased),
      sender: fc.constantFrom(BUYER, null, undefined),
      minAmount: fc.constantFrom(1n, 10_000n, 20_000n),
    })
    fc.assert(
      fc.property(fc.array(log, { maxLength: 6 }), expectation, (logs, expected) => {
        const full = { ...expected, token: USDC, minConfirmations: 1 }
        expect(judgeTransfer(receipt({ logs }), 200n, full)).toEqual(filteredVerdict(logs, 200n, full))
      }),
      { numRuns: 2_000 },
    )
  })
})

/** The verdict of a successful receipt as the rules gave it before the one-pass scan: viem decodes, then filters. */
function filteredVerdict(logs: ReceiptLog[], head: bigint, expected: TransferExpectation): Verdict {
  const refused = (reason: RefusalReason): Verdict => ({ ok: false, reason, retryable: false })
  const transfers = logs.flatMap((log) => {
    try {
      const { args } = decodeEventLog({
        abi: TRANSFER,
        data: log.data,
        topics: log.topics as [Hex],
        strict: true,
      })
      const { from, to, value } = args as { from: Address; to: Address; value: bigint }
      return log.topics.length === 3 ? [{ token: log.address, from, to, value }] : []
    } catch {
      return []
    }
  })
  const inToken = transfers.filter((one) => isAddressEqual(one.token, expected.token))
  if (inToken.length === 0) return refused('wrong_token')
  const toRecipient = inToken.filter((one) => isAddressEqual(one.to, expected.recipient))
  if (toRecipient.length === 0) return refused('wrong_recipient')
  const { sender } = expected
  const fromSender = sender ? toRecipient.filter((one) => isAddressEqual(one.from, sender)) : toRecipient
  if (fromSender.length === 0) return refused('wrong_sender')
  const paying = fromSender.find((one) => one.value >= expected.minAmount)
  if (!paying) return refused('amount_mismatch')
  const confirmations = confirmationsOf(100n, head)
  return { ok: true, amount: paying.value, from: getAddress(paying.from), blockNumber: 100n, confirmations }
}

describe('judgeEscrow', () => {
  const escrow = {
    token: USDC,
    escrow: ESCROW,
    seller: SELLER,
    minAmount: 10_000n,
    minConfirmations: 3,
    latestSlaDeadline: DEADLINE,
  }
  const depositCall = (seller: Address, amount: bigint, slaDeadline = DEADLINE) =>
    encodeFunctionData({
      abi: DEPOSIT_ABI,
      functionName: 'deposit',
      args: [TASK_ID, seller, amount, slaDeadline],
    })
  const direct = (seller: Address, amount: bigint, funded = amount, slaDeadline = DEADLINE) =>
    receipt({
      to: ESCROW,
      input: depositCall(seller, amount, slaDeadline),
      logs: [transferLog(USDC, BUYER, ESCROW, funded)],
    })

  test('behavior: a direct deposit call naming the seller with the price, funded in USDC, pays with its task id', () => {
    expect(judgeEscrow(direct(SELLER, 10_000n), 102n, escrow)).toEqual({
      ok: true,
      amount: 10_000n,
      from: BUYER,
      blockNumber: 100n,
      confirmations: 3,
      escrowTaskId: TASK_ID,
    })
    expect(judgeEscrow(direct(SELLER, 10_000n), 101n, escrow)).toMatchObject({
      reason: 'pending',
      confirmations: 2,
    })
  })

  test('behavior: a deposit made through a contract wallet is read from the escrow event', () => {
    const viaWallet = receipt({
      from: BUNDLER,
      to: BUNDLER,
      input: '0xdeadbeef',
      logs: [transferLog(USDC, BUYER, ESCROW, 10_000n, 0), depositedLog(SELLER, 10_000n)],
    })
    expect(judgeEscrow(viaWallet, 200n, { ...escrow, sender: BUYER })).toMatchObject({
      ok: true,
      escrowTaskId: TASK_ID,
      from: BUYER,
    })
  })

  test('error: a deadline past latestSlaDeadline, in the call or in the event, holds the seller back: refused', () => {
    const late = DEADLINE + 1n
    expect(judgeEscrow(direct(SELLER, 10_000n, 10_000n, late), 200n, escrow)).toEqual({
      ok: false,
      reason: 'escrow_deadline_too_late',
      retryable: false,
    })
    expect(judgeEscrow(direct(SELLER, 10_000n, 10_000n, 2n ** 256n - 1n), 200n, escrow)).toMatchObject({
      reason: 'escrow_deadline_too_late',
    })
    // An early deadline only lets the seller claim sooner: the contract never refunds, so it costs the buyer nothing.
    expect(judgeEscrow(direct(SELLER, 10_000n, 10_000n, 0n), 200n, escrow)).toMatchObject({ ok: true })
    const viaWallet = (slaDeadline: bigint) =>
      receipt({
        from: BUNDLER,
        to: BUNDLER,
        input: '0xdeadbeef',
        logs: [transferLog(USDC, BUYER, ESCROW, 10_000n, 0), depositedLog(SELLER, 10_000n, slaDeadline)],
      })
    expect(judgeEscrow(viaWallet(late), 200n, escrow)).toMatchObject({ reason: 'escrow_deadline_too_late' })
    expect(judgeEscrow(viaWallet(DEADLINE), 200n, escrow)).toMatchObject({ ok: true })
  })

  test('error: not an escrow deposit — a plain transfer, another call to the escrow, an event of another contract', () => {
    expect(judgeEscrow(receipt(), 200n, escrow)).toMatchObject({ reason: 'not_an_escrow_deposit' })
    expect(judgeEscrow(receipt({ to: ESCROW, input: '0x12345678' }), 200n, escrow)).toMatchObject({
      reason: 'not_an_escrow_deposit',
    })
    const forged = { ...depositedLog(SELLER, 10_000n), address: STRANGER }
    expect(judgeEscrow(receipt({ to: BUNDLER, logs: [forged] }), 200n, escrow)).toMatchObject({
      reason: 'not_an_escrow_deposit',
    })
  })

  test('error: the deposit names another seller, or less than the price', () => {
    expect(judgeEscrow(direct(STRANGER, 10_000n), 200n, escrow)).toMatchObject({ reason: 'wrong_recipient' })
    expect(judgeEscrow(direct(SELLER, 9_999n), 200n, escrow)).toMatchObject({ reason: 'amount_mismatch' })
  })

  test('error: the deposit is not funded by a USDC transfer into the escrow of its amount', () => {
    expect(judgeEscrow(direct(SELLER, 10_000n, 5_000n), 200n, escrow)).toMatchObject({
      reason: 'amount_mismatch',
    })
    const otherToken = receipt({
      to: ESCROW,
      input: depositCall(SELLER, 10_000n),
      logs: [transferLog(OTHER_TOKEN, BUYER, ESCROW, 10_000n)],
    })
    expect(judgeEscrow(otherToken, 200n, escrow)).toMatchObject({ reason: 'wrong_token' })
    const elsewhere = receipt({
      to: ESCROW,
      input: depositCall(SELLER, 10_000n),
      logs: [transferLog(USDC, BUYER, STRANGER, 10_000n)],
    })
    expect(judgeEscrow(elsewhere, 200n, escrow)).toMatchObject({ reason: 'not_an_escrow_deposit' })
  })

  test('error: reverted, and a wrong sender when the buyer wallet is named', () => {
    expect(judgeEscrow({ ...direct(SELLER, 10_000n), status: 'reverted' }, 200n, escrow)).toMatchObject({
      reason: 'reverted',
    })
    expect(judgeEscrow(direct(SELLER, 10_000n), 200n, { ...escrow, sender: STRANGER })).toMatchObject({
      reason: 'wrong_sender',
    })
  })
})

describe('judgeTaskPayment', () => {
  const task = {
    token: USDC,
    seller: SELLER,
    minAmount: 10_000n,
    minConfirmations: 3,
    escrow: ESCROW,
    latestSlaDeadline: DEADLINE,
  }
  const deposit = (seller: Address) =>
    receipt({
      to: ESCROW,
      input: encodeFunctionData({
        abi: DEPOSIT_ABI,
        functionName: 'deposit',
        args: [TASK_ID, seller, 10_000n, DEADLINE],
      }),
      logs: [transferLog(USDC, BUYER, ESCROW, 10_000n)],
    })

  test('behavior: a plain transfer to the seller is judged as a transfer, with or without an escrow', () => {
    expect(judgeTaskPayment(receipt(), 102n, task)).toMatchObject({ ok: true, amount: 10_000n })
    expect(judgeTaskPayment(receipt(), 102n, { ...task, escrow: null })).toMatchObject({ ok: true })
    expect(judgeTaskPayment(null, 102n, task)).toMatchObject({ reason: 'pending', confirmations: 0 })
  })

  test('behavior: a transaction that touches the escrow is judged as a deposit', () => {
    expect(judgeTaskPayment(deposit(SELLER), 102n, task)).toMatchObject({ ok: true, escrowTaskId: TASK_ID })
    expect(judgeTaskPayment(deposit(STRANGER), 102n, task)).toMatchObject({ reason: 'wrong_recipient' })
    const release = receipt({ to: ESCROW, input: '0x86d1a69f', logs: [] })
    expect(judgeTaskPayment(release, 102n, task)).toMatchObject({ reason: 'not_an_escrow_deposit' })
  })

  test('error: without an escrow configured, a deposit is not a transfer to the seller', () => {
    expect(judgeTaskPayment(deposit(SELLER), 102n, { ...task, escrow: null })).toMatchObject({
      reason: 'wrong_recipient',
    })
  })
})

describe('verifyPayments', () => {
  test('behavior: one head read and one receipts read judge the whole list, in order', async () => {
    const calls = { head: 0, receipts: 0 }
    const mined = new Map<Hex, PaymentReceipt>([
      [`0x${'01'.repeat(32)}`, receipt({ transactionHash: `0x${'01'.repeat(32)}` })],
      [`0x${'02'.repeat(32)}`, receipt({ transactionHash: `0x${'02'.repeat(32)}`, status: 'reverted' })],
    ])
    const chain: ChainReader = {
      async headBlock() {
        calls.head++
        return 102n
      },
      async receipts(hashes) {
        calls.receipts++
        return hashes.map((hash) => mined.get(hash) ?? null)
      },
    }
    const hashes: Hex[] = [`0x${'01'.repeat(32)}`, `0x${'02'.repeat(32)}`, `0x${'03'.repeat(32)}`]
    const verdicts = await verifyPayments(
      chain,
      hashes.map((txHash) => ({ txHash, kind: 'transfer' as const, expected: transfer })),
    )
    expect(verdicts.map((verdict) => (verdict.ok ? 'paid' : verdict.reason))).toEqual([
      'paid',
      'reverted',
      'pending',
    ])
    expect(calls).toEqual({ head: 1, receipts: 1 })
    expect(await verifyPayments(chain, [])).toEqual([])
    expect(calls).toEqual({ head: 1, receipts: 1 })
  })
  test("behavior: a fresh receipt of the check's own transaction judges a check of one confirmation with no read; a deeper check, another hash, or a deposit lacking its call data is read again", async () => {
    const reads: Hex[][] = []
    const chain: ChainReader = {
      headBlock: async () => 100n,
      async receipts(hashes) {
        reads.push([...hashes])
        return hashes.map(() => null)
      },
    }
    const ours: Hex = `0x${'0a'.repeat(32)}`
    const fresh = [receipt({ transactionHash: ours, blockNumber: 100n })]
    const check = (minConfirmations: number, txHash: Hex = ours) => ({
      txHash,
      kind: 'transfer' as const,
      expected: { ...transfer, minConfirmations },
    })
    expect(await verifyPayments(chain, [check(1)], fresh)).toMatchObject([{ ok: true, confirmations: 1 }])
    expect(reads).toEqual([])
    // Re-cased, it is the same transaction.
    expect(
      await verifyPayments(chain, [check(1, ours.toUpperCase().replace('0X', '0x') as Hex)], fresh),
    ).toMatchObject([{ ok: true }])
    expect(reads).toEqual([])
    expect(await verifyPayments(chain, [check(3)], fresh)).toMatchObject([{ reason: 'pending' }])
    const other: Hex = `0x${'0b'.repeat(32)}`
    expect(await verifyPayments(chain, [check(1, other)], fresh)).toMatchObject([{ reason: 'pending' }])
    const escrowed = {
      txHash: ours,
      kind: 'task' as const,
      expected: {
        token: USDC,
        seller: SELLER,
        minAmount: 10_000n,
        minConfirmations: 1,
        escrow: ESCROW,
        latestSlaDeadline: DEADLINE,
      },
    }
    const withoutInput = [receipt({ transactionHash: ours, to: ESCROW, input: null })]
    expect(await verifyPayments(chain, [escrowed], withoutInput)).toMatchObject([{ reason: 'pending' }])
    expect(reads).toEqual([[ours], [other], [ours]])
    // Beside a check it does not serve, the fresh receipt keeps its place; only the other is read.
    const both = await verifyPayments(chain, [check(1, other), check(1)], fresh)
    expect(both.map((verdict) => (verdict.ok ? 'paid' : verdict.reason))).toEqual(['pending', 'paid'])
    expect(reads.at(-1)).toEqual([other])
  })
})
