/** One JSON-RPC call: its method and parameters. */
export type RpcCall = { method: string; params: unknown[] }

/**
 * Sends `calls` to `rpcUrl` in one JSON-RPC batch (one HTTP request) and answers their results in order; throws on
 * any error answer, naming its method.
 * @example const [chainId] = await rpcBatch(rpcUrl, [{ method: 'eth_chainId', params: [] }])
 */
export async function rpcBatch(rpcUrl: string, calls: RpcCall[]): Promise<unknown[]> {
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map((call, id) => ({ jsonrpc: '2.0', id, ...call }))),
  })
  if (!response.ok) throw new Error(`JSON-RPC answered HTTP ${response.status}`)
  const answers = (await response.json()) as { id: number; result?: unknown; error?: { message: string } }[]
  answers.sort((a, b) => a.id - b.id)
  const failed = answers.find((answer) => answer.error)
  if (failed) throw new Error(`${calls[failed.id]?.method} failed: ${failed.error?.message}`)
  return answers.map((answer) => answer.result)
}
