import { pbkdf2Sync } from 'node:crypto'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Subprocess } from 'bun'
import {
  type Address,
  type Chain,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  type Hex,
  type HttpTransport,
  http,
  type PublicClient,
  parseAbi,
  type TestClient,
  type WalletClient,
} from 'viem'
import { type HDAccount, HDKey, hdKeyToAccount } from 'viem/accounts'
import artifacts from '../../contracts/artifacts.json'
import { freePort } from './process.ts'

const root = resolve(import.meta.dir, '../..')

/** Base mainnet's USDC address, where installUsdc() puts the mock so production code runs unchanged. */
export const USDC_ADDRESS: Address = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'

/** The mnemonic of anvil's default funded accounts. */
export const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk'

/** The calls the harness makes, typed for viem. */
export const USDC_ABI = parseAbi([
  'function mint(address to, uint256 amount)',
  'function transfer(address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
  'function balanceOf(address owner) view returns (uint256)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
])

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
  mintUsdc(to: Address, amount: bigint): Promise<Hex>
  transferUsdc(from: HDAccount, to: Address, amount: bigint): Promise<Hex>
  approveUsdc(from: HDAccount, spender: Address, amount: bigint): Promise<Hex>
  deposit(from: HDAccount, escrow: Address, args: DepositArgs): Promise<Hex>
  /** A USDC transfer beyond the sender's balance, mined with status reverted. */
  sendRevertingTransfer(from: HDAccount, to: Address, amount: bigint): Promise<Hex>
  mine(blocks?: number): Promise<void>
  /** Kills anvil; safe to call twice. */
  stop(): void
}

let derivedAccounts: HDAccount[] | undefined

/**
 * anvil's default accounts, as mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex }) derives them, but with one
 * native PBKDF2 seed instead of ten in JavaScript: ~20 ms instead of ~250 ms. Cached per process.
 */
export function anvilAccounts(): HDAccount[] {
  if (!derivedAccounts) {
    const master = HDKey.fromMasterSeed(
      pbkdf2Sync(ANVIL_MNEMONIC.normalize('NFKD'), 'mnemonic', 2048, 64, 'sha512'),
    )
    derivedAccounts = Array.from({ length: 10 }, (_, addressIndex) =>
      hdKeyToAccount(master, { addressIndex }),
    )
  }
  return derivedAccounts
}

/** The anvil executable: the platform binary itself, so a kill reaches anvil and not only the npm wrapper. */
function anvilBinary(): string {
  const native = resolve(
    root,
    `node_modules/@foundry-rs/anvil-${process.platform}-${process.arch === 'x64' ? 'amd64' : process.arch}/bin/anvil`,
  )
  return existsSync(native) ? native : resolve(root, 'node_modules/.bin/anvil')
}

/** Resolves once `rpcUrl` answers eth_chainId; throws if anvil exits or `timeoutMs` passes first. */
async function waitForRpc(rpcUrl: string, child: Subprocess, timeoutMs: number): Promise<void> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] })
  const deadline = performance.now() + timeoutMs
  while (performance.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`anvil exited with ${child.exitCode} before answering`)
    const ok = await fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      .then((response) => response.ok)
      .catch(() => false)
    if (ok) return
    await Bun.sleep(5)
  }
  throw new Error(`anvil did not answer at ${rpcUrl} within ${timeoutMs} ms`)
}

/** Spawns anvil on a free port and waits for it; retries when another process took the port first. */
async function spawnAnvil(): Promise<{ rpcUrl: string; startupMs: number; kill: () => void }> {
  let lastError: unknown
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = freePort()
    const rpcUrl = `http://127.0.0.1:${port}`
    const started = performance.now()
    const child = Bun.spawn(
      [anvilBinary(), '--chain-id', '8453', '--port', String(port), '--host', '127.0.0.1', '--silent'],
      { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' },
    )
    // SIGKILL: anvil keeps nothing worth flushing, and a test run must never wait on it.
    const killNow = () => child.kill('SIGKILL')
    const kill = () => {
      process.off('exit', killNow)
      killNow()
    }
    process.once('exit', killNow)
    child.unref()
    try {
      anvilAccounts() // derive while anvil boots
      await waitForRpc(rpcUrl, child, 10_000)
      return { rpcUrl, startupMs: performance.now() - started, kill }
    } catch (error) {
      kill()
      lastError = error
    }
  }
  throw lastError
}

/**
 * Starts a fresh anvil (chain id 8453, automine: each transaction gets its own block).
 * @example const anvil = await startAnvil(); await anvil.installUsdc(); afterAll(() => anvil.stop())
 */
export async function startAnvil(): Promise<Anvil> {
  const { rpcUrl, startupMs, kill } = await spawnAnvil()

  const chain = defineChain({
    id: 8453,
    name: 'Base (anvil)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  })
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
  const callUsdc = async (
    from: HDAccount,
    functionName: 'mint' | 'transfer' | 'approve',
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
    async installUsdc() {
      await testClient.setCode({
        address: USDC_ADDRESS,
        bytecode: artifacts.MockUSDC.deployedBytecode as Hex,
      })
      return USDC_ADDRESS
    },
    async deployEscrow() {
      const hash = await walletFor(deployer).deployContract({
        abi: ESCROW_ABI,
        bytecode: artifacts.Escrow.bytecode as Hex,
        args: [USDC_ADDRESS],
      })
      const receipt = await mined(hash)
      if (!receipt.contractAddress) throw new Error('Escrow deployment created no contract')
      return receipt.contractAddress
    },
    mintUsdc: (to, amount) => callUsdc(deployer, 'mint', [to, amount]),
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
    stop: kill,
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
