/**
 * Builds the single binary `dist/agentmarket`: migrations embedded (a bundle-time macro), libSQL's native
 * module embedded (its dynamic require made static), no node_modules needed at run time.
 * Usage: bun run build [--outfile path]
 */
import { mkdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import type { BunPlugin } from 'bun'

const root = resolve(import.meta.dir, '../../..')
const outfileFlag = process.argv.indexOf('--outfile')
const outfile = resolve(
  outfileFlag > 0 ? (process.argv[outfileFlag + 1] ?? '') : join(root, 'dist/agentmarket'),
)

/** The @libsql native package for the machine we build on, e.g. `linux-x64-gnu`. */
function nativeTarget(): string {
  if (process.env.LIBSQL_NATIVE) return process.env.LIBSQL_NATIVE
  const libc = process.platform === 'linux' ? '-gnu' : ''
  return `${process.platform}-${process.arch}${libc}`
}

/** libsql picks its native addon with require(`@libsql/${target}`), which a bundler cannot follow. */
const staticLibsqlNative: BunPlugin = {
  name: 'libsql-static-native',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]libsql[\\/]index\.js$/ }, async ({ path }) => {
      const source = await Bun.file(path).text()
      // biome-ignore lint/suspicious/noTemplateCurlyInString: this is the literal source text we replace
      const dynamic = 'return require(`@libsql/${target}`);'
      if (!source.includes(dynamic))
        throw new Error(`libsql-static-native: the dynamic require moved in ${path}`)
      return {
        contents: source.replace(dynamic, `return require('@libsql/${nativeTarget()}');`),
        loader: 'js',
      }
    })
  },
}

mkdirSync(dirname(outfile), { recursive: true })
const result = await Bun.build({
  entrypoints: [join(root, 'packages/server/src/main.ts')],
  compile: { outfile },
  minify: true,
  // Parsed ahead of time: the 6 MB bundle starts in about half the time (bench/RESULTS.md, the single binary).
  bytecode: true,
  // What loads on first use (MCP, A2A, MPP, x402, mail, the commands) goes in chunks of its own, read only then: the
  // whole bundle as one module was read at start, 9 MiB more resident memory (bench/CHANGES.md).
  splitting: true,
  format: 'esm',
  define: { 'process.env.NODE_ENV': '"production"' },
  plugins: [staticLibsqlNative],
})
if (!result.success) {
  for (const log of result.logs) console.error(log)
  process.exit(1)
}
console.log(`built ${outfile}`)
