// @ts-check
// Run by tests/node/node.test.ts under Node.js (never Bun): the built packages, as an app on Node would import them.
// Registers a seller, heartbeats, orders its paid skill and verifies the on-chain payment named by the environment.
import { defaultConfig, Marketplace } from '@agentmarket/core'
import { viemChain } from '@agentmarket/core/viem'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { privateKeyToAccount } from 'viem/accounts'

const {
  RPC_URL = '',
  TX_HASH = '',
  SELLER_WALLET = '',
  DATABASE_URL = ':memory:',
  PAYER_KEY = '',
} = process.env

/** The payer's EIP-712 signature of the task's payer_proof for TX_HASH, as a buyer's wallet makes it. */
async function signProof(/** @type {any} */ proof) {
  const payer = privateKeyToAccount(/** @type {`0x${string}`} */ (PAYER_KEY))
  return payer.signTypedData({ ...proof, message: { ...proof.message, txHash: TX_HASH } })
}
const store = libsqlStore(await openDatabase(DATABASE_URL))
const market = Marketplace.create({
  store,
  config: defaultConfig('http://localhost:3000'),
  chain: viemChain({ rpcUrl: RPC_URL }),
})

const skill = { name: 'Deep Research', type: 'purchasable', price: 2.5, sla: '24 hours' }
const { apiKey } = await market.registerAgent({ name: 'node-seller', skills: [skill] })
await market.updateAgent('node-seller', apiKey, { walletAddress: SELLER_WALLET })
const heartbeat = await market.heartbeat('node-seller', apiKey)
const order = await market.createTask('node-seller', { skill: 'deep-research', buyer: 'node-buyer' })
const taskId = /** @type {{ task_id: string }} */ (order.body).task_id
const verified = await market.verifyPayment('node-seller', taskId, {
  tx_hash: TX_HASH,
  payer_signature: await signProof(/** @type {any} */ (order.body).payment.payer_proof),
})
const task = await market.getTask('node-seller', taskId)
let refusal = null
try {
  await market.verifyPayment('node-seller', taskId, { tx_hash: 'not a hash' })
} catch (error) {
  refusal = { name: error instanceof Error ? error.name : '', status: /** @type {any} */ (error).status }
}
await store.close()

console.log(
  JSON.stringify({
    node: process.versions.node,
    bun: 'Bun' in globalThis,
    heartbeat: heartbeat.status,
    order: { status: order.status, taskStatus: /** @type {{ status: string }} */ (order.body).status },
    verified: verified.status,
    task: { status: task.status, txHash: task.payment.tx_hash },
    refusal,
  }),
)
