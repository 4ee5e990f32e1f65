// The scripted Tempo node lives with `agentmarket dev`, which runs it for MPP; the tests use the same one.
export * from '../../packages/server/src/dev/scriptedTempo.ts'
