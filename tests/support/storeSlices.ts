import { readdirSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import ts from 'typescript'

// What the Store port is made of and which of its slices each action uses, read by TypeScript's checker from the
// core's source: the slices are the members of the `Store` intersection (ports/Store.ts); an action function "names"
// the slices of the store its parameters carry (`ActionContext<AgentStore & TaskStore>`) and "uses" those whose
// methods its body calls, plus those named by the functions it hands a store to.

const ROOT = resolve(import.meta.dir, '../..')
const CORE = join(ROOT, 'packages/core/src')
const ACTIONS = join(CORE, 'actions')

/** One function of `actions/` whose parameters carry a store. */
export type SliceUse = {
  /** Relative to packages/core/src, with the function's name and line: `actions/feed.ts feedActions:41`. */
  where: string
  file: string
  /** The slices its parameters name, in the port's order. */
  named: string[]
  /** The slices whose methods it calls or whose holders it calls, in the port's order. */
  used: string[]
  /** True when a parameter carries the whole `Store`. */
  whole: boolean
}

/** The port's slices with their methods, in the order `Store` lists them, and every action function's slices. */
export type SliceReport = { slices: { name: string; methods: string[] }[]; uses: SliceUse[] }

/** The core's non-test source files under a folder. */
function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

/** A program over the actions (and what they import) under the repository's compiler options. */
function actionsProgram(): ts.Program {
  const { config } = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile)
  const { options } = ts.parseJsonConfigFileContent(config, ts.sys, ROOT)
  return ts.createProgram([join(CORE, 'Marketplace.ts'), ...sourceFiles(ACTIONS)], options)
}

/** The declaration a type alias symbol names, through an import. */
function aliasDeclaration(
  checker: ts.TypeChecker,
  symbol: ts.Symbol | undefined,
): ts.Declaration | undefined {
  const target = symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
  return target?.declarations?.[0]
}

/** Whether a node is a function with a body of its own. */
function isFunction(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    ts.isFunctionDeclaration(node) ||
    ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) ||
    ts.isMethodDeclaration(node)
  )
}

/** A function's name as a reader finds it: its own, or the variable or property it is assigned to. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name && ts.isIdentifier(node.name)) return node.name.text
  const parent = node.parent
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && ts.isIdentifier(parent.name))
    return parent.name.text
  return '(anonymous)'
}

/** Reads the port's slices and every action function's named and used slices. */
export function storeSlices(): SliceReport {
  const program = actionsProgram()
  const checker = program.getTypeChecker()
  const port = program.getSourceFile(join(CORE, 'ports/Store.ts'))
  const store = port?.statements.find(
    (statement): statement is ts.TypeAliasDeclaration =>
      ts.isTypeAliasDeclaration(statement) && statement.name.text === 'Store',
  )
  if (!store || !ts.isIntersectionTypeNode(store.type))
    throw new Error('ports/Store.ts: no `Store` intersection')
  const sliceOf = new Map<ts.Declaration, string>()
  const slices = store.type.types.map((member) => {
    const name = member.getText()
    const declaration = ts.isTypeReferenceNode(member)
      ? aliasDeclaration(checker, checker.getSymbolAtLocation(member.typeName))
      : undefined
    if (!declaration) throw new Error(`ports/Store.ts: Store's member ${name} is not a named type`)
    sliceOf.set(declaration, name)
    return {
      name,
      methods: checker
        .getTypeFromTypeNode(member)
        .getProperties()
        .map((method) => method.name),
    }
  })
  // `Store` itself, when named, comes first.
  const order = (names: Set<string>) =>
    ['Store', ...slices.map(({ name }) => name)].filter((name) => names.has(name))

  /** The slices a type is made of (`AgentStore & TaskStore`); `Store` when it is the whole port. */
  const slicesOfType = (type: ts.Type): string[] => {
    const declaration = type.aliasSymbol?.declarations?.[0]
    if (declaration === store) return ['Store']
    const slice = declaration && sliceOf.get(declaration)
    if (slice) return [slice]
    return type.isIntersection() ? type.types.flatMap(slicesOfType) : []
  }
  /** The slices of the store a parameter carries: a context's `store`, or a store itself. */
  const carried = (type: ts.Type): string[] => {
    const held = type.getProperty('store')
    return held ? slicesOfType(checker.getTypeOfSymbol(held)) : slicesOfType(type)
  }
  /** The slice a method belongs to, when it is a port method. */
  const sliceOfMember = (symbol: ts.Symbol | undefined): string | undefined => {
    for (const declaration of symbol?.declarations ?? []) {
      let node: ts.Node | undefined = declaration
      while (node && !ts.isTypeAliasDeclaration(node)) node = node.parent
      const slice = node && sliceOf.get(node)
      if (slice) return slice
    }
    return undefined
  }
  const namedBy = (fn: ts.FunctionLikeDeclaration) =>
    fn.parameters.flatMap((parameter) => carried(checker.getTypeAtLocation(parameter)))

  const uses: SliceUse[] = []
  for (const file of sourceFiles(ACTIONS)) {
    const source = program.getSourceFile(file)
    if (!source) throw new Error(`${file} is not in the program`)
    const functions: ts.FunctionLikeDeclaration[] = []
    const collect = (node: ts.Node) => {
      if (isFunction(node) && namedBy(node).length > 0) functions.push(node)
      ts.forEachChild(node, collect)
    }
    collect(source)
    for (const fn of functions) {
      const named = namedBy(fn)
      const used = new Set<string>()
      const walk = (node: ts.Node) => {
        // A nested function that takes a store of its own is judged on its own; a call to it counts here.
        if (node !== fn && functions.includes(node as ts.FunctionLikeDeclaration)) return
        if (ts.isPropertyAccessExpression(node)) {
          const slice = sliceOfMember(checker.getSymbolAtLocation(node.name))
          if (slice) used.add(slice)
        }
        if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
          const signature = checker.getResolvedSignature(node)
          for (const parameter of signature?.parameters ?? [])
            for (const slice of carried(checker.getTypeOfSymbol(parameter))) used.add(slice)
        }
        ts.forEachChild(node, walk)
      }
      if (fn.body) walk(fn.body)
      const line = source.getLineAndCharacterOfPosition(fn.getStart(source)).line + 1
      uses.push({
        where: `${relative(CORE, file)} ${nameOf(fn)}:${line}`,
        file: relative(CORE, file),
        named: order(new Set(named)),
        used: order(used),
        whole: named.includes('Store'),
      })
    }
  }
  return { slices, uses }
}
