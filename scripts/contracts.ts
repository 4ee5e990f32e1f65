import { readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import solc from 'solc'
import type { Abi, Hex } from 'viem'

const root = resolve(import.meta.dir, '..')

/** The Solidity sources, by their path from the repository root; each file holds the contract of its name. */
export const CONTRACT_SOURCES = {
  Escrow: 'contracts/Escrow.sol',
  JobEscrow: 'contracts/JobEscrow.sol',
  MockUSDC: 'contracts/test/MockUSDC.sol',
} as const

/** Where the compiled contracts are committed. */
export const ARTIFACTS_PATH = resolve(root, 'packages/server/src/contracts/artifacts.json')

/** One compiled contract: its ABI, creation code and runtime code. */
export type ContractArtifact = { abi: Abi; bytecode: Hex; deployedBytecode: Hex }

/** Every compiled contract by name. */
export type ContractArtifacts = Record<keyof typeof CONTRACT_SOURCES, ContractArtifact>

type SolcOutput = {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string }[]
  contracts?: Record<
    string,
    Record<string, { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>
  >
}

/** Compiles the contracts with the pinned solc (cancun, optimizer 200 runs); throws on any compiler error. */
export function compileContracts(): ContractArtifacts {
  const sources = Object.fromEntries(
    Object.values(CONTRACT_SOURCES).map((path) => [
      path,
      { content: readFileSync(resolve(root, path), 'utf8') },
    ]),
  )
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      evmVersion: 'cancun',
      optimizer: { enabled: true, runs: 200 },
      // No metadata hash: a comment-only edit leaves the bytecode (and the committed artifacts) unchanged.
      metadata: { bytecodeHash: 'none' },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput
  const problems = (output.errors ?? []).filter((problem) => problem.severity !== 'info')
  if (problems.length > 0) throw new Error(problems.map((problem) => problem.formattedMessage).join('\n'))
  const artifact = (name: keyof typeof CONTRACT_SOURCES): ContractArtifact => {
    const compiled = output.contracts?.[CONTRACT_SOURCES[name]]?.[name]
    if (!compiled) throw new Error(`solc produced no ${name}`)
    return {
      abi: compiled.abi,
      bytecode: `0x${compiled.evm.bytecode.object}`,
      deployedBytecode: `0x${compiled.evm.deployedBytecode.object}`,
    }
  }
  return { Escrow: artifact('Escrow'), JobEscrow: artifact('JobEscrow'), MockUSDC: artifact('MockUSDC') }
}

/** The committed file's exact text for `artifacts`: two-space JSON with a trailing newline. */
export function formatArtifacts(artifacts: ContractArtifacts): string {
  return `${JSON.stringify(artifacts, null, 2)}\n`
}

if (import.meta.main) {
  const started = performance.now()
  writeFileSync(ARTIFACTS_PATH, formatArtifacts(compileContracts()))
  console.log(
    `wrote ${ARTIFACTS_PATH} in ${Math.round(performance.now() - started)} ms (solc ${solc.version()})`,
  )
}
