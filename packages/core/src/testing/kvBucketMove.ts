import { strictEqual as equal } from 'node:assert/strict'
import type { KvStore } from '../ports/KvStore.ts'

const HOUR_MS = 3_600_000

/**
 * The kv rows a database held before kv entries carried an expiry (entries listed in hour buckets: `idem-due:*` and
 * `kv-forget:*`), what each SQL store's data move must make of them, and the sweep that must then forget them. Both
 * stores' migration tests insert `rows`, run their move, and compare the kv table with `expiries`.
 */
export function kvBucketMove(now = Date.UTC(2026, 5, 1, 12)) {
  const h = now / HOUR_MS
  const rows: [string, unknown][] = [
    [
      'idem:aa',
      {
        state: 'done',
        fingerprint: 'f',
        sealed: null,
        replayUntil: now + 24 * HOUR_MS,
        forgetAt: now + 24 * HOUR_MS,
      },
    ],
    ['idem:bb', { state: 'running', fingerprint: 'f', since: now, forgetAt: now + HOUR_MS }],
    [
      'idem-quota:cc',
      {
        slots: [
          [h - 2, 1, 10],
          [h, 2, 20],
        ],
      },
    ],
    [`idem-due:${h + 24}:a`, ['aa']],
    [`idem-due:${h + 1}:b`, ['bb']],
    [`idem-due:${h + 25}:c`, ['q:cc']],
    ['x402:marker', { task: 't' }],
    [`kv-forget:${h + 3}`, ['x402:marker']],
    ['kv-forget:swept-until', h],
    ['mpp:secret', 's'],
  ]
  /** The kv table after the move, by key: each listed row's expiry (a bucket's end), null for a row never listed. */
  const expiries: [string, number | null][] = [
    ['idem-quota:cc', (h + 25) * HOUR_MS],
    ['idem:aa', now + 24 * HOUR_MS],
    ['idem:bb', now + HOUR_MS],
    ['mpp:secret', null],
    ['x402:marker', (h + 4) * HOUR_MS],
  ]
  /** A sweep past the last bucket forgets every listed row and keeps the one never listed. */
  async function sweptBy(store: KvStore) {
    equal(await store.kvSweepExpired(new Date((h + 25) * HOUR_MS), 100), 4)
    equal(await store.kvGet('x402:marker'), null)
    equal(await store.kvGet('mpp:secret'), 's')
  }
  return { rows, expiries, sweptBy }
}
