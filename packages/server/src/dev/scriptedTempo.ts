import {
  type Address,
  type Chain,
  type Client,
  type CustomTransport,
  createClient,
  custom,
  decodeFunctionData,
  encodeAbiParameters,
  encodeEventTopics,
  type Hex,
  keccak256,
  numberToHex,
} from 'viem'
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts'
import { Abis, Transaction } from 'viem/tempo'
import { tempo, tempoModerato } from 'viem/tempo/chains'

/** USDC.e on Tempo mainnet, the TIP-20 token (6 decimals) mppx charges in by default there. */
export const TEMPO_USDC_E: Address = '0x20C000000000000000000000b9537d11c60E8b50'

/** anvil's default private keys; on the scripted chain every account can pay. */
const PAYER_KEYS: readonly Hex[] = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
  '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba',
  '0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e',
  '0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356',
  '0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97',
  '0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6',
]

/** A local account from anvil's default key `index` (0–9), stable across runs. */
export function tempoPayer(index = 0): PrivateKeyAccount {
  const key = PAYER_KEYS[index]
  if (key === undefined)
    throw new RangeError(`tempoPayer: index ${index} is outside 0..${PAYER_KEYS.length - 1}`)
  return privateKeyToAccount(key)
}

/** Options of scriptedTempo(). */
export type ScriptedTempoOptions = {
  /** 'mainnet' (default) is viem's `tempo`, id 4217; 'testnet' is `tempoModerato`, id 42431. */
  chain?: 'mainnet' | 'testnet'
  /** Arms failNextBroadcast() from the start (and again after reset()). */
  failNextBroadcast?: boolean
}

/** One JSON-RPC request the scripted node answered (or refused). */
export type TempoCall = { side: string; method: string; params: unknown }

/** A receipt as eth_getTransactionReceipt returns it on Tempo (hex quantities). */
export type TempoRpcReceipt = Transaction.TransactionReceiptRpc

/** The HTTP face of a scripted node. */
export type TempoRpcServer = { url: string; stop(): Promise<void> }

/** An in-memory Tempo node answering what mppx 0.11's charge client and server call. */
export type ScriptedTempo = {
  chain: Chain
  /** A viem custom transport (retryCount 0); its calls are logged with side 'client'. */
  transport: CustomTransport
  /** A viem Client on this node whose calls are logged with `side` (default 'client'); one per side. */
  client(side?: string): Client<CustomTransport, Chain>
  /** Every request received, in order, from every side including HTTP ('http'). */
  calls: TempoCall[]
  /** The next broadcast mines the tx and then fails with -32000, like a node that dies before answering. */
  failNextBroadcast(): void
  /** The next broadcast fails with -32000 without mining: the node never took the transaction. */
  dropNextBroadcast(): void
  /** The next eth_getTransactionReceipt fails with -32000, as a node that stopped answering. */
  failNextReceipt(): void
  /** The next broadcast is mined reverted (status 0x0, no logs), as a transfer whose payer's balance moved meanwhile. */
  revertNextBroadcast(): void
  /** The next broadcast's receipt (answered and kept) is first changed by `change`: a node that lies about what it mined. */
  tamperNextReceipt(change: (receipt: TempoRpcReceipt) => void): void
  /** Moves the node's block time on by `seconds` (a signed transfer past its validBefore can never be mined). */
  advanceTime(seconds: number): void
  /** The hashes of every transaction mined, once each. */
  mined(): Hex[]
  /** The receipt of a mined tx, or undefined. */
  receipt(hash: Hex): TempoRpcReceipt | undefined
  /** Serves this node as JSON-RPC over HTTP on 127.0.0.1 (single and batch requests). */
  serve(): Promise<TempoRpcServer>
  /** Back to the state right after creation: no calls, no receipts, first block, failure re-armed per options. */
  reset(): void
}

const FIRST_BLOCK = 1000n
const BASE_FEE = '0x4a817c800'
const EMPTY_BLOOM: Hex = `0x${'00'.repeat(256)}`

/** A JSON-RPC error; viem maps `code` to its typed RPC errors (-32601 → method not supported). */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
  }
}

type Log = TempoRpcReceipt['logs'][number]
type SignedTempoTx = Transaction.TransactionSerializableTempo & { from: Address }

function decodeSigned(raw: unknown): { hash: Hex; tx: SignedTempoTx } {
  if (typeof raw !== 'string' || !raw.startsWith('0x76'))
    throw new RpcError(-32602, 'scripted tempo: expected a signed 0x76 Tempo transaction')
  const serialized = raw as Transaction.TransactionSerializedTempo
  const tx: Transaction.TransactionSerializableTempo & { from?: Address } =
    Transaction.deserialize(serialized)
  if (!tx.from) throw new RpcError(-32602, 'scripted tempo: transaction has no recoverable sender')
  return { hash: keccak256(serialized), tx: { ...tx, from: tx.from } }
}

function firstParam(params: unknown): unknown {
  return Array.isArray(params) ? params[0] : undefined
}

/** Creates a scripted, in-memory Tempo JSON-RPC node; broadcasts are mined at once with real TIP-20 logs. */
export function scriptedTempo(options: ScriptedTempoOptions = {}): ScriptedTempo {
  const chain: Chain = options.chain === 'testnet' ? tempoModerato : tempo
  const calls: TempoCall[] = []
  const receipts = new Map<string, TempoRpcReceipt>()
  const clients = new Map<string, Client<CustomTransport, Chain>>()
  let block = FIRST_BLOCK
  let failBroadcast = options.failNextBroadcast ?? false
  let dropBroadcast = false
  let failReceipt = false
  let timeOffsetSeconds = 0
  // Each mined block's time (seconds), so a receipt's block answers when it was mined, not the time it is asked.
  const blockTimes = new Map<bigint, number>()
  const now = () => Math.floor(Date.now() / 1000) + timeOffsetSeconds
  let revertBroadcast = false
  let tamperReceipt: ((receipt: TempoRpcReceipt) => void) | null = null

  const blockHash = (n: bigint) => keccak256(numberToHex(n, { size: 32 }))

  // Real TIP-20 semantics: transfer emits Transfer; transferWithMemo emits Transfer then TransferWithMemo.
  function mine(raw: unknown): TempoRpcReceipt {
    const { hash, tx } = decodeSigned(raw)
    block += 1n
    blockTimes.set(block, now())
    const where = {
      blockHash: blockHash(block),
      blockNumber: numberToHex(block),
      transactionHash: hash,
      transactionIndex: '0x0',
      removed: false,
    } as const
    const logs: Log[] = []
    // Every event argument is given, so no topic is null or an OR-list.
    const push = (address: Address, topics: ReturnType<typeof encodeEventTopics>, amount: bigint) =>
      logs.push({
        ...where,
        address,
        topics: topics as Log['topics'],
        data: encodeAbiParameters([{ type: 'uint256' }], [amount]),
        logIndex: numberToHex(logs.length),
      })
    for (const call of tx.calls) {
      if (!call.to || !call.data) continue
      let decoded: ReturnType<typeof decodeFunctionData<typeof Abis.tip20>>
      try {
        decoded = decodeFunctionData({ abi: Abis.tip20, data: call.data })
      } catch {
        continue
      }
      if (decoded.functionName !== 'transfer' && decoded.functionName !== 'transferWithMemo') continue
      const [to, amount] = decoded.args
      const from = tx.from
      push(call.to, encodeEventTopics({ abi: Abis.tip20, eventName: 'Transfer', args: { from, to } }), amount)
      if (decoded.functionName === 'transferWithMemo') {
        const memo = decoded.args[2]
        const topics = encodeEventTopics({
          abi: Abis.tip20,
          eventName: 'TransferWithMemo',
          args: { from, to, memo },
        })
        push(call.to, topics, amount)
      }
    }
    const firstTo = tx.calls[0]?.to ?? null
    const feeToken = typeof tx.feeToken === 'string' ? tx.feeToken : (firstTo ?? TEMPO_USDC_E)
    const receipt: TempoRpcReceipt = {
      blockHash: where.blockHash,
      blockNumber: where.blockNumber,
      contractAddress: null,
      cumulativeGasUsed: '0x5208',
      effectiveGasPrice: BASE_FEE,
      from: tx.from,
      gasUsed: '0x5208',
      logs,
      logsBloom: EMPTY_BLOOM,
      status: '0x1',
      to: firstTo,
      transactionHash: hash,
      transactionIndex: '0x0',
      type: '0x76',
      feeToken,
      feePayer: tx.from,
    }
    receipts.set(hash.toLowerCase(), receipt)
    return receipt
  }

  function broadcast(raw: unknown): TempoRpcReceipt {
    if (dropBroadcast) {
      dropBroadcast = false
      throw new RpcError(-32000, 'scripted tempo: node went away before taking the transaction')
    }
    // A node refuses a transaction it already mined (its nonce is spent): sending it again moves nothing.
    if (receipts.has(decodeSigned(raw).hash.toLowerCase()))
      throw new RpcError(-32000, 'scripted tempo: transaction already mined (nonce too low)')
    const receipt = mine(raw)
    if (revertBroadcast) {
      revertBroadcast = false
      Object.assign(receipt, { status: '0x0', logs: [] })
    }
    if (tamperReceipt) {
      tamperReceipt(receipt)
      tamperReceipt = null
    }
    if (failBroadcast) {
      failBroadcast = false
      throw new RpcError(-32000, 'scripted tempo: node went away after broadcast')
    }
    return receipt
  }

  function answer(side: string, method: string, params: unknown): unknown {
    calls.push({ side, method, params })
    switch (method) {
      // Refusing it makes viem fall back to the classic fee/gas calls below (cached per client).
      case 'eth_fillTransaction':
        throw new RpcError(-32601, 'Method not found')
      case 'eth_chainId':
        return numberToHex(chain.id)
      case 'eth_blockNumber':
        return numberToHex(block)
      case 'eth_getBlockByNumber': {
        const asked = firstParam(params)
        const number = typeof asked === 'string' && asked.startsWith('0x') ? BigInt(asked) : block
        if (number > block) return null
        return {
          number: numberToHex(number),
          hash: blockHash(number),
          parentHash: blockHash(number - 1n),
          baseFeePerGas: BASE_FEE,
          timestamp: numberToHex(blockTimes.get(number) ?? now()),
          gasLimit: '0x1c9c380',
          gasUsed: '0x0',
          transactions: [],
        }
      }
      case 'eth_maxPriorityFeePerGas':
        return '0x0'
      case 'eth_gasPrice':
        return BASE_FEE
      case 'eth_estimateGas':
        return '0x30d40'
      case 'eth_getTransactionCount':
        return '0x0'
      // mppx simulates the payment before broadcasting; an empty success is enough.
      case 'eth_call':
        return '0x'
      case 'eth_sendRawTransactionSync':
        return broadcast(firstParam(params))
      case 'eth_sendRawTransaction':
        return broadcast(firstParam(params)).transactionHash
      case 'eth_getTransactionReceipt':
        if (failReceipt) {
          failReceipt = false
          throw new RpcError(-32000, 'scripted tempo: node stopped answering')
        }
        return receipts.get(String(firstParam(params)).toLowerCase()) ?? null
    }
    throw new RpcError(-32601, `scripted tempo: unsupported method ${method} ${JSON.stringify(params)}`)
  }

  const transportFor = (side: string): CustomTransport =>
    custom(
      {
        async request({ method, params }: { method: string; params?: unknown }) {
          return answer(side, method, params)
        },
      },
      { retryCount: 0 },
    )

  function client(side = 'client'): Client<CustomTransport, Chain> {
    let existing = clients.get(side)
    if (!existing) {
      existing = createClient({ chain, transport: transportFor(side) })
      clients.set(side, existing)
    }
    return existing
  }

  async function serve(): Promise<TempoRpcServer> {
    const one = (message: unknown) => {
      const request = (typeof message === 'object' && message !== null ? message : {}) as {
        id?: unknown
        method?: unknown
        params?: unknown
      }
      const id = request.id ?? null
      try {
        if (typeof request.method !== 'string') throw new RpcError(-32600, 'Invalid Request')
        return { jsonrpc: '2.0', id, result: answer('http', request.method, request.params ?? []) }
      } catch (error) {
        const code = error instanceof RpcError ? error.code : -32603
        const message = error instanceof Error ? error.message : String(error)
        return { jsonrpc: '2.0', id, error: { code, message } }
      }
    }
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        if (request.method !== 'POST') return new Response('JSON-RPC over POST only', { status: 405 })
        let body: unknown
        try {
          body = await request.json()
        } catch {
          return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } })
        }
        if (!Array.isArray(body)) return Response.json(one(body))
        if (body.length === 0)
          return Response.json({
            jsonrpc: '2.0',
            id: null,
            error: { code: -32600, message: 'Invalid Request' },
          })
        return Response.json(body.map(one))
      },
    })
    return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) }
  }

  return {
    chain,
    transport: transportFor('client'),
    client,
    calls,
    failNextBroadcast() {
      failBroadcast = true
    },
    dropNextBroadcast() {
      dropBroadcast = true
    },
    failNextReceipt() {
      failReceipt = true
    },
    revertNextBroadcast() {
      revertBroadcast = true
    },
    tamperNextReceipt(change) {
      tamperReceipt = change
    },
    advanceTime(seconds) {
      timeOffsetSeconds += seconds
    },
    mined: () => [...receipts.keys()] as Hex[],
    receipt: (hash) => receipts.get(hash.toLowerCase()),
    serve,
    reset() {
      calls.length = 0
      receipts.clear()
      // viem clients cache what a node supports (eth_fillTransaction); fresh ones make call logs repeatable.
      clients.clear()
      block = FIRST_BLOCK
      blockTimes.clear()
      failBroadcast = options.failNextBroadcast ?? false
      dropBroadcast = false
      failReceipt = false
      timeOffsetSeconds = 0
      revertBroadcast = false
      tamperReceipt = null
    },
  }
}
