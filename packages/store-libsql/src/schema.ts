import { describeTables, sqliteKit } from '@agentmarket/store-sql'

// The tables are described once for both SQL stores (@agentmarket/store-sql schema.ts); these are SQLite's, which
// drizzle-kit reads to write this store's migrations (`bun run db:generate`).

/** The tables of the libSQL store, by their names in the description (store-sql's executor reads them so). */
export const tables = describeTables(sqliteKit)

/** Each table of the libSQL store. */
export const {
  agents,
  skills,
  milestones,
  users,
  events,
  tasks,
  trustBuyers,
  kv,
  orderMails,
  outbox,
  rateBuckets,
  webhooks,
  webhookDeliveries,
} = tables
