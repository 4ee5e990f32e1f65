// @ts-check
// The Store conformance suite from the built @agentmarket/core/testing, run by node's own test runner over the
// built memoryStore, libSQL store and, given POSTGRES_ADMIN_URL and POSTGRES_TEMPLATE (a migrated database to copy),
// PostgreSQL store (tests/node/node.test.ts runs it with `node --test`).
import { describe, test } from 'node:test'
import { memoryStore } from '@agentmarket/core'
import { storeSuite } from '@agentmarket/core/testing'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { openPostgres, postgresStore } from '@agentmarket/store-postgres'
import postgres from 'postgres'

storeSuite({ describe, test }, 'memoryStore (dist, node)', async () => memoryStore())
storeSuite({ describe, test }, 'libsqlStore on :memory: (dist, node)', async () =>
  libsqlStore(await openDatabase(':memory:')),
)

const { POSTGRES_ADMIN_URL: adminUrl, POSTGRES_TEMPLATE: template } = process.env
if (adminUrl && template) {
  let databases = 0
  storeSuite({ describe, test }, 'postgresStore (dist, node)', async () => {
    const name = `node_${process.pid}_${++databases}`
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
    await admin.unsafe(`create database ${name} template ${template}`)
    await admin.end()
    const url = new URL(adminUrl)
    url.pathname = `/${name}`
    return postgresStore(await openPostgres(url.href, { max: 4 }))
  })
}
