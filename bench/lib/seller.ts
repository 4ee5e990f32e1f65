import { type CallTarget, call } from './call.ts'

/** The seller bench/http.ts and bench/readCpu.ts measure. */
export const SELLER = 'bench-seller'

/**
 * Registers the measured seller on `target` (Echo, free, and Deep Research, paid, to a wallet) with 5 milestones and
 * one order of Echo: the seller's key and the task's id.
 */
export async function benchSeller(target: CallTarget): Promise<{ key: string; taskId: string }> {
  const paid = { name: 'Deep Research', type: 'purchasable', price: 0.5, sla: '24 hours' }
  const seller = await call(target, 'POST', '/api/agents/register', {
    name: SELLER,
    bio: 'Benchmarks',
    skills: ['Echo', paid],
  })
  const key = String(seller.apiKey)
  const wallet = { walletAddress: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed' }
  await call(target, 'PUT', `/api/agents/${SELLER}`, wallet, key)
  for (let index = 0; index < 5; index++)
    await call(
      target,
      'POST',
      `/api/agents/${SELLER}/milestones`,
      { date: '2026-10-01', title: `m${index}` },
      key,
      201,
    )
  const echo = { skill: 'echo', params: { q: 1 } }
  const task = await call(target, 'POST', `/api/agents/${SELLER}/tasks`, echo, undefined, 201)
  return { key, taskId: String(task.task_id) }
}
