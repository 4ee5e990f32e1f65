import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { packPackages, type Tarball } from '../../scripts/pack-packages.ts'
import { ensurePackagesBuilt } from '../support/examples.ts'
import { freePort, readUntil, runToEnd, waitForOk } from '../support/process.ts'

// The packages as a user outside this repository gets them: packed once into tarballs (scripts/pack-packages.ts),
// installed into an empty project in a temporary folder with npm, then pnpm, then bun (their dependencies from the
// npm registry, through each manager's shared cache), and used from there: README's example under Node.js and Bun,
// the server's `agentmarket` command, and a TypeScript consumer. Nothing here can reach the workspace's packages:
// each probe prints where its imports resolved, inside the project's node_modules.

const root = resolve(import.meta.dir, '../..')
const work = realpathSync(mkdtempSync(join(tmpdir(), 'agentmarket-install-')))
// Installs download and link a few hundred packages: a verdict is how they exited and what the programs printed; this
// bound only ends a hang, wide on purpose for a loaded machine (see tests/node/node.test.ts).
const HANG_BOUND_MS = 900_000
let tarballs: Tarball[] = []

/** The environment a user's shell would give: PATH and HOME (each manager's cache is under HOME), nothing of Bun's. */
const userEnv = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: process.env.HOME ?? work,
  ...extra,
})

/** Runs a command in `cwd` as a user would; fails the test with its output when it exits non-zero. */
async function sh(cmd: string[], cwd: string, env: Record<string, string> = {}) {
  const run = await runToEnd(cmd, { cwd, env: userEnv(env) })
  if (run.exitCode !== 0)
    throw new Error(`${cmd.join(' ')} exited ${run.exitCode}\n${run.stdout}\n${run.stderr}`)
  return run.stdout
}

/** README's embedding example: the first js block of its "Install the packages" section, as written. */
function readmeExample(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## Install the packages'))
  const block = section.match(/```js\n([\s\S]*?)```/)?.[1]
  if (!block) throw new Error('README.md has no js block under "## Install the packages"')
  return block
}

/** Prints the runtime, where each entry resolved, and that the entries not in the example load. */
const PROBE = `
const names = ['@agentmarket/core', '@agentmarket/core/viem', '@agentmarket/store-libsql', '@agentmarket/store-postgres', '@agentmarket/client']
const resolved = Object.fromEntries(names.map((name) => [name, import.meta.resolve(name).replace(/^file:\\/\\//, '')]))
const { openPostgres, postgresStore } = await import('@agentmarket/store-postgres')
const { storeSuite } = await import('@agentmarket/core/testing')
const { MARKET_ROUTES } = await import('@agentmarket/core')
const { createClient } = await import('@agentmarket/client')
console.log(JSON.stringify({
  bun: 'Bun' in globalThis,
  node: Number(process.versions.node.split('.')[0]),
  resolved,
  loaded: [typeof openPostgres, typeof postgresStore, typeof storeSuite, Array.isArray(MARKET_ROUTES), typeof createClient],
}))
`

/** How each manager installs the tarballs into an empty project at `dir`. */
const MANAGERS = {
  // npm takes the version each tarball names for the packages' dependencies on one another.
  npm: {
    prepare: (_dir: string) => ({}),
    install: (files: string[]) => ['npm', 'install', '--prefer-offline', '--no-audit', '--no-fund', ...files],
  },
  // pnpm and bun look those dependencies up on the registry: overrides point each name at its tarball (README).
  pnpm: {
    prepare: (dir: string) => {
      const lines = tarballs.map(({ name, file }) => `  '${name}': file:${file}`)
      // swagger-ui-dist's @scarf/scarf (the server's) asks for an install script; pnpm 12 fails until it is decided.
      const builds = `allowBuilds:\n  '@scarf/scarf': false\n`
      writeFileSync(join(dir, 'pnpm-workspace.yaml'), `overrides:\n${lines.join('\n')}\n${builds}`)
      return {}
    },
    // pnpm's own entry under Node.js: its bin is a placeholder until an install script (which bun blocks) links the
    // native binary.
    install: (files: string[]) => [
      'node',
      join(root, 'node_modules/pnpm/bin/pnpm.mjs'),
      'add',
      '--prefer-offline',
      '--config.update-notifier=false',
      ...files,
    ],
  },
  bun: {
    prepare: (_dir: string) => ({
      overrides: Object.fromEntries(tarballs.map(({ name, file }) => [name, `file:${file}`])),
    }),
    install: (files: string[]) => ['bun', 'add', ...files],
  },
} as const

type Manager = keyof typeof MANAGERS

/** Creates the empty project for `manager` and installs every tarball into it; returns the project's folder. */
async function installWith(manager: Manager): Promise<string> {
  const dir = join(work, manager)
  mkdirSync(dir)
  const { prepare, install } = MANAGERS[manager]
  const extra = prepare(dir)
  const manifest = { name: `try-agentmarket-${manager}`, private: true, type: 'module', ...extra }
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  await sh(
    install(tarballs.map(({ file }) => file)),
    dir,
    // npm and pnpm: no "update available" notice; their answers are the same without it.
    { npm_config_update_notifier: 'false' },
  )
  writeFileSync(join(dir, 'example.mjs'), readmeExample())
  writeFileSync(join(dir, 'probe.mjs'), PROBE)
  return dir
}

/** Runs README's example and the probe with `runtime` (node or bun) in the project at `dir`. */
async function runExample(runtime: 'node' | 'bun', dir: string) {
  const database = join(dir, `data-${runtime}`, 'market.db')
  const example = JSON.parse(await sh([runtime, 'example.mjs'], dir, { DATABASE_URL: `file:${database}` }))
  const probe = JSON.parse(await sh([runtime, 'probe.mjs'], dir))
  return { example, probe }
}

/** What README's example prints: the free order is paid at once and read back, and search finds the skill. */
const EXAMPLE_OUTPUT = { ordered: 201, task: 'paid', skill: 'ping', found: 1 }

/**
 * Where each entry must resolve: the project's node_modules, `src/` under Bun (its `bun` condition), else `dist/`;
 * store-postgres always `dist/`, which carries the patched PostgreSQL driver.
 */
function expectInstalled(resolved: Record<string, string>, dir: string, bun: boolean) {
  const file = (entry: string) => (bun ? `src/${entry}.ts` : `dist/${entry}.js`)
  const expected = {
    '@agentmarket/core': file('index'),
    '@agentmarket/core/viem': file('viem'),
    '@agentmarket/store-libsql': file('index'),
    '@agentmarket/store-postgres': 'dist/index.js',
    '@agentmarket/client': file('index'),
  }
  for (const [name, path] of Object.entries(expected)) {
    const at = resolved[name] ?? ''
    expect(at.startsWith(`${dir}/node_modules/`), `${name} resolved outside the project: ${at}`).toBe(true)
    expect(at.endsWith(`/${path}`), `${name} resolved to ${at}`).toBe(true)
  }
}

/** Starts the installed `agentmarket` command, orders a free skill over HTTP and reads it back; stops it. */
async function serveAndOrder(dir: string) {
  const port = freePort()
  const base = `http://127.0.0.1:${port}`
  const server = Bun.spawn([join(dir, 'node_modules/.bin/agentmarket')], {
    cwd: dir,
    env: userEnv({
      PORT: String(port),
      HOST: '127.0.0.1',
      RATE_LIMITS: 'off',
      DATABASE_URL: `file:${join(dir, 'server', 'market.db')}`,
    }),
    stdout: 'ignore',
    stderr: 'pipe',
  })
  try {
    await waitForOk(`${base}/api/community/health`, server, HANG_BOUND_MS)
    const post = (path: string, body: unknown) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    const registered = await post('/api/agents/register', {
      name: 'pinger',
      skills: [{ name: 'Ping', type: 'free' }],
    })
    const order = await post('/api/agents/pinger/tasks', { skill: 'ping', params: { host: 'example.com' } })
    const { task_id } = (await order.json()) as { task_id: string }
    const read = await fetch(`${base}/api/agents/pinger/tasks/${task_id}`)
    const task = (await read.json()) as { status: string; skill_slug: string }
    return {
      registered: registered.status,
      ordered: order.status,
      read: read.status,
      task: { status: task.status, skill: task.skill_slug },
      page: (await fetch(`${base}/agents/pinger`)).status,
    }
  } finally {
    server.kill()
    await server.exited
  }
}

beforeAll(async () => {
  await ensurePackagesBuilt()
  tarballs = await packPackages({ out: join(work, 'tarballs'), build: false })
}, HANG_BOUND_MS)

// Three installed node_modules: removing them outlasts bun's 5 s hook bound on a busy machine.
afterAll(() => {
  rmSync(work, { recursive: true, force: true })
}, HANG_BOUND_MS)

describe('the packed packages, installed into an empty project outside the repository', () => {
  test('behavior: one tarball per package, with no workspace: range left in any dependency', () => {
    expect(tarballs.map(({ name }) => name)).toEqual([
      '@agentmarket/core',
      '@agentmarket/store-sql',
      '@agentmarket/store-libsql',
      '@agentmarket/store-postgres',
      '@agentmarket/client',
      '@agentmarket/server',
    ])
    const versions = Object.fromEntries(tarballs.map(({ name, version }) => [name, version]))
    for (const { file } of tarballs) {
      const manifest = JSON.parse(
        new TextDecoder().decode(
          Bun.spawnSync(['tar', '-xzOf', file, 'package/package.json'], { stdout: 'pipe' }).stdout,
        ),
      ) as { dependencies?: Record<string, string> }
      for (const [name, range] of Object.entries(manifest.dependencies ?? {}))
        if (name.startsWith('@agentmarket/')) expect(range).toBe(versions[name] ?? 'a packed version')
    }
  })

  for (const manager of Object.keys(MANAGERS) as Manager[]) {
    describe(`installed with ${manager}`, () => {
      let dir = ''
      test(
        `behavior: ${manager} installs the six tarballs into an empty project`,
        async () => {
          dir = await installWith(manager)
          const installed = JSON.parse(
            readFileSync(join(dir, 'node_modules/@agentmarket/server/package.json'), 'utf8'),
          )
          expect(installed.name).toBe('@agentmarket/server')
        },
        HANG_BOUND_MS,
      )

      test("behavior: the installed PostgreSQL store runs the patched driver (a closed socket's write fails its queries, never the process)", () => {
        const bundle = readFileSync(
          join(dir, 'node_modules/@agentmarket/store-postgres/dist/index.js'),
          'utf8',
        )
        expect(bundle).toMatch(/function nextWrite\(fn\) \{\s*if \(!socket\) \{[^}]*CONNECTION_CLOSED/)
        expect(bundle).not.toMatch(/from ["']postgres["']/)
      })

      test(
        "behavior: README's example runs under Node.js 20+ on the installed core and libSQL store (dist/)",
        async () => {
          const { example, probe } = await runExample('node', dir)
          expect(example).toEqual(EXAMPLE_OUTPUT)
          expect(probe.bun).toBe(false)
          expect(probe.node).toBeGreaterThanOrEqual(20)
          expect(probe.loaded).toEqual(['function', 'function', 'function', true, 'function'])
          expectInstalled(probe.resolved, dir, false)
        },
        HANG_BOUND_MS,
      )

      test(
        "behavior: README's example runs under Bun on the installed packages (their src/, the bun condition)",
        async () => {
          const { example, probe } = await runExample('bun', dir)
          expect(example).toEqual(EXAMPLE_OUTPUT)
          expect(probe.bun).toBe(true)
          expect(probe.loaded).toEqual(['function', 'function', 'function', true, 'function'])
          expectInstalled(probe.resolved, dir, true)
        },
        HANG_BOUND_MS,
      )

      test(
        'behavior: the installed agentmarket command names its version, serves, takes a free order and reads it back',
        async () => {
          const version = await sh([join(dir, 'node_modules/.bin/agentmarket'), '--version'], dir)
          expect(version.trim()).toBe(
            tarballs.find(({ name }) => name === '@agentmarket/server')?.version ?? '',
          )
          expect(await serveAndOrder(dir)).toEqual({
            registered: 200,
            ordered: 201,
            read: 200,
            task: { status: 'paid', skill: 'ping' },
            page: 200,
          })
        },
        HANG_BOUND_MS,
      )

      // Once (npm's install): the commands that need the contracts' artifacts and anvil, as a user with
      // `npm i -g @foundry-rs/anvil` (this repository's anvil on the PATH) runs them.
      test.if(manager === 'npm')(
        'behavior: the installed agentmarket bench verify and agentmarket dev run outside the repository (the artifacts ship with the server), and the paid-order example pays on every rail with the installed client',
        async () => {
          const env = { PATH: `${join(root, 'node_modules/.bin')}:${process.env.PATH ?? '/usr/bin:/bin'}` }
          const command = join(dir, 'node_modules/.bin/agentmarket')
          const bench = await sh(
            [command, 'bench', 'verify', '--generate', '20', '--runs', '1', '--json'],
            dir,
            env,
          )
          expect(bench).toContain('"ok"')
          const dev = Bun.spawn([command, 'dev'], {
            cwd: dir,
            env: userEnv({ ...env, PORT: String(freePort()) }),
            stdout: 'pipe',
            stderr: 'inherit',
          })
          try {
            const printed = await readUntil(dev.stdout, (text) => text.includes('order.ts mpp'), 120_000)
            expect(printed).toContain('sandbox-seller sells "summarize" for 1 USDC')
            // README's paid-order example, copied into the project, pays on each rail with the installed client.
            copyFileSync(join(root, 'examples/paid-order/order.ts'), join(dir, 'order.ts'))
            const paid: Record<string, string> = {}
            for (const rail of ['card', 'escrow', 'job', 'x402', 'mpp']) {
              const line = printed.split('\n').find((text) => text.trim().endsWith(`order.ts ${rail}`)) ?? ''
              const command = line.trim().replace('bun examples/paid-order/order.ts', 'bun order.ts')
              const out = await sh(['bash', '-c', command], dir, env)
              paid[rail] =
                /completed: http:\/\/127\.0\.0\.1:\d+\/api\/agents\/sandbox-seller\/tasks\/task_[0-9a-f]+/.test(
                  out,
                )
                  ? 'completed'
                  : out
            }
            expect(paid).toEqual({
              card: 'completed',
              escrow: 'completed',
              job: 'completed',
              x402: 'completed',
              mpp: 'completed',
            })
          } finally {
            dev.kill('SIGINT')
            expect(await dev.exited).toBe(0)
          }
        },
        HANG_BOUND_MS,
      )
    })
  }

  test(
    'behavior: a TypeScript consumer type-checks against the installed types with moduleResolution node16 and bundler',
    async () => {
      const dir = join(work, 'npm')
      copyFileSync(join(import.meta.dir, 'consumer.ts'), join(dir, 'consumer.ts'))
      const modes = { node16: 'node16', bundler: 'esnext' } as const
      const errors = await Promise.all(
        Object.entries(modes).map(async ([resolution, module]) => {
          const compilerOptions = {
            target: 'ES2022',
            module,
            moduleResolution: resolution,
            strict: true,
            noEmit: true,
            // Declarations are checked too: an import in ours that does not resolve is an error, not a silent `any`.
            skipLibCheck: false,
            types: [],
          }
          const config = `tsconfig.${resolution}.json`
          writeFileSync(join(dir, config), JSON.stringify({ compilerOptions, files: ['consumer.ts'] }))
          const run = await runToEnd(['node', join(root, 'node_modules/typescript/bin/tsc'), '-p', config], {
            cwd: dir,
            env: userEnv(),
          })
          // Other libraries' declarations (drizzle's for drivers not installed, viem's under node16) are theirs.
          const ours = run.stdout
            .split('\n')
            .filter((line) => /error TS\d+/.test(line))
            .filter(
              (line) => !line.startsWith('node_modules/') || line.startsWith('node_modules/@agentmarket/'),
            )
          return { resolution, ours }
        }),
      )
      expect(errors).toEqual([
        { resolution: 'node16', ours: [] },
        { resolution: 'bundler', ours: [] },
      ])
    },
    HANG_BOUND_MS,
  )

  test(
    "behavior: a Bun TypeScript project type-checks createApp from the installed server's source (bun init's tsconfig)",
    async () => {
      const dir = join(work, 'bun')
      copyFileSync(join(import.meta.dir, 'serverConsumer.ts'), join(dir, 'serverConsumer.ts'))
      // What `bun init` writes that matters here; Bun's types from this repository's @types/bun, the one install
      // that is not the project's (the same as `bun add -d @types/bun` would bring).
      const compilerOptions = {
        target: 'ESNext',
        module: 'Preserve',
        moduleResolution: 'bundler',
        allowImportingTsExtensions: true,
        verbatimModuleSyntax: true,
        noEmit: true,
        strict: true,
        skipLibCheck: true,
        noUncheckedIndexedAccess: true,
        types: ['bun'],
        typeRoots: [join(root, 'node_modules/@types')],
      }
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({ compilerOptions, files: ['serverConsumer.ts'] }),
      )
      const run = await runToEnd(
        ['node', join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'],
        {
          cwd: dir,
          env: userEnv(),
        },
      )
      expect(run.stdout.split('\n').filter((line) => /error TS\d+/.test(line))).toEqual([])
      expect(run.exitCode).toBe(0)
    },
    HANG_BOUND_MS,
  )
})
