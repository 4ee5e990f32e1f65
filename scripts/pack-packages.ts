/**
 * Packs the installable packages into one tarball each, ready for `npm publish <tarball>` or for installing into any
 * project: @agentmarket/core, store-sql, store-libsql, store-postgres, server and client. It builds their `dist/` first
 * (scripts/build-packages.ts), packs with `bun pm pack` (which writes each `workspace:*` dependency as the version it
 * names), then checks every tarball: no `workspace:` left, no test file, every `exports`/`bin` target inside, under
 * the size bound; and prints each one's size.
 * Usage: bun run pack:packages            (writes dist-packages/)
 *        bun scripts/pack-packages.ts --no-build [--out DIR]   (dist/ already built, e.g. by `bun run test`)
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const root = resolve(import.meta.dir, '..')

/** The packages that install outside this repository, in dependency order. */
export const INSTALLABLE_PACKAGES = [
  'packages/core',
  'packages/store-sql',
  'packages/store-libsql',
  'packages/store-postgres',
  // Before the server: its `agentmarket dev` seller bot imports the client.
  'packages/client',
  'packages/server',
] as const

/** Where `bun run pack:packages` writes the tarballs (git-ignored). */
export const DEFAULT_OUT = join(root, 'dist-packages')

/**
 * A tarball's bound, compressed. The largest (core: dist, its source maps and src) is about 0.7 MiB; a tarball past
 * this has picked up something it should not carry (a database, node_modules, a build left in src).
 */
const MAX_TARBALL_BYTES = 2 * 1024 * 1024

/** One packed package: its name and version, the tarball's path and size, and the paths inside (without `package/`). */
export type Tarball = { name: string; version: string; file: string; bytes: number; files: string[] }

/** The manifest fields the checks read. */
type Manifest = {
  name: string
  version: string
  exports?: Record<string, string | Record<string, string>>
  bin?: Record<string, string>
  dependencies?: Record<string, string>
}

/** Runs a command and returns its stdout; throws with its stderr when it fails. */
function run(cmd: string[], cwd = root): string {
  const done = Bun.spawnSync(cmd, { cwd, stdout: 'pipe', stderr: 'pipe' })
  if (done.exitCode !== 0) throw new Error(`${cmd.join(' ')} failed (exit ${done.exitCode}):\n${done.stderr}`)
  return done.stdout.toString()
}

/** Every file an `exports` map or `bin` names, without its leading `./`. */
function targets(manifest: Manifest): string[] {
  const named = Object.values(manifest.exports ?? {}).flatMap((target) =>
    typeof target === 'string' ? [target] : Object.values(target),
  )
  return [...named, ...Object.values(manifest.bin ?? {})].map((path) => path.replace(/^\.\//, ''))
}

/** What is wrong with a packed tarball (empty: nothing). */
export function tarballProblems(manifest: Manifest, files: string[], bytes: number): string[] {
  const problems: string[] = []
  for (const [dependency, range] of Object.entries(manifest.dependencies ?? {}))
    if (range.startsWith('workspace:')) problems.push(`dependency ${dependency} is still ${range}`)
  for (const file of files)
    if (/\.test\.ts$|(^|\/)node_modules\/|\.db$/.test(file)) problems.push(`carries ${file}`)
  if (!files.includes('LICENSE')) problems.push('carries no LICENSE')
  for (const target of targets(manifest))
    if (!files.includes(target)) problems.push(`exports or bin name ${target}, which is not inside`)
  if (bytes > MAX_TARBALL_BYTES) problems.push(`is ${bytes} bytes, over the ${MAX_TARBALL_BYTES} bound`)
  return problems
}

/**
 * Packs a package folder with the repository's LICENSE beside it for the moment of packing (MIT asks that the notice
 * travel with every copy; `bun pm pack` always takes a LICENSE it finds), and returns the tarball's path.
 */
function packWithLicense(folder: string, out: string): string {
  const license = join(root, folder, 'LICENSE')
  const borrowed = !existsSync(license)
  if (borrowed) copyFileSync(join(root, 'LICENSE'), license)
  try {
    // --quiet prints only the tarball's path.
    return run(['bun', 'pm', 'pack', '--destination', out, '--quiet'], join(root, folder)).trim()
  } finally {
    if (borrowed) rmSync(license)
  }
}

/**
 * Packages whose installed copy must run its dist/ under Bun too: their dist compiles in a dependency this repository
 * patches (scripts/build-packages.ts, `bundled`), which their src/ would import unpatched from the registry.
 */
const DIST_ONLY = new Set(['packages/store-postgres'])

/** Rewrites the tarball `file`'s package.json without the `bun` export conditions (so Bun, too, loads dist/). */
function dropBunConditions(file: string) {
  const work = mkdtempSync(join(tmpdir(), 'agentmarket-pack-'))
  try {
    run(['tar', '-xzf', file, '-C', work])
    const path = join(work, 'package', 'package.json')
    const manifest = JSON.parse(readFileSync(path, 'utf8')) as Manifest
    for (const target of Object.values(manifest.exports ?? {}))
      if (typeof target === 'object') delete target.bun
    writeFileSync(path, `${JSON.stringify(manifest, null, 2)}\n`)
    run(['tar', '-czf', file, '-C', work, 'package'])
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** Packs one package folder into `out` and checks the tarball. */
function packOne(folder: string, out: string): Tarball {
  const file = packWithLicense(folder, out)
  if (DIST_ONLY.has(folder)) dropBunConditions(file)
  const files = run(['tar', '-tzf', file])
    .split('\n')
    .filter((line) => line.startsWith('package/') && !line.endsWith('/'))
    .map((line) => line.slice('package/'.length))
  const manifest = JSON.parse(run(['tar', '-xzOf', file, 'package/package.json'])) as Manifest
  const bytes = Bun.file(file).size
  const problems = tarballProblems(manifest, files, bytes)
  if (problems.length) throw new Error(`${manifest.name}: ${problems.join('; ')}`)
  return { name: manifest.name, version: manifest.version, file, bytes, files }
}

/** Packs every installable package into `out` (emptied first); `build: false` when dist/ is already built. */
export async function packPackages({ out = DEFAULT_OUT, build = true } = {}): Promise<Tarball[]> {
  if (build) run(['bun', 'scripts/build-packages.ts'])
  rmSync(out, { recursive: true, force: true })
  mkdirSync(out, { recursive: true })
  return INSTALLABLE_PACKAGES.map((folder) => packOne(folder, out))
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  const outAt = args.indexOf('--out')
  const out = outAt >= 0 && args[outAt + 1] ? resolve(args[outAt + 1] as string) : DEFAULT_OUT
  const tarballs = await packPackages({ out, build: !args.includes('--no-build') })
  for (const { name, version, file, bytes, files } of tarballs)
    console.log(`${name}@${version}  ${(bytes / 1024).toFixed(0)} KiB, ${files.length} files  ${file}`)
}
