import { afterAll } from 'bun:test'
import { endLeftovers } from './processEnd.ts'

// Preloaded into every `bun test` run (bunfig.toml): after the last test file, whatever a helper started and no test
// stopped is ended (processEnd.ts). bun test ends its process without an 'exit' event to listeners.
afterAll(endLeftovers)
