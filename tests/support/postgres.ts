import { spawn, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { openPostgres } from '../../packages/store-postgres/src/open.ts'
import { freePort } from './process.ts'
import { atProcessEnd } from './processEnd.ts'

/** A PostgreSQL server of a test run's own, on 127.0.0.1, in a temporary data folder removed when it stops. */
export type TempPostgres = {
  /** The server's temporary folder (its data and socket): removed when it stops, or when the process exits. */
  folder: string
  /** The URL of the server's `postgres` database, for administration (CREATE DATABASE). */
  adminUrl: string
  port: number
  /** The URL of database `name` on this server. */
  urlOf(name: string): string
  /** Creates an empty database (or a copy of `template`) with a new name; its URL. */
  createDatabase(template?: string): Promise<string>
  /** Stops the server (a fast shutdown by its PID) and removes its folder; safe to call twice. */
  stop(): Promise<void>
  /** Stops the server as an operator's restart does (a fast shutdown), keeping its data; resolves once it exited. */
  halt(): Promise<void>
  /** Starts the halted server again on the same port; resolves once it takes connections. */
  resume(): Promise<void>
  /**
   * Stops the server and every process of it with SIGSTOP: it keeps its connections and answers nothing (a database
   * host that hangs). `thaw` (and `stop`) send SIGCONT.
   */
  freeze(): void
  /** Lets a frozen server run again. */
  thaw(): void
}

/** The folder of Debian's newest PostgreSQL server binaries (`/usr/lib/postgresql/<version>/bin`). */
export function postgresBinaries(): string {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((version) => existsSync(join(root, version, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : []
  const newest = versions[0]
  if (!newest)
    throw new Error(
      'no PostgreSQL server in /usr/lib/postgresql: bun scripts/system-deps.ts test installs it',
    )
  return join(root, newest, 'bin')
}

/**
 * PostgreSQL refuses to run as root: as root, its commands run as Debian's `postgres` user, which owns the folder.
 * `setpriv` execs the command itself, so the process we hold is the server and its PID is the one to signal.
 */
function asServerUser(folder: string): { wrap(command: string[]): string[] } {
  if (userInfo().uid !== 0) return { wrap: (command) => command }
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim())
  for (const path of [folder, join(folder, 'data')]) chownSync(path, id('-u'), id('-g'))
  return {
    wrap: (command) => ['setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', '--', ...command],
  }
}

/** A self-signed certificate and key for 127.0.0.1 in `data`, owned by the server's user; the server's TLS flags. */
function selfSignedCertificate(data: string, user: { wrap(command: string[]): string[] }): string[] {
  const [cert, key] = [join(data, 'server.crt'), join(data, 'server.key')]
  runOrThrow(
    user.wrap([
      'openssl',
      ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'],
      ...['-keyout', key, '-out', cert],
    ]),
  )
  runOrThrow(user.wrap(['chmod', '600', key]))
  return ['-c', 'ssl=on', '-c', `ssl_cert_file=${cert}`, '-c', `ssl_key_file=${key}`]
}

/** Runs a command to its end; throws with its output unless it exits 0. */
function runOrThrow(command: string[]) {
  const done = spawnSync(command[0] as string, command.slice(1), { encoding: 'utf8' })
  if (done.status !== 0) throw new Error(`${command.join(' ')} failed: ${done.stderr}${done.stdout}`)
}

/**
 * Waits until the server takes connections, or fails when it exits. The bound only ends a wait a test already gave up
 * on: a busy machine starts PostgreSQL slowly (over 20 s beside two CI runs), never wrongly.
 */
async function waitForServer(url: string, exited: () => boolean, timeoutMs = 300_000) {
  const started = performance.now()
  for (;;) {
    if (exited()) throw new Error('postgres exited before it took connections')
    const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} })
    const ready = await sql`select 1`.then(
      () => true,
      () => false,
    )
    await sql.end({ timeout: 1 })
    if (ready) return
    if (performance.now() - started > timeoutMs)
      throw new Error(`postgres did not answer within ${timeoutMs} ms`)
    await Bun.sleep(25)
  }
}

/** The running server (a postmaster) and its children, killed at once: a process about to exit cannot wait. */
function killAll(postmaster: number | undefined) {
  if (postmaster === undefined) return
  const children = spawnSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).stdout ?? ''
  for (const pid of [postmaster, ...children.split('\n').filter(Boolean).map(Number)]) {
    try {
      process.kill(pid, 'SIGCONT')
      process.kill(pid, 'SIGKILL')
    } catch {
      // Gone already.
    }
  }
}

/** Removes a server's folder; a server process still ending may write into it meanwhile, so removal is retried. */
const removeFolder = (folder: string) =>
  rmSync(folder, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 })

/**
 * Starts a PostgreSQL server of its own: `initdb` into a temporary folder (trust authentication, UTF-8), then
 * `postgres` on a free port of 127.0.0.1 with its socket in that folder. With `tls`, it also takes TLS connections,
 * with a self-signed certificate for 127.0.0.1 made by openssl (no CA vouches for it). Durability settings stay PostgreSQL's
 * defaults (fsync on), as a self-hoster runs it. The folder is removed (and the server ended) on every way out: `stop`,
 * a start that fails, and the process ending without `stop` (a test that failed before it, a describe whose afterAll a
 * `bun test -t` filter skipped: processEnd.ts).
 * @example const pg = await startPostgres(); afterAll(() => pg.stop()); const url = await pg.createDatabase()
 */
export async function startPostgres(options: { tls?: boolean } = {}): Promise<TempPostgres> {
  const bin = postgresBinaries()
  const folder = mkdtempSync(join(tmpdir(), 'agentmarket-pg-'))
  // Set once the server is launched: what ends it when the process ends or the start fails.
  let running: (() => number | undefined) | null = null
  const end = () => {
    killAll(running?.())
    removeFolder(folder)
  }
  const release = atProcessEnd(end)
  const launched = (postmaster: () => number | undefined) => {
    running = postmaster
  }
  try {
    return await startIn(folder, bin, options, launched, release)
  } catch (error) {
    release()
    end()
    throw error
  }
}

/** startPostgres in `folder`: `launched` hears how to find the running postmaster, `released` when it is removed. */
async function startIn(
  folder: string,
  bin: string,
  options: { tls?: boolean },
  launched: (postmaster: () => number | undefined) => void,
  released: () => void,
): Promise<TempPostgres> {
  const data = join(folder, 'data')
  mkdirSync(data)
  const user = asServerUser(folder)
  runOrThrow(
    user.wrap([
      join(bin, 'initdb'),
      '-D',
      data,
      '-U',
      'market',
      '--auth=trust',
      '-E',
      'UTF8',
      '--locale=C.UTF-8',
    ]),
  )
  const port = freePort()
  const tls = options.tls ? selfSignedCertificate(data, user) : []
  const [command, ...args] = user.wrap([
    join(bin, 'postgres'),
    ...['-D', data, '-p', String(port), '-k', folder, '-c', 'listen_addresses=127.0.0.1', ...tls],
  ])
  // One running server process at a time: started here, and again by resume() after a halt().
  const launch = () => {
    const child = spawn(command as string, args, { stdio: 'ignore' })
    const state = { exited: false, child, stopped: Promise.resolve() }
    state.stopped = new Promise<void>((resolve) =>
      child.once('exit', () => {
        state.exited = true
        resolve()
      }),
    )
    return state
  }
  let server = launch()
  const exited = () => server.exited
  launched(() => (exited() ? undefined : server.child.pid))
  const urlOf = (name: string) => `postgres://market@127.0.0.1:${port}/${name}`
  const adminUrl = urlOf('postgres')
  await waitForServer(adminUrl, exited)
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  let databases = 0
  let stopped = false
  // The processes a freeze stopped: the postmaster and its children (backends, checkpointer, …) at that moment.
  let frozen: number[] = []
  const thaw = () => {
    for (const pid of frozen) process.kill(pid, 'SIGCONT')
    frozen = []
  }
  return {
    folder,
    adminUrl,
    port,
    urlOf,
    async createDatabase(template) {
      const name = `test_${++databases}`
      await admin.unsafe(`create database ${name}${template ? ` template ${template}` : ''}`)
      return urlOf(name)
    },
    async stop() {
      if (stopped) return
      stopped = true
      thaw()
      try {
        await admin.end({ timeout: 1 })
      } finally {
        // SIGQUIT is PostgreSQL's immediate shutdown: its data is removed next, and a fast shutdown waited minutes here
        // while dozens of pools the tests left open kept reconnecting.
        if (!exited()) server.child.kill('SIGQUIT')
        await server.stopped
        removeFolder(folder)
        released()
      }
    },
    freeze() {
      const postmaster = server.child.pid
      if (postmaster === undefined || exited()) throw new Error('postgres is not running')
      // The postmaster first, so it starts no new child after its children are listed.
      process.kill(postmaster, 'SIGSTOP')
      frozen = [postmaster]
      const children = spawnSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).stdout
      for (const pid of children.split('\n').filter(Boolean).map(Number)) {
        process.kill(pid, 'SIGSTOP')
        frozen.push(pid)
      }
    },
    thaw,
    async halt() {
      if (!exited()) server.child.kill('SIGINT')
      await server.stopped
    },
    async resume() {
      if (!exited()) return
      server = launch()
      await waitForServer(adminUrl, exited)
    },
  }
}

/** A test PostgreSQL with a migrated template database, and fresh copies of it. */
export type MigratedPostgres = TempPostgres & {
  /** The migrated template's name (CREATE DATABASE … TEMPLATE it). */
  template: string
  /** A new database, a copy of the migrated template: a fresh, empty market (about 0.1 s here). */
  freshUrl(): Promise<string>
}

/**
 * startPostgres, then a database migrated once as a template: each test gets a copy (CREATE DATABASE … TEMPLATE)
 * instead of migrating an empty one.
 * @example const pg = await startMigratedPostgres(); const store = await postgresStore(await openPostgres(await pg.freshUrl()))
 */
export async function startMigratedPostgres(): Promise<MigratedPostgres> {
  const server = await startPostgres()
  try {
    const templateUrl = await server.createDatabase()
    // Migrated, then closed: PostgreSQL copies a template only while nobody is connected to it.
    await (await openPostgres(templateUrl, { max: 1 })).close()
    const template = new URL(templateUrl).pathname.slice(1)
    return { ...server, template, freshUrl: () => server.createDatabase(template) }
  } catch (error) {
    // Nobody holds the server to stop it: a failed migration would leave it running and its folder behind.
    await server.stop()
    throw error
  }
}
