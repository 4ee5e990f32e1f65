import { describeTables, postgresKit } from '@agentmarket/store-sql'

// The tables are described once for both SQL stores (@agentmarket/store-sql schema.ts); these are PostgreSQL's, which
// drizzle-kit reads to write this store's migrations (`bun run db:generate:postgres`). Functions, triggers and the
// trigram search index are in hand-written migrations (0001): drizzle's schema does not hold them.

/** The tables of the PostgreSQL store, by their names in the description (store-sql's executor reads them so). */
export const tables = describeTables(postgresKit)

/** Each table of the PostgreSQL store. */
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
