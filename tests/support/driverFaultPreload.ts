// Preloaded into a `bun start` process by tests/postgresDriverFault.test.ts (bun --preload). Each SIGUSR2 throws one
// error outside any request, from a setImmediate as the driver's own socket events do: the first is the error a
// PostgreSQL connection's socket raises when the server resets it (ECONNRESET, which postgres.js reports for a reset
// with no query to fail), every later one a plain TypeError, a bug.
let thrown = 0
process.on('SIGUSR2', () => {
  const error =
    thrown++ === 0
      ? Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, syscall: 'read' })
      : new TypeError('a bug outside any request')
  setImmediate(() => {
    throw error
  })
})
