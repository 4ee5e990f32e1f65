import { afterAll, describe, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { storeSuite } from '@agentmarket/core/testing'
import { libsqlStore } from './libsqlStore.ts'
import { openDatabase } from './open.ts'

const folder = mkdtempSync(join(tmpdir(), 'agentmarket-store-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))
let fileNumber = 0

storeSuite({ describe, test }, 'libsqlStore on :memory:', async () =>
  libsqlStore(await openDatabase(':memory:')),
)
storeSuite({ describe, test }, 'libsqlStore on a file', async () =>
  libsqlStore(await openDatabase(`file:${join(folder, `nested/dir/store-${fileNumber++}.db`)}`)),
)
