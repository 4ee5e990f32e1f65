import {
  type Abi,
  type Account,
  type Address,
  type Chain,
  createPublicClient,
  createWalletClient,
  defineChain,
  type Hex,
  http,
  type TransactionReceipt,
  type Transport,
  toHex,
  type WalletClient,
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

/** What deploying and minting need: the deployer's wallet client, and a wait for a transaction's successful receipt. */
export type Deployer = {
  wallet: WalletClient<Transport, Chain, Account>
  mined(hash: Hex): Promise<TransactionReceipt>
}

/** A deployed contract: its address, the block it was deployed in, and the deployment's gas. */
export type Deployed = { address: Address; block: bigint; gasUsed: bigint }

/** The viem chain of a local anvil (the sandbox's, or a test's) at `rpcUrl`: for its wallet and public clients. */
export function viemChainOf({ rpcUrl, chainId }: { rpcUrl: string; chainId: number }): Chain {
  return defineChain({
    id: chainId,
    name: 'Base (anvil)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  })
}

/** Deploys the escrow or the job escrow (contracts/) over the mock USDC at USDC_ADDRESS, from `deployer`. */
export async function deployEscrowContract(
  deployer: Deployer,
  name: 'Escrow' | 'JobEscrow',
): Promise<Deployed> {
  const hash = await deployer.wallet.deployContract({
    abi: artifacts[name].abi as Abi,
    bytecode: artifacts[name].bytecode as Hex,
    args: [USDC_ADDRESS],
  })
  const receipt = await deployer.mined(hash)
  if (!receipt.contractAddress) throw new Error(`the ${name} deployment created no contract`)
  return { address: receipt.contractAddress, block: receipt.blockNumber, gasUsed: receipt.gasUsed }
}

/** Mints `amount` base units of the mock USDC to `to` from `deployer`: the transaction's hash, once mined. */
export async function mintUsdc(deployer: Deployer, to: Address, amount: bigint): Promise<Hex> {
  const hash = await deployer.wallet.writeContract({
    address: USDC_ADDRESS,
    abi: USDC_ABI,
    functionName: 'mint',
    args: [to, amount],
  })
  await deployer.mined(hash)
  return hash
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
    const chain = viemChainOf({ rpcUrl: anvil.rpcUrl, chainId: ANVIL_CHAIN_ID })
    const transport = http(anvil.rpcUrl, { retryCount: 0 })
    const reader = createPublicClient({ chain, transport })
    const accounts = anvilAccounts()
    const owner = accounts[0]
    if (!owner) throw new Error('anvil has no accounts')
    const deployer: Deployer = {
      wallet: createWalletClient({ account: owner, chain, transport }),
      async mined(hash) {
        const receipt = await reader.waitForTransactionReceipt({ hash, pollingInterval: 50 })
        if (receipt.status !== 'success') throw new Error(`sandbox set-up transaction ${hash} reverted`)
        return receipt
      },
    }
    await installMockUsdc(anvil.rpcUrl)
    const escrow = await deployEscrowContract(deployer, 'Escrow')
    const jobEscrow = await deployEscrowContract(deployer, 'JobEscrow')
    const buyer = walletOf(accounts[1])
    await mintUsdc(deployer, buyer.address, SANDBOX_BUYER_USDC)
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
