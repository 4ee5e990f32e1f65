import { describe, test } from 'bun:test'
import { storeSuite } from '../testing/storeSuite.ts'
import { memoryStore } from './memoryStore.ts'

storeSuite({ describe, test }, 'memoryStore', async () => memoryStore())
