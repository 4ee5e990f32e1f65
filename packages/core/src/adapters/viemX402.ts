import {
  type Account,
  type Chain,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  keccak256,
  publicActions,
  webSocket,
} from 'viem'
import type { X402Facilitator } from '../payments/X402.ts'

/** Options of the viem x402 facilitator. */
export type ViemX402Options = {
  /** The payment chain's JSON-RPC endpoint (it may carry an API key: it never appears in messages). */
  rpcUrl: string
  /** The chain (its id signs the settlement transactions). */
  chain: Chain
  /** The local account that submits settlements and pays their gas; it never holds buyers' money. */
  account: Account
  /** Milliseconds a settlement waits for its receipt before it counts as pending. @default 30_000 */
  receiptTimeoutMs?: number
}

// @x402/evm (about 60 ms to load) loads on the first x402 payment, not when the server starts.
let library: Promise<[typeof import('@x402/evm'), typeof import('@x402/evm/exact/facilitator')]> | null = null
const loadEvm = () => {
  library ??= Promise.all([import('@x402/evm'), import('@x402/evm/exact/facilitator')])
  return library
}

/** One at a time: the pending nonce is read, the transaction signed, recorded and sent before the next is signed. */
function serialized() {
  let tail: Promise<unknown> = Promise.resolve()
  return <T>(work: () => Promise<T>): Promise<T> => {
    const run = tail.then(work, work)
    tail = run.catch(() => undefined)
    return run
  }
}

/**
 * An X402Facilitator over viem: @x402/evm's `exact` scheme verifies (signature, payee, amount, window, a simulation
 * of `transferWithAuthorization`) and settles, with its one write made here: the transaction is signed locally, its
 * hash handed to `beforeBroadcast`, then sent. Run one settling account per process: the nonce is this process's.
 * @example const facilitator = viemX402Facilitator({ rpcUrl, chain: base, account: privateKeyToAccount(key) })
 */
export function viemX402Facilitator(options: ViemX402Options): X402Facilitator {
  const client = createWalletClient({
    account: options.account,
    chain: options.chain,
    transport: /^wss?:/i.test(options.rpcUrl)
      ? webSocket(options.rpcUrl, { retryCount: 0 })
      : http(options.rpcUrl, { retryCount: 0 }),
  }).extend(publicActions)
  const inTurn = serialized()
  const network = `eip155:${options.chain.id}` as const

  /** @x402/evm's `exact` scheme over our client; `write` is how the one transaction of a settlement is sent. */
  const schemeWith = async (write: (call: { address: Hex; data: Hex; gas?: bigint }) => Promise<Hex>) => {
    const [{ toFacilitatorEvmSigner }, { ExactEvmScheme }] = await loadEvm()
    const signer = toFacilitatorEvmSigner(
      {
        address: options.account.address,
        getCode: (args) => client.getCode(args),
        readContract: (args) => client.readContract({ ...args, args: args.args ?? [] } as never),
        verifyTypedData: (args) => client.verifyTypedData(args as never),
        writeContract: (args) =>
          write({
            address: args.address,
            data: encodeFunctionData({
              abi: args.abi,
              functionName: args.functionName,
              args: args.args,
            } as never),
            gas: args.gas,
          }),
        sendTransaction: () =>
          Promise.reject(new Error('deploying payer wallets (ERC-6492) is not supported')),
        waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
      },
      { confirmationTimeoutMs: options.receiptTimeoutMs ?? 30_000 },
    )
    return new ExactEvmScheme(signer)
  }
  let verifier: ReturnType<typeof schemeWith> | null = null

  return {
    async verify(payload, requirements) {
      verifier ??= schemeWith(() => Promise.reject(new Error('verification sends nothing')))
      return (await verifier).verify(payload as never, requirements)
    },
    async settle(payload, requirements, beforeBroadcast) {
      if (requirements.network !== network) throw new Error(`this facilitator settles on ${network} only`)
      const write = ({ address, data, gas }: { address: Hex; data: Hex; gas?: bigint }) =>
        inTurn(async () => {
          const request = await client.prepareTransactionRequest({
            to: address,
            data,
            ...(gas ? { gas } : {}),
            nonce: await client.getTransactionCount({
              address: options.account.address,
              blockTag: 'pending',
            }),
          })
          const signed = await client.signTransaction(request as never)
          const hash = keccak256(signed)
          await beforeBroadcast(hash)
          await client.sendRawTransaction({ serializedTransaction: signed })
          return hash
        })
      return (await schemeWith(write)).settle(payload as never, requirements)
    },
  }
}
