import { BASE_USDC } from '@agentmarket/core'
import { type Address, parseAbi } from 'viem'
import artifacts from '../contracts/artifacts.json' with { type: 'json' }
import { rpcBatch } from './rpcBatch.ts'

/** Base mainnet's USDC address, where installMockUsdc() puts the mock so production code runs unchanged. */
export const USDC_ADDRESS: Address = BASE_USDC

/** The calls made to the mock, typed for viem. */
export const USDC_ABI = parseAbi([
  'function mint(address to, uint256 amount)',
  'function transfer(address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
  'function balanceOf(address owner) view returns (uint256)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
])

/**
 * Places MockUSDC's runtime code (contracts/test/MockUSDC.sol, whose mint is open to anyone) at USDC_ADDRESS on the
 * anvil at `rpcUrl` with anvil_setCode; returns that address. Any other node refuses the call.
 */
export async function installMockUsdc(rpcUrl: string): Promise<Address> {
  await rpcBatch(rpcUrl, [
    { method: 'anvil_setCode', params: [USDC_ADDRESS, artifacts.MockUSDC.deployedBytecode] },
  ])
  return USDC_ADDRESS
}
