import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type SliceReport, storeSlices } from './support/storeSlices.ts'

// Actions take the store slices they use (docs/architecture.md, "Ports"): each function of the core's `actions/` that
// is handed a store names its slices in its signature (`ActionContext<AgentStore & TaskStore>`), never the whole
// `Store`, and names no slice whose methods it does not call (itself or through the functions it hands the store
// to). The compiler already refuses a call to a slice not named; this test refuses a slice named and not used.

// One program over the core answers every test here: building it takes seconds, not a test's default 5.
const TIMEOUT = 120_000
let report: SliceReport | undefined
const read = () => {
  report ??= storeSlices()
  return report
}

describe('the store slices each action takes', () => {
  test(
    'behavior: the port is the intersection of its slices, each with methods, and the actions hand stores around',
    () => {
      const { slices, uses } = read()
      expect(slices.map(({ name }) => name)).toContain('AgentStore')
      for (const slice of slices) expect(slice.methods.length, slice.name).toBeGreaterThan(0)
      // Every action factory takes a store: dozens of functions, so the checks below cannot pass on nothing.
      expect(uses.length).toBeGreaterThan(50)
    },
    TIMEOUT,
  )

  test(
    'behavior: no action takes the whole Store',
    () => {
      expect(
        read()
          .uses.filter((use) => use.whole)
          .map((use) => use.where),
      ).toEqual([])
    },
    TIMEOUT,
  )

  test(
    'behavior: each action names exactly the slices whose methods it calls',
    () => {
      const wrong = read()
        .uses.filter((use) => use.named.join(' & ') !== use.used.join(' & '))
        .map((use) => `${use.where}: names ${use.named.join(' & ')}, uses ${use.used.join(' & ') || 'none'}`)
      expect(wrong).toEqual([])
    },
    TIMEOUT,
  )

  test(
    "behavior: docs/architecture.md's slices table gives each slice's methods as the port has them",
    () => {
      const doc = readFileSync(join(import.meta.dir, '../docs/architecture.md'), 'utf8')
      const rows = new Map(
        [...doc.matchAll(/^\s*\| `(\w+)`\s*\| (\d+)\s*\|/gm)].map(([, name, count]) => [name, Number(count)]),
      )
      const port = new Map(read().slices.map(({ name, methods }) => [name, methods.length]))
      expect(rows).toEqual(port)
    },
    TIMEOUT,
  )
})
