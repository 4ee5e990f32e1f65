import {
  type Abi,
  type Address,
  createPublicClient,
  createWalletClient,
  defineChain,
  type Hex,
  http,
  toHex,
} from 'viem'
import type { HDAccount } from 'viem/accounts'
import { ANVIL_CHAIN_ID, spawnAnvil } from '../bench/anvil.ts'
import { anvilAccounts } from '../bench/anvilAccounts.ts'
import { installMockUsdc, USDC_ABI, USDC_ADDRESS } from '../bench/mockUsdc.ts'
import artifacts from '../contracts/artifacts.json' with { type: 'json' }

/** USDC the sandbox mints to its buyer: enough for many orders at demo prices. */
export const SANDBOX_BUYER_USDC = 1_000n * 1_000_000n

/** A local wallet of the sandbox: its address and private key (anvil's well-known test keys, never real funds). */
export type SandboxWallet = { address: Address; privateKey: Hex }

/** The sandbox's payment chain: anvil with USDC at Base's address, both escrows, and its named wallets. */
export type SandboxChain = {
  rpcUrl: string
  chainId: number
  usdc: Address
  escrow: Address
  jobEscrow: Address
  /** The block the job escrow was deployed in (its follower reads events from there). */
  jobEscrowBlock: bigint
  /** Holds SANDBOX_BUYER_USDC. */
  buyer: SandboxWallet
  /** The seller's payment wallet. */
  seller: SandboxWallet
  /** Pays the gas of x402 settlements (the server's X402_SETTLER_KEY). */
  settler: SandboxWallet
  stop(): void
}

/** `account`'s address and private key. */
function walletOf(account: HDAccount | undefined): SandboxWallet {
  const key = account?.getHdKey().privateKey
  if (!account || !key) throw new Error('anvil has fewer accounts than the sandbox names')
  return { address: account.address, privateKey: toHex(key) }
}

/**
 * Starts anvil (chain id 8453), puts the mock USDC at Base's USDC address, deploys the escrow and the job escrow, and
 * mints USDC to the buyer. Account 0 deploys and settles x402, 1 buys, 2 sells.
 * @example const chain = await startSandboxChain(); try { … } finally { chain.stop() }
 */
export async function startSandboxChain(): Promise<SandboxChain> {
  const anvil = await spawnAnvil()
  try {
    const chain = defineChain({
      id: ANVIL_CHAIN_ID,
      name: 'Base (anvil)',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [anvil.rpcUrl] } },
    })
    const transport = http(anvil.rpcUrl, { retryCount: 0 })
    const reader = createPublicClient({ chain, transport })
    const accounts = anvilAccounts()
    const owner = accounts[0]
    if (!owner) throw new Error('anvil has no accounts')
    const deployer = createWalletClient({ account: owner, chain, transport })
    const mined = async (hash: Hex) => {
      const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 })
      if (receipt.status !== 'success') throw new Error(`sandbox set-up transaction ${hash} reverted`)
      return receipt
    }
    const deploy = async (name: 'Escrow' | 'JobEscrow') => {
      const hash = await deployer.deployContract({
        abi: artifacts[name].abi as Abi,
        bytecode: artifacts[name].bytecode as Hex,
        args: [USDC_ADDRESS],
        account: owner,
        chain,
      })
      const receipt = await mined(hash)
      if (!receipt.contractAddress) throw new Error(`the ${name} deployment created no contract`)
      return { address: receipt.contractAddress, block: receipt.blockNumber }
    }
    await installMockUsdc(anvil.rpcUrl)
    const escrow = await deploy('Escrow')
    const jobEscrow = await deploy('JobEscrow')
    const buyer = walletOf(accounts[1])
    await mined(
      await deployer.writeContract({
        address: USDC_ADDRESS,
        abi: USDC_ABI,
        functionName: 'mint',
        args: [buyer.address, SANDBOX_BUYER_USDC],
        account: owner,
        chain,
      }),
    )
    return {
      rpcUrl: anvil.rpcUrl,
      chainId: ANVIL_CHAIN_ID,
      usdc: USDC_ADDRESS,
      escrow: escrow.address,
      jobEscrow: jobEscrow.address,
      jobEscrowBlock: jobEscrow.block,
      buyer,
      seller: walletOf(accounts[2]),
      settler: walletOf(accounts[0]),
      stop: anvil.stop,
    }
  } catch (error) {
    anvil.stop()
    throw error
  }
}
