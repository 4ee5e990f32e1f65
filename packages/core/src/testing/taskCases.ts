import { strictEqual as equal, deepStrictEqual as same } from 'node:assert/strict'
import type { Address } from 'viem'
import type { PendingCheck, TaskPayment, TaskRecord } from '../Task.ts'
import {
  allTasks,
  at,
  BUYER_A,
  BUYER_B,
  claimOf,
  complete,
  deliver,
  hex32,
  idempotencyOf,
  inCapitals,
  paidTask,
  type StoreTest,
  sampleAgent,
  samplePayment,
  sampleTask,
  sampleUser,
  taskEvent,
  trustOf,
  USDC,
  WIDE,
  type WithStore,
} from './fixtures.ts'

/** The conformance cases of the TaskStore: tasks, payments and their claims, idempotency, re-checks, expiry, trust credit. */
export function taskStoreCases(test: StoreTest, withStore: WithStore): void {
  test(
    'behavior: an inserted task reads back equal, by any case of its agent name, exact amounts included',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent({ name: 'Seller_1' }), [])
      await store.insertAgent(sampleAgent({ name: 'other' }), [])
      const pending = sampleTask({
        agentName: 'Seller_1',
        params: { query: 'cats', depth: 2, tags: ['a', 'b'], nested: { on: true, none: null } },
        buyer: 'buyer-bot',
        buyerEmail: 'buyer@example.com',
        buyerWallet: '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
        pendingCheck: { txHash: hex32(1), signature: null, attempts: 3, nextAt: at(7) },
        idempotency: idempotencyOf('key-1', { task_id: 'x', list: [1, 'two'] }),
        createdAt: at(1),
      })
      const paid = paidTask(2, {
        agentName: 'Seller_1',
        priceBaseUnits: 999_999_999_999n,
        payment: samplePayment(2, {
          method: 'escrow',
          escrowTaskId: hex32(2, 0xe),
          amountBaseUnits: 2n ** 70n,
          at: at(5),
        }),
        createdAt: at(2),
      })
      const completed = paidTask(3, {
        agentName: 'Seller_1',
        status: 'completed',
        resultUrl: 'https://example.com/result/3',
        completedAt: at(9),
        // Kept as ordered: the skill's reveal copied onto the task (docs/jobs.md).
        reveal: 'after_acceptance',
        reviewSeconds: 600,
      })
      for (const task of [pending, paid, completed]) {
        same(await store.insertTask(task, [taskEvent('task.created', task)]), { outcome: 'inserted' })
      }
      same(await store.getTask('Seller_1', pending.id), pending)
      same(await store.getTask('seller_1', pending.id), pending)
      same(await store.getTask('SELLER_1', paid.id), paid)
      equal((await store.getTask('seller_1', paid.id))?.payment?.amountBaseUnits, 2n ** 70n)
      same(await store.getTask('Seller_1', completed.id), completed)
      equal(await store.getTask('other', pending.id), null)
      equal(await store.getTask('nobody', pending.id), null)
      equal(await store.getTask('Seller_1', 'task_unknown'), null)
      same(
        (await store.listEvents({ limit: 50 })).map((event) => event.kind),
        ['task.created', 'task.created', 'task.created'],
      )
    }),
  )

  test(
    'error: inserting a task paid by a tx hash or escrow task id another task holds inserts nothing',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const first = paidTask(1, { payment: samplePayment(1, { escrowTaskId: hex32(1, 0xe) }) })
      same(await store.insertTask(first, [taskEvent('task.created', first)]), { outcome: 'inserted' })
      equal(await store.findTaskIdByTxHash(hex32(1)), first.id)
      equal(await store.findTaskIdByTxHash(hex32(99)), null)

      const sameHash = paidTask(1)
      same(await store.insertTask(sameHash, [taskEvent('task.created', sameHash)]), {
        outcome: 'tx_already_used',
      })
      equal(await store.getTask('sample-agent', sameHash.id), null)

      const sameEscrow = paidTask(2, { payment: samplePayment(2, { escrowTaskId: hex32(1, 0xe) }) })
      same(await store.insertTask(sameEscrow, [taskEvent('task.created', sameEscrow)]), {
        outcome: 'escrow_task_id_used',
      })
      equal(await store.getTask('sample-agent', sameEscrow.id), null)
      equal(await store.findTaskIdByTxHash(hex32(2)), null)
      equal(await store.findTaskIdByTxHash(hex32(1)), first.id)
      equal((await store.listEvents({ limit: 50 })).length, 1)
      equal((await store.listTasks('sample-agent', allTasks)).total, 1)
    }),
  )

  test(
    "behavior: an escrow deposit is claimed per (buyer, on-chain taskId), as the contract keys it: another buyer's deposit under the same taskId pays its own task",
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const buyerA = '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359'
      const buyerB = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
      const escrowOf = (n: number, from: Address) =>
        samplePayment(n, { method: 'escrow', escrowTaskId: hex32(7, 0xe), from })
      const squatter = paidTask(1, { payment: escrowOf(1, buyerA) })
      same(await store.insertTask(squatter, []), { outcome: 'inserted' })
      const victim = paidTask(2, { payment: escrowOf(2, buyerB) })
      same(await store.insertTask(victim, []), { outcome: 'inserted' })
      const pending = sampleTask()
      await store.insertTask(pending, [])
      equal(await store.markTaskPaid(pending.id, escrowOf(3, buyerB), []), 'escrow_task_id_used')
      equal((await store.getTask('sample-agent', pending.id))?.status, 'pending_payment')
    }),
  )

  test(
    "behavior: an Idempotency-Key is scoped by client: another client's same key neither replays nor blocks",
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const mine = sampleTask({ clientKey: 'client-a', idempotency: idempotencyOf('shared', { mine: 1 }) })
      const theirs = sampleTask({
        clientKey: 'client-b',
        idempotency: idempotencyOf('shared', { theirs: 1 }),
      })
      same(await store.insertTask(mine, []), { outcome: 'inserted' })
      same(await store.insertTask(theirs, []), { outcome: 'inserted' })
      same(await store.findIdempotentAnswer('sample-agent', 'client-a', 'shared'), mine.idempotency)
      same(await store.findIdempotentAnswer('sample-agent', 'client-b', 'shared'), theirs.idempotency)
      equal(await store.findIdempotentAnswer('sample-agent', 'client-c', 'shared'), null)
      const retry = sampleTask({
        clientKey: 'client-a',
        idempotency: idempotencyOf('shared', { again: 1 }),
      })
      same(await store.insertTask(retry, []), { outcome: 'replay', answer: mine.idempotency })
    }),
  )

  test(
    'behavior: unpaid tasks expire at expiresAt (never paid after it, unless by the hash kept under re-check), once their check is dropped, and are purged after retention',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const check = { txHash: hex32(40), signature: null, attempts: 0, nextAt: at(1) }
      const early = sampleTask({ expiresAt: at(10), pendingCheck: check, clientKey: 'c' })
      const late = sampleTask({ expiresAt: at(20) })
      const paid = paidTask(41, { expiresAt: at(5) })
      for (const task of [early, late, paid]) await store.insertTask(task, [])
      equal(await store.countPendingChecks('c'), 1)
      equal(await store.countPendingChecks('other'), 0)
      equal(await store.markTaskPaid(early.id, samplePayment(42, { at: at(10) }), []), 'not_pending')
      // A payment sent in time and still under re-check holds its task past expiresAt; dropping the check frees it.
      same(await store.expireTasks(at(10), at(0), 100), { expired: 0, purged: 0 })
      equal((await store.getTask('sample-agent', early.id))?.status, 'pending_payment')
      await store.setPendingCheck(early.id, null)
      same(await store.expireTasks(at(10), at(0), 100), { expired: 1, purged: 0 })
      const expired = await store.getTask('sample-agent', early.id)
      equal(expired?.status, 'expired')
      equal(expired?.pendingCheck, null)
      equal(await store.countPendingChecks('c'), 0)
      equal(await store.findTaskIdByTxHash(hex32(42)), null)
      same(await store.expireTasks(at(30), at(15), 100), { expired: 1, purged: 1 })
      equal(await store.getTask('sample-agent', early.id), null)
      equal((await store.getTask('sample-agent', late.id))?.status, 'expired')
      equal((await store.getTask('sample-agent', paid.id))?.status, 'paid')
      equal(await store.markTaskPaid(late.id, samplePayment(43, { at: at(19) }), []), 'not_pending')
    }),
  )

  test(
    'behavior: a task whose payment is under re-check at its expiresAt waits for it: the kept hash pays it after expiresAt, another hash does not',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const check = { txHash: hex32(50), signature: null, attempts: 2, nextAt: at(11) }
      const waiting = sampleTask({ expiresAt: at(10), pendingCheck: check, clientKey: 'c' })
      await store.insertTask(waiting, [])
      same(await store.expireTasks(at(12), at(0), 100), { expired: 0, purged: 0 })
      equal(await store.markTaskPaid(waiting.id, samplePayment(51, { at: at(12) }), []), 'not_pending')
      equal(await store.markTaskPaid(waiting.id, samplePayment(50, { at: at(12) }), []), 'paid')
      const stored = await store.getTask('sample-agent', waiting.id)
      equal(stored?.status, 'paid')
      equal(stored?.pendingCheck, null)
      same(await store.expireTasks(at(13), at(12), 100), { expired: 0, purged: 0 })
    }),
  )

  test(
    'behavior: payments without a tx hash or escrow task id (free tasks) claim nothing',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const free = () =>
        sampleTask({
          status: 'paid',
          priceBaseUnits: 0n,
          payTo: null,
          payment: samplePayment(0, { method: 'free', txHash: null, amountBaseUnits: 0n, from: null }),
        })
      const [one, two] = [free(), free()]
      same(await store.insertTask(one, []), { outcome: 'inserted' })
      same(await store.insertTask(two, []), { outcome: 'inserted' })
      same(await store.getTask('sample-agent', two.id), two)
      const pending = sampleTask()
      await store.insertTask(pending, [])
      equal(await store.markTaskPaid(pending.id, samplePayment(5, { txHash: null }), []), 'paid')
      equal((await store.listTasks('sample-agent', allTasks)).total, 3)
    }),
  )

  test(
    'behavior: markTaskPaid pays a pending task once, storing the payment, clearing the check, adding events',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const task = sampleTask({
        pendingCheck: { txHash: hex32(1), signature: null, attempts: 1, nextAt: at(1) },
      })
      await store.insertTask(task, [taskEvent('task.created', task)])
      const payment = samplePayment(1, { escrowTaskId: hex32(1, 0xe), amountBaseUnits: 2n ** 70n })
      equal(await store.markTaskPaid(task.id, payment, [taskEvent('task.paid', task)]), 'paid')
      same(await store.getTask('sample-agent', task.id), {
        ...task,
        status: 'paid',
        payment,
        pendingCheck: null,
      })
      equal(await store.findTaskIdByTxHash(hex32(1)), task.id)
      same(
        (await store.listEvents({ limit: 50 })).map((event) => event.kind),
        ['task.paid', 'task.created'],
      )
      equal(
        await store.markTaskPaid(task.id, samplePayment(2), [taskEvent('task.paid', task)]),
        'not_pending',
      )
      same((await store.getTask('sample-agent', task.id))?.payment, payment)
      equal(await store.findTaskIdByTxHash(hex32(2)), null)
      equal(
        await store.markTaskPaid('task_unknown', samplePayment(3), [taskEvent('task.paid', task)]),
        'not_pending',
      )
      equal((await store.listEvents({ limit: 50 })).length, 2)
    }),
  )

  test(
    'error: markTaskPaid with a tx hash or escrow task id another task holds leaves the task pending',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const holder = paidTask(1, { payment: samplePayment(1, { escrowTaskId: hex32(1, 0xe) }) })
      const task = sampleTask({
        pendingCheck: { txHash: hex32(1), signature: null, attempts: 0, nextAt: at(1) },
      })
      await store.insertTask(holder, [])
      await store.insertTask(task, [])
      equal(
        await store.markTaskPaid(task.id, samplePayment(1), [taskEvent('task.paid', task)]),
        'tx_already_used',
      )
      same(await store.getTask('sample-agent', task.id), task)
      equal(
        await store.markTaskPaid(
          task.id,
          samplePayment(2, { method: 'escrow', escrowTaskId: hex32(1, 0xe) }),
          [taskEvent('task.paid', task)],
        ),
        'escrow_task_id_used',
      )
      same(await store.getTask('sample-agent', task.id), task)
      equal(await store.findTaskIdByTxHash(hex32(1)), holder.id)
      equal(await store.findTaskIdByTxHash(hex32(2)), null)
      same(await store.listEvents({ limit: 50 }), [])
      equal(await store.markTaskPaid(task.id, samplePayment(3), [taskEvent('task.paid', task)]), 'paid')
    }),
  )

  test(
    'behavior: racing markTaskPaid calls pay a task once and spend a hash once',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const task = sampleTask()
      await store.insertTask(task, [])
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          store.markTaskPaid(task.id, samplePayment(100 + i), [taskEvent('task.paid', task)]),
        ),
      )
      equal(results.filter((result) => result === 'paid').length, 1)
      equal(results.filter((result) => result === 'not_pending').length, 9)
      const winner = results.indexOf('paid')
      equal((await store.getTask('sample-agent', task.id))?.payment?.txHash, hex32(100 + winner))
      equal((await store.listEvents({ limit: 50 })).filter((event) => event.kind === 'task.paid').length, 1)

      const tasks = Array.from({ length: 10 }, () => sampleTask())
      for (const each of tasks) await store.insertTask(each, [])
      const spent = await Promise.all(
        tasks.map((each) => store.markTaskPaid(each.id, samplePayment(7), [taskEvent('task.paid', each)])),
      )
      equal(spent.filter((result) => result === 'paid').length, 1)
      equal(spent.filter((result) => result === 'tx_already_used').length, 9)
      const payer = tasks[spent.indexOf('paid')]
      equal(await store.findTaskIdByTxHash(hex32(7)), payer?.id)
      equal((await store.listTasks('sample-agent', { ...allTasks, statuses: ['paid'] })).total, 2)
      equal((await store.listEvents({ limit: 50 })).filter((event) => event.kind === 'task.paid').length, 2)
    }),
  )

  test(
    'behavior: an Idempotency-Key is unique per agent; a repeat (even with the same tx hash) replays the first answer',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent({ name: 'Idem' }), [])
      await store.insertAgent(sampleAgent({ name: 'other' }), [])
      const first = sampleTask({
        agentName: 'Idem',
        idempotency: idempotencyOf('k-1', { task_id: 'first', payment: { amount: 0.01 } }),
      })
      const retry = sampleTask({
        agentName: 'Idem',
        idempotency: idempotencyOf('k-1', { task_id: 'retry' }),
      })
      same(await store.insertTask(first, [taskEvent('task.created', first)]), { outcome: 'inserted' })
      same(await store.insertTask(retry, [taskEvent('task.created', retry)]), {
        outcome: 'replay',
        answer: first.idempotency,
      })
      equal(await store.getTask('Idem', retry.id), null)
      equal((await store.listEvents({ limit: 50 })).length, 1)
      same(await store.findIdempotentAnswer('IDEM', '', 'k-1'), first.idempotency)
      same(await store.findIdempotentAnswer('idem', '', 'k-1'), first.idempotency)
      equal(await store.findIdempotentAnswer('idem', '', 'K-1'), null)
      equal(await store.findIdempotentAnswer('other', '', 'k-1'), null)

      const elsewhere = sampleTask({
        agentName: 'other',
        idempotency: idempotencyOf('k-1', { other: true }),
      })
      same(await store.insertTask(elsewhere, []), { outcome: 'inserted' })
      same(await store.findIdempotentAnswer('other', '', 'k-1'), elsewhere.idempotency)
      same(await store.findIdempotentAnswer('Idem', '', 'k-1'), first.idempotency)

      const racers = Array.from({ length: 5 }, (_, i) =>
        sampleTask({ agentName: 'Idem', idempotency: idempotencyOf('k-race', { racer: i }) }),
      )
      const results = await Promise.all(
        racers.map((task) => store.insertTask(task, [taskEvent('task.created', task)])),
      )
      equal(results.filter((result) => result.outcome === 'inserted').length, 1)
      const winner = racers[results.findIndex((result) => result.outcome === 'inserted')]
      same(
        results.filter((result) => result.outcome === 'replay'),
        Array.from({ length: 4 }, () => ({ outcome: 'replay', answer: winner?.idempotency })),
      )
      equal((await store.listTasks('idem', allTasks)).total, 2)
      equal((await store.listEvents({ limit: 50 })).length, 2)

      const paidFirst = paidTask(9, { agentName: 'Idem', idempotency: idempotencyOf('k-paid') })
      const paidRetry = paidTask(9, {
        agentName: 'Idem',
        idempotency: idempotencyOf('k-paid', { retry: 1 }),
      })
      same(await store.insertTask(paidFirst, []), { outcome: 'inserted' })
      same(await store.insertTask(paidRetry, []), { outcome: 'replay', answer: paidFirst.idempotency })
    }),
  )

  test(
    'behavior: completeTask completes a paid task once, counting it on its agent',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent({ lastActiveAt: at(0) }), [])
      const task = sampleTask()
      await store.insertTask(task, [])
      const done = [taskEvent('task.completed', task)]
      equal(await complete(store, task.id, 'https://example.com/r', at(40), done), 'not_paid')
      same(await store.getTask('sample-agent', task.id), task)
      equal(await complete(store, 'task_unknown', 'https://example.com/r', at(40), done), 'not_paid')
      same(await store.listEvents({ limit: 50 }), [])

      const payment = samplePayment(1)
      await store.markTaskPaid(task.id, payment, [])
      equal(await complete(store, task.id, 'https://example.com/r', at(40), done), 'completed')
      same(await store.getTask('SAMPLE-AGENT', task.id), {
        ...task,
        status: 'completed',
        payment,
        resultUrl: 'https://example.com/r',
        completedAt: at(40),
        deliveredAt: at(40),
        outcome: 'delivered',
      })
      const agent = await store.getAgent('sample-agent')
      equal(agent?.completedTasks, 1)
      equal(agent?.onTimeTasks, 1)
      same(agent?.lastActiveAt, at(40))

      equal(await complete(store, task.id, 'https://example.com/again', at(50), done), 'not_paid')
      equal((await store.getTask('sample-agent', task.id))?.resultUrl, 'https://example.com/r')
      equal((await store.getAgent('sample-agent'))?.completedTasks, 1)
      same((await store.getAgent('sample-agent'))?.lastActiveAt, at(40))
      same(
        (await store.listEvents({ limit: 50 })).map((event) => event.kind),
        ['task.completed'],
      )
    }),
  )

  test(
    "behavior: completing a task paid on chain credits its buyer wallet once; the seller's own and its owner's wallets, free tasks and MPP charges credit nothing",
    withStore(async (store) => {
      const sellerWallet: Address = '0x00000000000000000000000000000000000000c3'
      await store.insertAgent(sampleAgent({ walletAddress: sellerWallet, pairingCodeHash: 'code' }), [])
      const owner = sampleUser({ walletAddress: '0x00000000000000000000000000000000000000d4' })
      await store.claimAgent(claimOf('code', owner, 'sample-agent'))
      let n = 0
      const paidBy = (from: Address | null, amount: bigint, method: TaskPayment['method'] = 'transfer') =>
        samplePayment(++n, { from, amountBaseUnits: amount, method })

      const first = await deliver(store, paidBy(BUYER_A, 3n * USDC))
      same(await trustOf(store), { credit: 3n * USDC, buyers: 1 })
      equal(await complete(store, first.id, 'https://example.com/again', at(41), []), 'not_paid')
      await deliver(store, paidBy(BUYER_B, 4n * USDC, 'escrow'))
      same(await trustOf(store), { credit: 7n * USDC, buyers: 2 })

      // The wallet the task paid, the seller's current wallet, the owner's (any case): the seller paying itself.
      await deliver(store, paidBy(inCapitals('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'), 5n * USDC))
      await deliver(store, paidBy(sellerWallet, 5n * USDC))
      await deliver(store, paidBy(inCapitals(owner.walletAddress), 5n * USDC))
      await deliver(store, paidBy('0x00000000000000000000000000000000000000e5', 5n * USDC, 'mpp'))
      await deliver(store, paidBy(null, 5n * USDC))
      const free = paidTask(++n, {
        payment: samplePayment(n, { method: 'free', txHash: null, from: null }),
      })
      await store.insertTask(free, [])
      equal(await complete(store, free.id, 'https://example.com/r', at(40), []), 'completed')
      same(await trustOf(store), { credit: 7n * USDC, buyers: 2 })
      equal((await store.getAgent('sample-agent'))?.completedTasks, 8)

      const unpaid = sampleTask()
      await store.insertTask(unpaid, [])
      equal(await complete(store, unpaid.id, 'https://example.com/r', at(40), []), 'not_paid')
      await deliver(store, paidBy(BUYER_A, 1n * USDC))
      same(await trustOf(store), { credit: 8n * USDC, buyers: 2 })
    }),
  )

  test(
    'behavior: racing completions credit each delivered task once, and each buyer up to its cap',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      const buyers: Address[] = [BUYER_A, BUYER_B, '0x00000000000000000000000000000000000000f6']
      const tasks = Array.from({ length: 6 }, () => sampleTask())
      for (const [i, task] of tasks.entries()) {
        await store.insertTask(task, [])
        const payment = samplePayment(i + 1, { from: buyers[i % 3] ?? null, amountBaseUnits: 4n * USDC })
        await store.markTaskPaid(task.id, payment, [])
      }
      const outcomes = await Promise.all(
        [...tasks, ...tasks].map((task, i) =>
          complete(store, task.id, `https://example.com/${i}`, at(40), []),
        ),
      )
      equal(outcomes.filter((outcome) => outcome === 'completed').length, 6)
      same(await trustOf(store), { credit: 24n * USDC, buyers: 3 })
      equal((await store.getAgent('sample-agent'))?.completedTasks, 6)
    }),
  )

  test(
    'behavior: an agent task list filters by status with a total, in history, delivery or work-queue order, paged',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent({ name: 'Lister' }), [])
      await store.insertAgent(sampleAgent({ name: 'other' }), [])
      const task = (id: string, overrides: Partial<TaskRecord>) =>
        sampleTask({ id, agentName: 'Lister', ...overrides })
      const paid = (n: number, paidAt: number) =>
        ({ status: 'paid', payment: samplePayment(n, { at: at(paidAt) }) }) as const
      const list = [
        task('task_p1', { createdAt: at(1) }),
        task('task_p2', { createdAt: at(5) }),
        task('task_paidA', { createdAt: at(2), ...paid(1, 10) }),
        task('task_paidB', { createdAt: at(3), ...paid(2, 20) }),
        task('task_c1', { createdAt: at(4), ...paid(3, 11), status: 'completed', completedAt: at(30) }),
        task('task_c2', { createdAt: at(0), ...paid(4, 12), status: 'completed', completedAt: at(31) }),
        sampleTask({ id: 'task_other', agentName: 'other', createdAt: at(6) }),
      ]
      for (const each of list) await store.insertTask(each, [])
      const ids = async (query: Partial<typeof allTasks>) => {
        const page = await store.listTasks('lister', { ...allTasks, ...query })
        return { ids: page.tasks.map((each) => each.id), total: page.total }
      }
      same(await ids({ order: 'history' }), {
        ids: ['task_p2', 'task_c1', 'task_paidB', 'task_paidA', 'task_p1', 'task_c2'],
        total: 6,
      })
      same(await ids({ order: 'work_queue' }), {
        ids: ['task_paidA', 'task_paidB', 'task_p2', 'task_p1', 'task_c1', 'task_c2'],
        total: 6,
      })
      same(await ids({ statuses: ['paid'] }), { ids: ['task_paidA', 'task_paidB'], total: 2 })
      same(await ids({ statuses: ['completed'], order: 'delivered' }), {
        ids: ['task_c2', 'task_c1'],
        total: 2,
      })
      same(await ids({ order: 'delivered', limit: 3 }), { ids: ['task_c2', 'task_c1', 'task_p2'], total: 6 })
      same(await ids({ statuses: ['pending_payment', 'completed'], order: 'history' }), {
        ids: ['task_p2', 'task_c1', 'task_p1', 'task_c2'],
        total: 4,
      })
      same(await ids({ limit: 2, offset: 1 }), { ids: ['task_paidB', 'task_p2'], total: 6 })
      same(await ids({ order: 'history', limit: 3, offset: 4 }), { ids: ['task_p1', 'task_c2'], total: 6 })
      same(await ids({ offset: 10 }), { ids: [], total: 6 })
      same((await store.listTasks('LISTER', allTasks)).tasks[0], list[2])
      same(await store.listTasks('other', { ...allTasks, statuses: ['paid'] }), { tasks: [], total: 0 })
      same(await store.listTasks('nobody', allTasks), { tasks: [], total: 0 })
      same(await ids({ statuses: [] }), { ids: [], total: 0 })
    }),
  )

  test(
    'behavior: due rechecks are unpaid tasks whose check is due, soonest first; paying a task drops it',
    withStore(async (store) => {
      await store.insertAgent(sampleAgent(), [])
      await store.insertAgent(sampleAgent({ name: 'other' }), [])
      const check = (minute: number, n = minute): PendingCheck => ({
        txHash: hex32(n, 0xc),
        signature: null,
        attempts: minute,
        nextAt: at(minute),
      })
      const soon = sampleTask({ id: 'task_soon', pendingCheck: check(1) })
      const due = sampleTask({ id: 'task_due', agentName: 'other', pendingCheck: check(3) })
      const now = sampleTask({ id: 'task_now', pendingCheck: check(5) })
      const later = sampleTask({ id: 'task_later', pendingCheck: check(10) })
      const unchecked = sampleTask({ id: 'task_unchecked' })
      const stalePaid = paidTask(1, { id: 'task_stale', pendingCheck: check(0) })
      for (const task of [later, due, stalePaid, now, unchecked, soon]) await store.insertTask(task, [])
      const dueIds = async (minute: number, limit = 10) =>
        (await store.listDueRechecks(at(minute), limit)).map((task) => task.id)

      same(await store.listDueRechecks(at(5), 10), [soon, due, now])
      same(await dueIds(5, 2), ['task_soon', 'task_due'])
      same(await dueIds(0), [])

      await store.setPendingCheck('task_unchecked', check(2, 42))
      same((await store.getTask('sample-agent', 'task_unchecked'))?.pendingCheck, check(2, 42))
      same(await dueIds(5), ['task_soon', 'task_unchecked', 'task_due', 'task_now'])
      await store.setPendingCheck('task_soon', null)
      equal((await store.getTask('sample-agent', 'task_soon'))?.pendingCheck, null)
      same(await dueIds(5), ['task_unchecked', 'task_due', 'task_now'])
      await store.setPendingCheck('task_soon', check(4))
      same(await dueIds(5), ['task_unchecked', 'task_due', 'task_soon', 'task_now'])

      const paid = paidTask(2)
      await store.insertTask(paid, [])
      await store.setPendingCheck(paid.id, check(1, 43))
      same(await store.getTask('sample-agent', paid.id), paid)
      await store.setPendingCheck('task_unknown', check(1, 44))
      same(await dueIds(5), ['task_unchecked', 'task_due', 'task_soon', 'task_now'])

      equal(await store.markTaskPaid('task_due', samplePayment(3), []), 'paid')
      equal((await store.getTask('other', 'task_due'))?.pendingCheck, null)
      same(await dueIds(60), ['task_unchecked', 'task_soon', 'task_now', 'task_later'])
    }),
  )

  test(
    'behavior: racing re-check claims split the due tasks, lease each until the lease ends, and never share one',
    withStore(async (store) => {
      if (!store.claimDueRechecks) return
      await store.insertAgent(sampleAgent(), [])
      const check = (minute: number, n: number): PendingCheck => ({
        txHash: hex32(n, 0xd),
        signature: null,
        attempts: 1,
        nextAt: at(minute),
      })
      const ids = Array.from({ length: 12 }, (_, index) => `task_claim_${index}`)
      for (const [index, id] of ids.entries())
        await store.insertTask(sampleTask({ id, pendingCheck: check(index % 3, index) }), [])
      const lease = at(30)
      const claims = await Promise.all(
        Array.from(
          { length: 4 },
          () => store.claimDueRechecks?.(at(5), lease, { ...WIDE, limit: 5 }) ?? Promise.resolve([]),
        ),
      )
      const claimed = claims.flat()
      same(claimed.map((task) => task.id).sort(), [...ids].sort())
      for (const task of claimed) same(task.pendingCheck?.nextAt, lease)
      same(await store.claimDueRechecks(at(29), at(90), WIDE), [])
      // A claim never settled (its process died) is due again once its lease has ended.
      equal((await store.claimDueRechecks(at(30), at(90), WIDE)).length, 12)
    }),
  )
}
