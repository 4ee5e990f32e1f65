import type { Subprocess } from 'bun'
import { freePort } from '../../packages/server/src/bench/freePort.ts'

// The server's, since `agentmarket bench verify` starts anvil on one too.
export { freePort } from '../../packages/server/src/bench/freePort.ts'

/** Polls `url` until it answers 200; returns the milliseconds it took. */
export async function waitForOk(url: string, child: Subprocess, timeoutMs = 60_000): Promise<number> {
  const started = performance.now()
  while (performance.now() - started < timeoutMs) {
    if (child.exitCode !== null)
      throw new Error(`process exited with ${child.exitCode} before ${url} answered`)
    const ok = await fetch(url)
      .then((response) => response.status === 200)
      .catch(() => false)
    if (ok) return performance.now() - started
    await Bun.sleep(10)
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`)
}

/** Runs a command to completion and returns its exit code and output. */
export async function runToEnd(cmd: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  const child = Bun.spawn(cmd, { cwd: options.cwd, env: options.env, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { exitCode, stdout, stderr }
}

const repoRoot = new URL('../..', import.meta.url).pathname

/** A running `bun start` and its address. */
export type MarketServer = { base: string; process: Subprocess; stop(): void }

/**
 * Starts the server as `bun start` does, on a free port with only PATH and `env` in its environment (as a self-hoster
 * would), and waits until its health check answers. It runs the entry point itself rather than through `bun start`,
 * so `process` is the server: killing it kills the server, with no orphan left holding its ports. Rate limits are off
 * (every test client is 127.0.0.1) unless `env` sets RATE_LIMITS. With `stdout: 'pipe'` its log is kept for the test;
 * `cwd` runs another checkout's server (bench/ab.ts);
 * `port` starts it again where a killed one listened; `preload` is a module Bun loads before the server (`--preload`).
 */
export async function startMarketServer(
  env: Record<string, string>,
  {
    stdout = 'ignore',
    cwd = repoRoot,
    port = freePort(),
    preload,
  }: { stdout?: 'ignore' | 'pipe'; cwd?: string; port?: number; preload?: string } = {},
): Promise<MarketServer> {
  const preloading = preload ? ['--preload', preload] : []
  const child = Bun.spawn(['bun', ...preloading, 'packages/server/src/main.ts'], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      PORT: String(port),
      HOST: '127.0.0.1',
      RATE_LIMITS: 'off',
      ...env,
    },
    stdout,
    stderr: 'inherit',
  })
  const base = `http://127.0.0.1:${port}`
  try {
    await waitForOk(`${base}/api/community/health`, child)
  } catch (error) {
    // The caller never gets the process to stop: a server still starting would outlive the run.
    child.kill()
    throw error
  }
  return { base, process: child, stop: () => child.kill() }
}

/** Reads a stream until `done` says the text so far is enough, or fails after `timeoutMs`. */
export async function readUntil(
  stream: ReadableStream<Uint8Array>,
  done: (text: string) => boolean,
  timeoutMs = 5_000,
) {
  const reader = stream.getReader()
  const timer = setTimeout(() => reader.cancel(), timeoutMs)
  let text = ''
  while (!done(text)) {
    const { done: ended, value } = await reader.read()
    if (ended) break
    text += new TextDecoder().decode(value)
  }
  clearTimeout(timer)
  reader.releaseLock()
  return text
}
