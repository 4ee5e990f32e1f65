import { expect, test } from 'bun:test'
import { type KeptSection, mergeKept, resultsReport } from './results.ts'

const machine = '2 cores of a test CPU, 24 GiB, Bun 1.4.5, Linux'
/** A kept section measured at `measuredAt` for `seconds`, with one goal. */
const section = (name: string, measuredAt: string, seconds: number, value = '1'): KeptSection => ({
  name,
  title: name,
  markdown: `## ${name}\n\n${name} measured ${value}`,
  goals: [{ name: `${name} goal`, value, target: '>= 1', met: value === '1' }],
  measuredAt,
  machine,
  load: '1.0-1.1',
  seconds,
})
const options = { command: 'bun run bench', quick: false, appendix: ['## Changes'] }

test('behavior: sections measured again replace theirs and keep the others, in the runner order', () => {
  const kept = [section('http', '2026-11-29 05:55', 300), section('mpp', '2026-11-29 06:00', 100)]
  const merged = mergeKept(kept, [section('http', '2026-11-29 09:00', 320, '2')], ['verify', 'http', 'mpp'])
  expect(merged.map((each) => [each.name, each.measuredAt])).toEqual([
    ['http', '2026-11-29 09:00'],
    ['mpp', '2026-11-29 06:00'],
  ])
})

test('behavior: one run reads as one sentence; sections of several runs each carry their date', () => {
  const oneRun = [section('http', '2026-11-29 05:55', 300), section('mpp', '2026-11-29 06:00', 100)]
  const single = resultsReport(oneRun, options)
  expect(single).toContain('Measured from 2026-11-29 05:55 UTC with `bun run bench` (400 s)')
  expect(single).toContain('http 1.0-1.1, mpp 1.0-1.1')
  const mixed = resultsReport(
    mergeKept(oneRun, [section('http', '2026-11-29 09:00', 320, '2')], ['http', 'mpp']),
    options,
  )
  expect(mixed).not.toContain('Measured from')
  expect(mixed).toContain('| http | 2026-11-29 09:00 | 320 |')
  expect(mixed).toContain('| mpp | 2026-11-29 06:00 | 100 |')
  // The goals of every section, the new figures among them, then each section and the appendix.
  expect(mixed).toContain('| http goal | 2 | >= 1 | **no** |')
  expect(mixed).toContain('| mpp goal | 1 | >= 1 | yes |')
  expect(mixed.indexOf('## http')).toBeLessThan(mixed.indexOf('## mpp'))
  expect(mixed.trimEnd().endsWith('## Changes')).toBe(true)
})
