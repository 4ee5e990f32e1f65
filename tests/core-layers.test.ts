import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

// The core's concepts stand in layers (docs/architecture.md, "Layers"): a file imports only from its own layer or the
// layers below it. Basics know no market concept; payments know the chain and no market; market concepts know no
// documents or use cases; documents are read by use cases and hosts, never the other way round.

const CORE = resolve(import.meta.dir, '../packages/core/src')

/** The layers, lowest first. */
const LAYERS = ['basics', 'payments', 'concepts', 'store', 'documents', 'actions', 'hosts'] as const
type Layer = (typeof LAYERS)[number]

/** Every file of a folder is in its layer. */
const FOLDERS: Record<string, Layer> = {
  'payments/': 'payments',
  'rows/': 'store',
  'actions/': 'actions',
  'routes/': 'hosts',
  'adapters/': 'hosts',
  'testing/': 'hosts',
}

/** The layer of each file outside those folders: a new file gets its line here. */
const FILES: Record<string, Layer> = {
  // basics: validation, errors, money, proofs and secrets, trims, network addresses, queues, caches, rate limits,
  // the configuration, and the ports that know no market concept
  'AddressSlots.ts': 'basics',
  'Config.ts': 'basics',
  'Credentials.ts': 'basics',
  'errorHelp.ts': 'basics',
  'errors.ts': 'basics',
  'FairQueue.ts': 'basics',
  'http.ts': 'basics',
  'MarketMessageTypes.ts': 'basics',
  'typedData.ts': 'basics',
  'MarketTypedData.ts': 'basics',
  'Money.ts': 'basics',
  'NetworkAddress.ts': 'basics',
  'PairingCode.ts': 'basics',
  'PersistentSecret.ts': 'basics',
  'ProofLedger.ts': 'basics',
  'RateLimit.ts': 'basics',
  'ReadCache.ts': 'basics',
  'SchemaCost.ts': 'basics',
  'SchemaFormats.ts': 'basics',
  'SignatureCheck.ts': 'basics',
  'SkillInputSchema.ts': 'basics',
  'Trim.ts': 'basics',
  'Validation.ts': 'basics',
  'WalletProof.ts': 'basics',
  'ports/CardSigner.ts': 'basics',
  'ports/Chain.ts': 'basics',
  'ports/chainBudget.ts': 'basics',
  'ports/Clock.ts': 'basics',
  'ports/Hashes.ts': 'basics',
  'ports/KvStore.ts': 'basics',
  'ports/Random.ts': 'basics',
  'ports/RateBuckets.ts': 'basics',
  'ports/requestScope.ts': 'basics',
  'ports/WebhookTransport.ts': 'basics',
  // market concepts: what the market is made of, and their rules
  'Agent.ts': 'concepts',
  'AgentSearch.ts': 'concepts',
  'AgentView.ts': 'concepts',
  'AgentSync.ts': 'concepts',
  'Budget.ts': 'concepts',
  'BuyerReview.ts': 'concepts',
  'events.ts': 'concepts',
  'Feed.ts': 'concepts',
  'Job.ts': 'concepts',
  'Liveness.ts': 'concepts',
  'Milestone.ts': 'concepts',
  'OrderMail.ts': 'concepts',
  'PaymentRechecks.ts': 'concepts',
  'Rating.ts': 'concepts',
  'Skill.ts': 'concepts',
  'Task.ts': 'concepts',
  'TaskInput.ts': 'concepts',
  'TaskSteps.ts': 'concepts',
  'Trust.ts': 'concepts',
  'User.ts': 'concepts',
  'Webhook.ts': 'concepts',
  // the store: the port that keeps the concepts (with rows/, the rows SQL stores keep)
  'ports/Mailer.ts': 'store',
  'ports/Store.ts': 'store',
  'ports/storeReads.ts': 'store',
  'ports/writeScope.ts': 'store',
  // documents: what a client reads of the concepts (cards, registration files, views)
  'A2aCard.ts': 'documents',
  'AgentCard.ts': 'documents',
  'AgentRegistration.ts': 'documents',
  'EscrowJobView.ts': 'documents',
  'TaskView.ts': 'documents',
  // use cases: the actions and what composes or feeds them
  'FeedHub.ts': 'actions',
  'Marketplace.ts': 'actions',
  // the entry points
  'index.ts': 'hosts',
  'viem.ts': 'hosts',
}

/** The layers below `actions` must not import in circles: a reader draws them bottom up. */
const ACYCLIC: readonly Layer[] = ['basics', 'payments', 'concepts', 'store', 'documents']

/** The core's source files (tests aside), relative to src. */
function sourceFiles(folder = CORE): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [relative(CORE, path)] : []
  })
}

/** The layer of a file, by its folder or its line in FILES; undefined when it has none. */
function layerOf(file: string): Layer | undefined {
  const folder = Object.keys(FOLDERS).find((prefix) => file.startsWith(prefix))
  return folder ? FOLDERS[folder] : FILES[file]
}

/** The core files a file imports (type-only imports too): specifier and file, relative to src. */
function importsOf(file: string): { specifier: string; target: string }[] {
  const text = readFileSync(join(CORE, file), 'utf8')
  return [...text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((match) => {
    const specifier = match[1] ?? ''
    return { specifier, target: relative(CORE, resolve(dirname(join(CORE, file)), specifier)) }
  })
}

/** The strongly connected components of more than one file (Tarjan), each sorted. */
function cycles(edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const found: string[][] = []
  const visit = (node: string) => {
    index.set(node, index.size)
    low.set(node, index.get(node) ?? 0)
    stack.push(node)
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0))
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node) ?? 0, index.get(next) ?? 0))
    }
    if (low.get(node) !== index.get(node)) return
    const component = stack.splice(stack.indexOf(node))
    if (component.length > 1) found.push(component.sort())
  }
  for (const node of edges.keys()) if (!index.has(node)) visit(node)
  return found
}

describe('the layers of @agentmarket/core', () => {
  const files = sourceFiles()

  test('behavior: every core file has a layer, and every file named in the list exists', () => {
    expect(files.length).toBeGreaterThan(50)
    expect(files.filter((file) => !layerOf(file))).toEqual([])
    expect(Object.keys(FILES).filter((file) => !existsSync(join(CORE, file)))).toEqual([])
  })

  test('behavior: a file imports only from its own layer or a layer below it', () => {
    const upward: string[] = []
    for (const file of files) {
      const rank = LAYERS.indexOf(layerOf(file) ?? 'hosts')
      for (const { specifier, target } of importsOf(file)) {
        const to = layerOf(target)
        if (to && LAYERS.indexOf(to) > rank)
          upward.push(`${file} (${layerOf(file)}) imports ${specifier} (${to})`)
      }
    }
    expect(upward).toEqual([])
  })

  test('behavior: no circle of imports among the files below the actions', () => {
    const below = new Set(files.filter((file) => ACYCLIC.includes(layerOf(file) ?? 'hosts')))
    const edges = new Map(
      [...below].map((file) => [
        file,
        importsOf(file)
          .map((edge) => edge.target)
          .filter((to) => below.has(to)),
      ]),
    )
    expect(cycles(edges)).toEqual([])
  })
})
