import { describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { AnvilNotFoundError, findAnvil, spawnAnvil } from './anvil.ts'

const root = resolve(import.meta.dir, '../../../..')

describe('findAnvil', () => {
  test('behavior: npm’s wrapper on the PATH leads to the platform binary it would start', () => {
    const found = findAnvil({ checkout: null, path: `/nowhere:${root}/node_modules/.bin` })
    expect(found?.wrapper).toBe(false)
    expect(found?.path).toMatch(/node_modules\/@foundry-rs\/anvil-[a-z0-9]+-[a-z0-9]+\/bin\/anvil$/)
    expect(existsSync(found?.path ?? '')).toBe(true)
    expect(findAnvil({ checkout: root, path: '' })).toEqual(found)
  })

  test('error: none in the checkout or on the PATH is null, and spawnAnvil refuses it', async () => {
    expect(findAnvil({ checkout: null, path: '/nowhere' })).toBeNull()
    await expect(spawnAnvil(null)).rejects.toThrow(AnvilNotFoundError)
  })
})
