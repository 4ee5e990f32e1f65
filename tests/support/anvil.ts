import {
  type Address,
  type Chain,
  createPublicClient,
  createTestClient,
  createWalletClient,
  type Hex,
  type HttpTransport,
  http,
  type PublicClient,
  parseAbi,
  type TestClient,
  type TransactionReceipt,
  type WalletClient,
} from 'viem'
import type { HDAccount } from 'viem/accounts'
import { ANVIL_CHAIN_ID, spawnAnvil } from '../../packages/server/src/bench/anvil.ts'
import { anvilAccounts } from '../../packages/server/src/bench/anvilAccounts.ts'
import { installMockUsdc, USDC_ABI, USDC_ADDRESS } from '../../packages/server/src/bench/mockUsdc.ts'
import {
  type Deployer,
  deployEscrowContract,
  mintUsdc,
  viemChainOf,
} from '../../packages/server/src/dev/sandboxChain.ts'

// anvil itself, its accounts and the mock USDC are the server's (`agentmarket bench verify` starts anvil too).
export { ANVIL_MNEMONIC, anvilAccounts } from '../../packages/server/src/bench/anvilAccounts.ts'
export { USDC_ABI, USDC_ADDRESS } from '../../packages/server/src/bench/mockUsdc.ts'

/** The escrow's calls, typed for viem. */
export const ESCROW_ABI = parseAbi([
  'constructor(address usdc)',
  'function deposit(bytes32 taskId, address seller, uint256 amount, uint256 slaDeadline)',
  'function release(bytes32 taskId)',
  'function claim(address buyer, bytes32 taskId)',
  'error ZeroAmount()',
  'error ZeroSeller()',
  'error DuplicateDeposit()',
  'error UnknownDeposit()',
  'error AlreadySettled()',
  'error NotSeller()',
  'error SlaNotOver()',
  'error TransferFailed()',
])

/** A deposit as the escrow takes it. */
export type DepositArgs = { taskId: Hex; seller: Address; amount: bigint; slaDeadline: bigint }

/** A running anvil on chain id 8453 with clients and helpers; every helper that sends waits for its block. */
export type Anvil = {
  rpcUrl: string
  chain: Chain
  publicClient: PublicClient<HttpTransport, Chain>
  testClient: TestClient<'anvil', HttpTransport, Chain>
  /** anvil's ten funded accounts, derived from ANVIL_MNEMONIC. */
  accounts: HDAccount[]
  /** Milliseconds from spawn until eth_chainId answered. */
  startupMs: number
  walletFor(account: HDAccount): WalletClient<HttpTransport, Chain, HDAccount>
  /** Places MockUSDC's runtime code at USDC_ADDRESS; returns that address. */
  installUsdc(): Promise<Address>
  /** Deploys Escrow for USDC_ADDRESS from accounts[0]; returns its address. */
  deployEscrow(): Promise<Address>
  /** Deploys the job escrow (contracts/JobEscrow.sol) over the mock USDC: its address and the deployment's gas. */
  deployJobEscrow(): Promise<{ address: Address; gasUsed: bigint }>
  /** Sends a call as the API answers it (`to`, `data`) from `from`: the receipt, whatever its status. */
  sendCall(from: HDAccount, call: { to: Address; data: Hex }, gas?: bigint): Promise<TransactionReceipt>
  mintUsdc(to: Address, amount: bigint): Promise<Hex>
  /** The USDC balance of `address`, in base units. */
  usdcOf(address: Address): Promise<bigint>
  transferUsdc(from: HDAccount, to: Address, amount: bigint): Promise<Hex>
  approveUsdc(from: HDAccount, spender: Address, amount: bigint): Promise<Hex>
  deposit(from: HDAccount, escrow: Address, args: DepositArgs): Promise<Hex>
  /** A USDC transfer beyond the sender's balance, mined with status reverted. */
  sendRevertingTransfer(from: HDAccount, to: Address, amount: bigint): Promise<Hex>
  mine(blocks?: number): Promise<void>
  /** Kills anvil; safe to call twice. */
  stop(): void
}

/**
 * Starts a fresh anvil (chain id 8453, automine: each transaction gets its own block).
 * @example const anvil = await startAnvil(); await anvil.installUsdc(); afterAll(() => anvil.stop())
 */
export async function startAnvil(): Promise<Anvil> {
  const { rpcUrl, startupMs, stop } = await spawnAnvil()

  const chain = viemChainOf({ rpcUrl, chainId: ANVIL_CHAIN_ID })
  const transport = http(rpcUrl, { retryCount: 0 })
  const publicClient = createPublicClient({ chain, transport })
  const testClient = createTestClient({ mode: 'anvil', chain, transport })
  const accounts = anvilAccounts()
  const wallets = new Map<Address, WalletClient<HttpTransport, Chain, HDAccount>>()
  const walletFor = (account: HDAccount) => {
    let wallet = wallets.get(account.address)
    if (!wallet) {
      wallet = createWalletClient({ account, chain, transport })
      wallets.set(account.address, wallet)
    }
    return wallet
  }
  const deployer = accounts[0]
  if (!deployer) throw new Error('no anvil accounts')

  /** Waits for `hash`'s receipt and checks its status: automine answers the send before the block is stored. */
  const mined = async (hash: Hex, expected: 'success' | 'reverted' = 'success') => {
    const deadline = performance.now() + 5_000
    while (performance.now() < deadline) {
      const receipt = await publicClient.getTransactionReceipt({ hash }).catch((error: Error) => {
        if (error.name === 'TransactionReceiptNotFoundError') return null
        throw error
      })
      if (receipt) {
        if (receipt.status !== expected)
          throw new Error(`transaction ${hash} ${receipt.status}, expected ${expected}`)
        return receipt
      }
      await Bun.sleep(1)
    }
    throw new Error(`transaction ${hash} was not mined within 5 s`)
  }
  // Deploys and mints as `agentmarket dev` does (one place), waiting for blocks as the helpers below do.
  const sandboxDeployer: Deployer = { wallet: walletFor(deployer), mined: (hash) => mined(hash) }
  const callUsdc = async (
    from: HDAccount,
    functionName: 'transfer' | 'approve',
    args: readonly [Address, bigint],
  ) => {
    const hash = await walletFor(from).writeContract({
      address: USDC_ADDRESS,
      abi: USDC_ABI,
      functionName,
      args,
    })
    await mined(hash)
    return hash
  }

  return {
    rpcUrl,
    chain,
    publicClient,
    testClient,
    accounts,
    startupMs,
    walletFor,
    installUsdc: () => installMockUsdc(rpcUrl),
    deployEscrow: async () => (await deployEscrowContract(sandboxDeployer, 'Escrow')).address,
    async deployJobEscrow() {
      const { address, gasUsed } = await deployEscrowContract(sandboxDeployer, 'JobEscrow')
      return { address, gasUsed }
    },
    async sendCall(from, call, gas) {
      // Explicit gas skips estimation, so a call that reverts is still mined (and its receipt says so).
      const hash = await walletFor(from).sendTransaction({
        to: call.to,
        data: call.data,
        ...(gas && { gas }),
      })
      return publicClient.waitForTransactionReceipt({ hash })
    },
    mintUsdc: (to, amount) => mintUsdc(sandboxDeployer, to, amount),
    usdcOf: (address) =>
      publicClient.readContract({
        address: USDC_ADDRESS,
        abi: USDC_ABI,
        functionName: 'balanceOf',
        args: [address],
      }) as Promise<bigint>,
    transferUsdc: (from, to, amount) => callUsdc(from, 'transfer', [to, amount]),
    approveUsdc: (from, spender, amount) => callUsdc(from, 'approve', [spender, amount]),
    async deposit(from, escrow, { taskId, seller, amount, slaDeadline }) {
      const hash = await walletFor(from).writeContract({
        address: escrow,
        abi: ESCROW_ABI,
        functionName: 'deposit',
        args: [taskId, seller, amount, slaDeadline],
      })
      await mined(hash)
      return hash
    },
    async sendRevertingTransfer(from, to, amount) {
      // Explicit gas skips estimation, which would refuse a call that reverts.
      const hash = await walletFor(from).writeContract({
        address: USDC_ADDRESS,
        abi: USDC_ABI,
        functionName: 'transfer',
        args: [to, amount],
        gas: 100_000n,
      })
      await mined(hash, 'reverted')
      return hash
    },
    async mine(blocks = 1) {
      await testClient.mine({ blocks })
    },
    stop,
  }
}

/** A local payment chain as most tests set it up: anvil with USDC, named accounts, some funded, maybe the escrow. */
export type PaymentChain<Role extends string> = {
  anvil: Anvil
  /** The escrow's address when `escrow` was asked for; the zero address otherwise. */
  escrow: Address
  accounts: Record<Role, HDAccount>
}

/**
 * Starts anvil with USDC installed, names anvil's accounts 1, 2, … after `roles`, mints `usdc` base units (default
 * 1,000 USDC) to each role in `funded`, and deploys the escrow when asked. Account 0 stays the deployer's.
 * @example const { anvil, accounts: { buyer, seller } } = await paymentChain(['buyer', 'seller'], { funded: ['buyer'] })
 */
export async function paymentChain<const Role extends string>(
  roles: readonly Role[],
  options: { escrow?: boolean; funded?: readonly Role[]; usdc?: bigint } = {},
): Promise<PaymentChain<Role>> {
  const anvil = await startAnvil()
  await anvil.installUsdc()
  const escrow = options.escrow ? await anvil.deployEscrow() : '0x0000000000000000000000000000000000000000'
  const accounts = {} as Record<Role, HDAccount>
  roles.forEach((role, index) => {
    const account = anvil.accounts[index + 1]
    if (!account) throw new Error(`paymentChain: anvil has no account ${index + 1} for ${role}`)
    accounts[role] = account
  })
  for (const role of options.funded ?? [])
    await anvil.mintUsdc(accounts[role].address, options.usdc ?? 1_000_000_000n)
  return { anvil, escrow, accounts }
}
