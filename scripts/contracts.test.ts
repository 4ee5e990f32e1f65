import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { ARTIFACTS_PATH, compileContracts, formatArtifacts } from './contracts.ts'

describe('contracts', () => {
  test('behavior: the committed artifacts.json matches a fresh compile of the sources', () => {
    const committed = readFileSync(ARTIFACTS_PATH, 'utf8')
    expect(
      committed,
      'packages/server/src/contracts/artifacts.json is stale: run `bun scripts/contracts.ts`',
    ).toBe(formatArtifacts(compileContracts()))
  })
})
