import { existsSync, realpathSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import type { Subprocess } from 'bun'
import { anvilAccounts } from './anvilAccounts.ts'
import { freePort } from './freePort.ts'

/** The chain id a local anvil runs with: Base's, so the defaults of the chain settings apply unchanged. */
export const ANVIL_CHAIN_ID = 8453

/** An anvil executable, and whether it is npm's Node.js wrapper (which forwards SIGTERM, not SIGKILL). */
export type AnvilExecutable = { path: string; wrapper: boolean }

/** Where to look for anvil: a checkout's node_modules (null for the binary, which has none) and a PATH. */
export type AnvilSearch = { checkout: string | null; path: string }

/** A running anvil: its JSON-RPC address, the milliseconds until it answered, and how to stop it. */
export type AnvilProcess = { rpcUrl: string; startupMs: number; stop(): void }

/** No anvil executable was found. */
export class AnvilNotFoundError extends Error {
  override readonly name = 'AnvilNotFoundError'
}

/** The folder of the platform's package of @foundry-rs/anvil, e.g. `anvil-linux-amd64`. */
const PLATFORM_PACKAGE = `anvil-${process.platform}-${process.arch === 'x64' ? 'amd64' : process.arch}`

/** The default search: this checkout when run from source, then the PATH. */
function defaultSearch(): AnvilSearch {
  return {
    checkout: Bun.isStandaloneExecutable ? null : resolve(import.meta.dir, '../../../..'),
    path: process.env.PATH ?? '',
  }
}

/** The platform binary beside npm's wrapper script `wrapper` (the package's bin.mjs), nested or hoisted. */
function nativeBeside(wrapper: string): string | null {
  const packageFolder = dirname(wrapper)
  const candidates = [
    join(packageFolder, 'node_modules/@foundry-rs', PLATFORM_PACKAGE, 'bin/anvil'),
    join(packageFolder, '..', PLATFORM_PACKAGE, 'bin/anvil'),
  ]
  return candidates.find((candidate) => existsSync(candidate)) ?? null
}

/**
 * The anvil to run: the checkout's @foundry-rs/anvil, else `anvil` on the PATH (foundryup's, or npm's, whose
 * wrapper is skipped for the platform binary it would start, so a kill reaches anvil itself). Null when none.
 * @example findAnvil({ checkout: null, path: '/usr/local/bin' }) // { path: '/usr/local/bin/anvil', wrapper: false }
 */
export function findAnvil(search: AnvilSearch = defaultSearch()): AnvilExecutable | null {
  const bins = search.checkout ? [join(search.checkout, 'node_modules/.bin'), search.path] : [search.path]
  const found = Bun.which('anvil', { PATH: bins.filter(Boolean).join(':') })
  if (!found) return null
  const real = realpathSync(found)
  if (!real.endsWith('.mjs')) return { path: real, wrapper: false }
  const native = nativeBeside(real)
  return native ? { path: native, wrapper: false } : { path: found, wrapper: true }
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

/**
 * Starts a fresh anvil (chain id 8453, automine: each transaction gets its own block) on a free port of 127.0.0.1
 * and waits until it answers; retries when another process took the port first. It is killed when this process
 * exits, if not stopped before. Throws AnvilNotFoundError when there is no anvil to run.
 * @example const anvil = await spawnAnvil(); try { … anvil.rpcUrl … } finally { anvil.stop() }
 */
export async function spawnAnvil(executable = findAnvil()): Promise<AnvilProcess> {
  if (!executable) throw new AnvilNotFoundError('anvil was not found (npm i -g @foundry-rs/anvil)')
  let lastError: unknown
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = freePort()
    const rpcUrl = `http://127.0.0.1:${port}`
    const started = performance.now()
    const child = Bun.spawn(
      [
        executable.path,
        ...['--chain-id', String(ANVIL_CHAIN_ID), '--port', String(port), '--host', '127.0.0.1', '--silent'],
      ],
      { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' },
    )
    // SIGKILL: anvil keeps nothing worth flushing, and a run must never wait on it. npm's wrapper passes on
    // SIGTERM only.
    const killNow = () => child.kill(executable.wrapper ? 'SIGTERM' : 'SIGKILL')
    const stop = () => {
      process.off('exit', killNow)
      killNow()
    }
    process.once('exit', killNow)
    child.unref()
    try {
      anvilAccounts() // derived while anvil boots: every user of anvil signs with them
      await waitForRpc(rpcUrl, child, 10_000)
      return { rpcUrl, startupMs: performance.now() - started, stop }
    } catch (error) {
      stop()
      lastError = error
    }
  }
  throw lastError
}
