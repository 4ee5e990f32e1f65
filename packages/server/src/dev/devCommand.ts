import { type Sandbox, startSandbox } from './sandbox.ts'

/** How to run the example buyer from a checkout, with the sandbox's variables. */
function orderCommand(sandbox: Sandbox, rail: 'card' | 'escrow' | 'job' | 'x402' | 'mpp'): string {
  const chain =
    rail === 'mpp' ? `TEMPO_RPC_URL=${sandbox.tempoRpcUrl}` : `CHAIN_RPC_URL=${sandbox.chain.rpcUrl}`
  const env = `AGENTMARKET_URL=${sandbox.baseUrl} ${chain} BUYER_KEY=${sandbox.chain.buyer.privateKey}`
  return `${env} bun examples/paid-order/order.ts ${rail}`
}

/**
 * What `agentmarket dev` prints once the sandbox runs: where everything is, the wallets with their keys (anvil's
 * public test keys), and one command per rail that completes a paid order.
 * @example console.log(sandboxText(sandbox))
 */
export function sandboxText(sandbox: Sandbox): string {
  const { chain, seller } = sandbox
  return [
    'agentmarket dev: a local sandbox is running (Ctrl-C stops it and removes its data)',
    '',
    `  market      ${sandbox.baseUrl}`,
    `  chain       ${chain.rpcUrl} (anvil, chain id ${chain.chainId}), USDC at ${chain.usdc}`,
    `  escrow      ${chain.escrow}, job escrow ${chain.jobEscrow}`,
    `  tempo       ${sandbox.tempoRpcUrl} (a scripted Tempo node for MPP: every account can pay on it)`,
    `  data        ${sandbox.folder} (removed when the sandbox stops)`,
    `  buyer       ${chain.buyer.address}, key ${chain.buyer.privateKey} (1,000 USDC)`,
    `  seller      ${chain.seller.address}, key ${chain.seller.privateKey}`,
    `  agent       ${seller.name} sells "${seller.skill}" for ${seller.price} USDC; its bot delivers every paid order`,
    `              API key ${seller.apiKey}`,
    '',
    "These keys are anvil's public test keys: never send real funds to them.",
    '',
    'Complete a paid order (from a checkout of agentmarket), card and verify:',
    `  ${orderCommand(sandbox, 'card')}`,
    'or through the escrow (approve, deposit, verify):',
    `  ${orderCommand(sandbox, 'escrow')}`,
    'or through the job escrow (approve, fund; accepted on chain once delivered):',
    `  ${orderCommand(sandbox, 'job')}`,
    'or by x402:',
    `  ${orderCommand(sandbox, 'x402')}`,
    'or by MPP (on the scripted Tempo node):',
    `  ${orderCommand(sandbox, 'mpp')}`,
    '',
  ].join('\n')
}

/** `agentmarket dev`: starts the sandbox on `port`, prints how to use it, and stops it on SIGINT or SIGTERM. */
export async function runDev(port: number): Promise<void> {
  const sandbox = await startSandbox({ port }).catch((error: Error) => {
    console.error(`agentmarket dev: cannot start the sandbox: ${error.message}`)
    process.exit(1)
  })
  const stop = () => {
    sandbox.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    )
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  // Bun installs a signal's handler on the next turn: printing after it means a Ctrl-C as soon as the commands show
  // is already ours (stop and clean up), never the default exit that would leave anvil and the data behind.
  await new Promise((resolve) => setImmediate(resolve))
  process.stdout.write(sandboxText(sandbox))
}
