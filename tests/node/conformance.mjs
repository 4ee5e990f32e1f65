// @ts-check
// The Store conformance suite from the built @agentmarket/core/testing, run by node's own test runner over the
// built memoryStore and libSQL store (tests/node/node.test.ts runs it with `node --test`).
import { describe, test } from 'node:test'
import { memoryStore } from '@agentmarket/core'
import { storeSuite } from '@agentmarket/core/testing'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'

storeSuite({ describe, test }, 'memoryStore (dist, node)', async () => memoryStore())
storeSuite({ describe, test }, 'libsqlStore on :memory: (dist, node)', async () =>
  libsqlStore(await openDatabase(':memory:')),
)
