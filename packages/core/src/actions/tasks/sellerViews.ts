import type { TaskStore } from '../../ports/Store.ts'
import { buyerWalletOf, type TaskRecord } from '../../Task.ts'
import { type SellerTaskView, toSellerTaskView } from '../../TaskView.ts'
import type { ActionContext } from '../context.ts'

/**
 * The tasks as their seller reads them, each with its buyer wallet's signed acceptances and rejections across the
 * market (one store read for the page), so a seller sees which buyers take a result and reject it.
 */
export async function sellerViews(
  { store, config }: Pick<ActionContext<TaskStore>, 'store' | 'config'>,
  tasks: readonly TaskRecord[],
): Promise<SellerTaskView[]> {
  const wallets = [...new Set(tasks.flatMap((task) => buyerWalletOf(task) ?? []))]
  const decisions = wallets.length > 0 ? await store.buyerDecisions(wallets) : []
  return tasks.map((task) => toSellerTaskView(task, config, decisions))
}

/** One task as its seller reads it (sellerViews). */
export async function sellerView(
  context: Pick<ActionContext<TaskStore>, 'store' | 'config'>,
  task: TaskRecord,
): Promise<SellerTaskView> {
  const [view] = await sellerViews(context, [task])
  if (!view) throw new Error('sellerViews answered no view for one task')
  return view
}
