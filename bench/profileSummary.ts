/**
 * Summarizes a `.cpuprofile` (from `bun --cpu-prof`): for each phase window (a JSON list of {name, start, end} in
 * the profile's wall-clock µs), or the whole run, self time by package and by function, and inclusive time of the
 * functions that spend the most, in µs per call when `--calls N` names how many calls a phase made.
 * Usage: bun bench/profileSummary.ts PROFILE [PHASES.json] [--top N] [--calls name=N,...] [--owner mppx|ours] [--parts]
 * `--parts` adds a table by part of an x402 paid order (PARTS: the nearest frame of a known module decides), for
 * x402Profile.ts's phases, ours and the reference's alike.
 */

export {}

type CallFrame = { functionName: string; url: string; lineNumber: number }
type ProfileNode = { id: number; callFrame: CallFrame; children?: number[] }
type Profile = { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] }
type Phase = { name: string; start: number; end: number }

const args = process.argv.slice(2)
const flag = (name: string) => {
  const index = args.indexOf(name)
  return index >= 0 ? args.splice(index, 2)[1] : undefined
}
const top = Number(flag('--top') ?? 25)
/** Only samples of this owner (mppx, ours, …) in the function tables; the owner table still shows all. */
const onlyOwner = flag('--owner')
const byParts = args.includes('--parts')
if (byParts) args.splice(args.indexOf('--parts'), 1)
const calls = new Map(
  (flag('--calls') ?? '')
    // Pairs end at a count: a phase's name may hold commas.
    .split(/(?<==[0-9.]+),/)
    .filter(Boolean)
    .map((pair) => pair.split('=') as [string, string])
    .map(([name, count]) => [name, Number(count)] as const),
)
const [profilePath, phasesPath] = args
if (!profilePath) throw new Error('usage: bun bench/profileSummary.ts PROFILE [PHASES.json]')
const profile = (await Bun.file(profilePath).json()) as Profile
const phases: Phase[] = phasesPath
  ? ((await Bun.file(phasesPath).json()) as Phase[])
  : [{ name: 'whole run', start: 0, end: Number.POSITIVE_INFINITY }]

const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const parentOf = new Map<number, number>()
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id)

/** A package-level name for a script: the npm package, our workspace package, or Bun's own code. */
function packageOf(url: string): string {
  const module = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (module) return module[1] as string
  const ours = /packages\/([^/]+)\//.exec(url)
  if (ours) return `agentmarket:${ours[1]}`
  if (url.includes('/bench/') || url.includes('/tests/')) return 'bench driver'
  return url ? url.replace(/^.*\//, '') : '(native / GC / idle)'
}
const frameName = (frame: CallFrame) =>
  `${frame.functionName || '(anonymous)'} ${packageOf(frame.url)}${frame.url ? `:${frame.lineNumber + 1}` : ''}`

const perCall = (micros: number, count: number) => (count ? `${(micros / count).toFixed(1)} µs/call` : '')
const rows = (totals: Map<string, number>, total: number, count: number) =>
  [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(
      ([name, micros]) =>
        `  ${((100 * micros) / total).toFixed(1).padStart(5)}%  ${perCall(micros, count).padStart(16)}  ${name}`,
    )
    .join('\n')

/**
 * Whose code a sample is in: the nearest frame from mppx or from us (our packages, Elysia) going up from the leaf, so
 * viem, ox and noble called by mppx count as mppx's, and the same libraries called by our code (or our Store called
 * back by mppx's replay store) as ours.
 */
function ownerOf(node: ProfileNode): string {
  for (let id: number | undefined = node.id; id !== undefined; id = parentOf.get(id)) {
    const pkg = packageOf((byId.get(id) as ProfileNode).callFrame.url)
    if (pkg === 'mppx') return 'mppx'
    if (pkg.startsWith('agentmarket:') || pkg === 'elysia') return 'ours'
    if (pkg === 'bench driver') return 'bench driver'
  }
  return 'runtime (no JS frame of either)'
}

/**
 * The parts of an x402 paid order, by the module of a frame, most specific first: viem, ox, noble and zod name no part
 * of their own, so their time goes to the code that called them (our facilitator, our chain reader, x402's).
 */
const PARTS: [RegExp, string][] = [
  [/packages\/store-(libsql|sql)\/|node_modules\/drizzle-orm\//, 'store: SQLite writes and reads'],
  [
    /packages\/core\/src\/adapters\/viemX402\.ts|node_modules\/@x402\/evm\/|node_modules\/@x402\/core\/dist\/esm\/facilitator\//,
    'x402 verify + settle (facilitator: signature, simulation, transaction)',
  ],
  [
    /packages\/core\/src\/adapters\/(viemChain|jsonRpcBatcher|budgetedTransport)\.ts/,
    "chain reads by the market's reader (the settlement's receipt)",
  ],
  [/packages\/core\/src\/payments\/X402\.ts|node_modules\/@x402\//, 'x402 protocol: headers, payload schema'],
  [
    /packages\/core\/src\/(payments\/Verifier|actions\/tasks\/judging)\.ts/,
    'our checks: the judgment of the chain',
  ],
  [
    /packages\/core\/src\/(routes\/|http\.ts)|packages\/server\/|node_modules\/(elysia|hono)\//,
    'HTTP pipeline (router, request, answer)',
  ],
  [/packages\/core\/src\//, 'our order logic: claims, task, budgets, events'],
  [/\/bench\/|\/tests\//, 'bench driver'],
]

/** The part of an x402 paid order a sample is in (PARTS), or the runtime's when no frame names one. */
function partOf(node: ProfileNode): string {
  for (let id: number | undefined = node.id; id !== undefined; id = parentOf.get(id)) {
    const { url } = (byId.get(id) as ProfileNode).callFrame
    const part = PARTS.find(([pattern]) => pattern.test(url))
    if (part) return part[1]
  }
  return 'runtime, no JS frame (GC, sockets, fetch, timers)'
}

/**
 * The time a sample stands for: the interval to the next one, at most twice the usual interval. The sampler takes no
 * sample while the thread waits, so the sample before a wait (an event-loop turn with nothing to do, a server between
 * requests) would otherwise be charged for the whole wait, and whatever ran last before idling look expensive.
 */
const usualInterval =
  [...profile.timeDeltas].sort((a, b) => a - b)[Math.floor(profile.timeDeltas.length / 2)] ?? 0
const weightOf = (index: number) => Math.min(profile.timeDeltas[index + 1] ?? 0, 2 * usualInterval)

// A phase measured in several rounds (one window each) is summed over its windows.
const windowsByName = new Map<string, Phase[]>()
for (const phase of phases) windowsByName.set(phase.name, [...(windowsByName.get(phase.name) ?? []), phase])
for (const [name, windows] of windowsByName) {
  const phase = { name }
  const owners = new Map<string, number>()
  const parts = new Map<string, number>()
  const self = new Map<string, number>()
  const selfPackage = new Map<string, number>()
  const inclusive = new Map<string, number>()
  let total = 0
  let time = profile.startTime
  profile.samples.forEach((sample, index) => {
    time += profile.timeDeltas[index] ?? 0
    if (!windows.some((window) => time >= window.start && time <= window.end)) return
    const delta = weightOf(index)
    const node = byId.get(sample)
    if (!node) return
    total += delta
    const owner = ownerOf(node)
    owners.set(owner, (owners.get(owner) ?? 0) + delta)
    if (byParts) parts.set(partOf(node), (parts.get(partOf(node)) ?? 0) + delta)
    if (onlyOwner && owner !== onlyOwner) return
    self.set(frameName(node.callFrame), (self.get(frameName(node.callFrame)) ?? 0) + delta)
    const pkg = packageOf(node.callFrame.url)
    selfPackage.set(pkg, (selfPackage.get(pkg) ?? 0) + delta)
    const seen = new Set<string>()
    for (let id: number | undefined = node.id; id !== undefined; id = parentOf.get(id)) {
      const frame = (byId.get(id) as ProfileNode).callFrame
      const name = frameName(frame)
      if (seen.has(name) || frame.functionName === '(root)') continue
      seen.add(name)
      inclusive.set(name, (inclusive.get(name) ?? 0) + delta)
    }
  })
  const count = calls.get(phase.name) ?? 0
  console.log(`\n## ${phase.name}: ${(total / 1000).toFixed(0)} ms sampled ${perCall(total, count)}`)
  console.log(`by owner:\n${rows(owners, total, count)}`)
  if (byParts) console.log(`by part:\n${rows(parts, total, count)}`)
  console.log(`self time by package:\n${rows(selfPackage, total, count)}`)
  console.log(`self time by function:\n${rows(self, total, count)}`)
  console.log(`inclusive time by function:\n${rows(inclusive, total, count)}`)
}
