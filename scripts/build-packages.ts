/**
 * Builds the embeddable packages for Node.js 20+ and any ESM host: `dist/` of @agentmarket/core (entries `.`, `./rows`,
 * `./routes`, `./viem`, `./testing`, `./typed-data`), @agentmarket/store-sql, @agentmarket/store-libsql, @agentmarket/store-postgres and @agentmarket/client, as ES modules with
 * their dependencies left as imports (shared code split into chunks, so one class is one class across entries), and type declarations from tsc.
 * The source maps point at `src/`, which every package ships beside `dist/`, so they carry no copy of the sources.
 * Usage: bun run build:packages   (bun run pack:packages builds, then packs the tarballs)
 */
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'

const root = resolve(import.meta.dir, '..')

/**
 * A package to build: its folder, its entry points (source paths, relative to the folder), files of src/ copied to
 * dist/, and the dependencies compiled into its dist rather than imported (a dependency this repository patches: an
 * install would get the registry's unpatched copy).
 */
type PackageBuild = { folder: string; entries: string[]; copies?: string[]; bundled?: string[] }

const PACKAGES: PackageBuild[] = [
  {
    folder: 'packages/core',
    entries: [
      'src/index.ts',
      'src/rows/index.ts',
      'src/routes/index.ts',
      'src/viem.ts',
      'src/testing/index.ts',
      'src/typedData.ts',
    ],
  },
  // Before the stores: their dist imports it.
  { folder: 'packages/store-sql', entries: ['src/index.ts'] },
  { folder: 'packages/store-libsql', entries: ['src/index.ts'] },
  // postgres.js carries patches/postgres@3.4.9.patch (a closed socket's write must not end the process).
  { folder: 'packages/store-postgres', entries: ['src/index.ts'], bundled: ['postgres'] },
  // The client's types are a written .d.ts (bun run openapi:types), which tsc does not copy: `copies` does.
  { folder: 'packages/client', entries: ['src/index.ts'], copies: ['generated/openapi.d.ts'] },
]

/** Compiles one package's entries to `dist/`, keeping `src/`'s folder shape (src/testing/index.ts -> dist/testing/index.js). */
async function bundle({ folder, entries, bundled = [] }: PackageBuild) {
  const result = await Bun.build({
    entrypoints: entries.map((entry) => join(root, folder, entry)),
    root: join(root, folder, 'src'),
    outdir: join(root, folder, 'dist'),
    target: 'node',
    format: 'esm',
    splitting: true,
    ...externals(folder, bundled),
    sourcemap: 'linked',
  })
  if (!result.success) {
    for (const log of result.logs) console.error(log)
    throw new Error(`bundling ${folder} failed`)
  }
  for (const output of result.outputs) if (output.kind === 'sourcemap') dropSourcesContent(output.path)
}

/** Bun.build's options that leave every dependency of `folder` an import, but those `bundled`. */
function externals(folder: string, bundled: string[]) {
  if (bundled.length === 0) return { packages: 'external' as const }
  const manifest = JSON.parse(readFileSync(join(root, folder, 'package.json'), 'utf8'))
  const names = Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies })
  const imported = names.filter((name) => !bundled.includes(name))
  return { external: imported.flatMap((name) => [name, `${name}/*`]) }
}

/** Removes a source map's copy of the sources: `sources` names the files in the package's `src/`, shipped too. */
function dropSourcesContent(path: string) {
  const { sourcesContent: _copy, ...map } = JSON.parse(readFileSync(path, 'utf8'))
  writeFileSync(path, JSON.stringify(map))
}

/** Writes `.d.ts` files beside the bundles with tsc (the package's tsconfig.build.json). */
async function declarations({ folder }: PackageBuild) {
  const tsc = Bun.spawn(['bunx', 'tsc', '-p', join(root, folder, 'tsconfig.build.json')], {
    stdout: 'inherit',
    stderr: 'inherit',
  })
  if ((await tsc.exited) !== 0) throw new Error(`type declarations of ${folder} failed`)
}

for (const build of PACKAGES) {
  rmSync(join(root, build.folder, 'dist'), { recursive: true, force: true })
  await bundle(build)
  await declarations(build)
  for (const file of build.copies ?? []) {
    const to = join(root, build.folder, 'dist', file)
    mkdirSync(dirname(to), { recursive: true })
    copyFileSync(join(root, build.folder, 'src', file), to)
  }
  console.log(`built ${build.folder}/dist`)
}
