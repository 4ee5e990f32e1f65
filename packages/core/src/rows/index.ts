export * from './agentRows.ts'
export * from './columns.ts'
export * from './outboxRows.ts'
export * from './taskRows.ts'
