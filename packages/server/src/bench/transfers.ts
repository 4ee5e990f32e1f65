import { type Address, encodeFunctionData, type Hex, hexToNumber, keccak256, numberToHex } from 'viem'
import type { HDAccount } from 'viem/accounts'
import { USDC_ABI, USDC_ADDRESS } from './mockUsdc.ts'
import { rpcBatch } from './rpcBatch.ts'

/** One generated payment: a mined USDC transfer from a buyer to the seller. */
export type GeneratedTransfer = { hash: Hex; buyer: Address; seller: Address; amount: bigint }

/** What generateTransfers made: the transfers in order, how many each block holds, its anvil_mine calls, the chain. */
export type GeneratedTransfers = {
  transfers: GeneratedTransfer[]
  blockSizes: number[]
  mineCalls: number
  chainId: number
}

/** How many transfers, from how many buyers, mined how many to a block, then how many blocks on top. */
export type GenerateOptions = { count: number; buyers?: number; perBlock?: number; confirmations: number }

/** The most JSON-RPC calls sent in one HTTP request while generating. */
const CHUNK = 1_000

/** Signs a call of the mock USDC with explicit nonce, gas and fees: no estimate or nonce round trip. */
function signUsdcCall(account: HDAccount, chainId: number, nonce: number, data: Hex): Promise<Hex> {
  return account.signTransaction({
    chainId,
    type: 'eip1559',
    to: USDC_ADDRESS,
    data,
    nonce,
    gas: 100_000n,
    maxFeePerGas: 100_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
  })
}

/** Sends signed transactions in one request and mines until the pool is empty; answers the anvil_mine calls made. */
async function sendAndMine(rpcUrl: string, raws: Hex[]): Promise<number> {
  const sent = (await rpcBatch(
    rpcUrl,
    raws.map((raw) => ({ method: 'eth_sendRawTransaction', params: [raw] })),
  )) as Hex[]
  sent.forEach((hash, index) => {
    if (hash !== keccak256(raws[index] ?? '0x')) throw new Error(`transaction ${index} answered ${hash}`)
  })
  for (let mined = 0; ; mined++) {
    const [pool] = (await rpcBatch(rpcUrl, [{ method: 'txpool_status', params: [] }])) as {
      pending: Hex
      queued: Hex
    }[]
    if (Number(pool?.pending) === 0 && Number(pool?.queued) === 0) return mined
    if (mined >= 20) throw new Error(`the pool still holds ${pool?.pending} + ${pool?.queued} transactions`)
    await rpcBatch(rpcUrl, [{ method: 'anvil_mine', params: ['0x1'] }])
  }
}

/** The block of each transaction, read in chunks; throws unless every one was mined successfully. */
async function minedBlocks(rpcUrl: string, hashes: Hex[]): Promise<Hex[]> {
  const blocks: Hex[] = []
  for (let start = 0; start < hashes.length; start += CHUNK) {
    const chunk = hashes.slice(start, start + CHUNK)
    const receipts = (await rpcBatch(
      rpcUrl,
      chunk.map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] })),
    )) as ({ status: Hex; blockNumber: Hex } | null)[]
    receipts.forEach((receipt, index) => {
      if (receipt?.status !== '0x1') throw new Error(`transaction ${chunk[index]} was not mined successfully`)
      blocks.push(receipt.blockNumber)
    })
  }
  return blocks
}

/**
 * Makes `count` real USDC transfers on an anvil whose USDC_ADDRESS holds MockUSDC (installMockUsdc): mints to
 * `buyers` of anvil's accounts (1, 2, …), signs every transfer locally, each of a different amount, to account 9,
 * sends them `perBlock` to a block with automine off, checks each one succeeded, then mines `confirmations` blocks.
 * @example const { transfers } = await generateTransfers(anvil.rpcUrl, anvilAccounts(), { count: 2_000, confirmations: 3 })
 */
export async function generateTransfers(
  rpcUrl: string,
  accounts: HDAccount[],
  { count, buyers: buyerCount = 4, perBlock = 100, confirmations }: GenerateOptions,
): Promise<GeneratedTransfers> {
  const [minter, ...rest] = accounts
  const buyers = rest.slice(0, buyerCount)
  const seller = accounts[9]?.address
  if (!minter || buyers.length !== buyerCount || !seller) throw new Error('anvil has too few accounts')
  const [chainIdHex, ...nonceHexes] = (await rpcBatch(rpcUrl, [
    { method: 'eth_chainId', params: [] },
    ...[minter, ...buyers].map(({ address }) => ({
      method: 'eth_getTransactionCount',
      params: [address, 'latest'],
    })),
  ])) as Hex[]
  const chainId = hexToNumber(chainIdHex ?? '0x0')
  const [minterNonce = 0, ...buyerNonces] = nonceHexes.map((nonce) => hexToNumber(nonce))

  const mints = await Promise.all(
    buyers.map(({ address }, index) =>
      signUsdcCall(
        minter,
        chainId,
        minterNonce + index,
        encodeFunctionData({ abi: USDC_ABI, functionName: 'mint', args: [address, 10n ** 12n] }),
      ),
    ),
  )
  const transfers: (GeneratedTransfer & { raw: Hex })[] = []
  for (let index = 0; index < count; index++) {
    const buyer = buyers[index % buyerCount]
    if (!buyer) throw new Error('missing buyer')
    const amount = 10_000n + BigInt(index) * 137n // every amount differs
    const data = encodeFunctionData({ abi: USDC_ABI, functionName: 'transfer', args: [seller, amount] })
    const nonce = (buyerNonces[index % buyerCount] ?? 0) + Math.floor(index / buyerCount)
    const raw = await signUsdcCall(buyer, chainId, nonce, data)
    transfers.push({ hash: keccak256(raw), buyer: buyer.address, seller, amount, raw })
  }

  // Automine off: anvil packs ~870 transfers into a 30M-gas block if let, and its receipt reads cost more the
  // bigger the block; the mints go first, in a block of their own, so no transfer precedes its buyer's funds.
  await rpcBatch(rpcUrl, [{ method: 'evm_setAutomine', params: [false] }])
  let mineCalls = 0
  try {
    mineCalls += await sendAndMine(rpcUrl, mints)
    for (let start = 0; start < count; start += perBlock)
      mineCalls += await sendAndMine(
        rpcUrl,
        transfers.slice(start, start + perBlock).map(({ raw }) => raw),
      )
  } finally {
    await rpcBatch(rpcUrl, [{ method: 'evm_setAutomine', params: [true] }])
  }
  const blocks = await minedBlocks(
    rpcUrl,
    transfers.map(({ hash }) => hash),
  )
  const sizes = new Map<Hex, number>()
  for (const block of blocks) sizes.set(block, (sizes.get(block) ?? 0) + 1)
  await rpcBatch(rpcUrl, [{ method: 'anvil_mine', params: [numberToHex(confirmations)] }])
  return {
    transfers: transfers.map(({ raw: _, ...transfer }) => transfer),
    blockSizes: [...sizes.values()],
    mineCalls: mineCalls + 1,
    chainId,
  }
}
