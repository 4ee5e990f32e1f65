import { dereference, Validator, format as validatorFormats } from '@cfworker/json-schema'
import { FORMAT_CHECKERS } from './SchemaFormats.ts'

// What checking an order against a seller's input schema may cost, bounded before the schema is taken.
//
// A step is one subschema applied to one value (the validator's unit of work), plus one for each 16 things the
// subschema lists (properties, required names, 16 bytes of enum or const). The validator applies a subschema to
// one value through $ref, allOf, anyOf, oneOf, not, if/then/else and dependentSchemas (in place), and to the
// value's fields and items through properties, additionalProperties, items, ... (one level down). References make
// the schema a graph: a chain of N definitions each using the next twice is 1.5 KB and 2^N steps. So the cost is
// counted on the graph with multiplicity, per nesting level of the value, without expanding it, and refused over
// budget; orders are then priced before they are checked.

/** The market's budget for checking orders against a skill's input schema, in steps (see SECURITY.md). */
export const SCHEMA_BUDGET = {
  /** The most steps one value of an order (at any level, or a property name) may cost. */
  valueSteps: 64,
  /** The most steps one order's params may cost in all. */
  orderSteps: 16_384,
  /** The most items an array checked for uniqueItems may have (the validator compares them pairwise). */
  uniqueItems: 128,
} as const

/** How many levels deep params nest at most (the params object is level 1): Task.ts's MAX_PARAMS_DEPTH. */
const PARAMS_DEPTH = 32

/** The name a checked format goes by in the validator's table: never one of the validator's own checkers. */
const FORMAT_PREFIX = 'agentmarket:'
for (const [name, check] of Object.entries(FORMAT_CHECKERS)) validatorFormats[FORMAT_PREFIX + name] = check

type Schema = Record<string, unknown> | boolean

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** Keywords whose value is applied to the same value the schema is (in place), by their value's shape. */
const IN_PLACE = {
  one: ['not', 'if', 'then', 'else'],
  list: ['allOf', 'anyOf', 'oneOf'],
  map: ['dependentSchemas'],
}
/** Keywords whose subschemas apply to fields or items (one level down), by their value's shape. */
const BELOW = {
  one: [
    'additionalProperties',
    'unevaluatedProperties',
    'propertyNames',
    'items',
    'contains',
    'unevaluatedItems',
  ],
  list: ['prefixItems'],
  map: ['properties', '$defs'],
}

/** Every subschema written in `schema` (not through $ref), with the keys leading to it. */
function childSchemas(schema: Record<string, unknown>): [string[], Schema][] {
  const found: [string[], Schema][] = []
  const take = (path: string[], value: unknown) => {
    if (isObject(value) || typeof value === 'boolean') found.push([path, value])
  }
  for (const key of [...IN_PLACE.one, ...BELOW.one]) take([key], schema[key])
  for (const key of [...IN_PLACE.list, ...BELOW.list, 'items']) {
    const list = schema[key]
    if (Array.isArray(list)) for (const [index, sub] of list.entries()) take([key, String(index)], sub)
  }
  for (const key of [...IN_PLACE.map, ...BELOW.map]) {
    const map = schema[key]
    if (isObject(map)) for (const [name, sub] of Object.entries(map)) take([key, name], sub)
  }
  return found
}

/** `schema` as the validator runs it: formats under names only our linear checkers answer, uniqueItems gated. */
function forValidator(schema: Record<string, unknown>): Record<string, unknown> {
  const mapped = (sub: unknown) => (isObject(sub) ? forValidator(sub) : sub)
  const copy: Record<string, unknown> = { ...schema }
  for (const key of [...IN_PLACE.one, ...BELOW.one])
    if (isObject(schema[key])) copy[key] = mapped(schema[key])
  for (const key of [...IN_PLACE.list, ...BELOW.list, 'items'])
    if (Array.isArray(schema[key])) copy[key] = (schema[key] as unknown[]).map(mapped)
  for (const key of [...IN_PLACE.map, ...BELOW.map]) {
    const map = schema[key]
    if (isObject(map))
      copy[key] = Object.fromEntries(Object.entries(map).map(([name, sub]) => [name, mapped(sub)]))
  }
  if (typeof schema.format === 'string') copy.format = FORMAT_PREFIX + schema.format
  if (schema.uniqueItems === true) {
    // The validator compares every pair of items, even past maxItems: uniqueness is checked up to the gate only.
    const limit = typeof schema.maxItems === 'number' ? schema.maxItems : Number.POSITIVE_INFINITY
    const gate = Math.min(limit, SCHEMA_BUDGET.uniqueItems)
    delete copy.uniqueItems
    // biome-ignore lint/suspicious/noThenProperty: the JSON Schema keyword; this object is never awaited
    const check = { if: { maxItems: gate }, then: { uniqueItems: true }, else: { maxItems: gate } }
    copy.allOf = [...(Array.isArray(copy.allOf) ? copy.allOf : []), check]
  }
  return copy
}

/** What the validator's messages call a format written as `name` in the schema it runs. */
export const formatName = (name: unknown) => String(name).replace(FORMAT_PREFIX, '')

/** A problem of a schema's cost: where (keys from the schema's root) and what. */
export type CostProblem = { path: string[]; detail: string }

/** A schema ready to check orders: the validator, and the most steps one value at each level may cost. */
export type CostedSchema = { validator: Validator; runs: Record<string, unknown>; stepsAtLevel: number[] }

class Refused extends Error {
  constructor(readonly problem: CostProblem) {
    super(problem.detail)
  }
}

/** The steps one value at each level can cost under `root` (the schema the validator runs), or a problem. */
function stepsAtLevels(root: Record<string, unknown>): number[] {
  const lookup = dereference(root as never)
  const paths = new Map<object, string[]>()
  const pending: [string[], Schema][] = [[[], root]]
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [path, schema] = next
    if (typeof schema === 'boolean' || paths.has(schema)) continue
    paths.set(schema, path)
    for (const [below, sub] of childSchemas(schema)) pending.push([[...path, ...below], sub])
  }
  const where = (schema: object) => paths.get(schema) ?? []

  const inPlace = (schema: Record<string, unknown>): Schema[] => {
    const found: Schema[] = []
    if (typeof schema.$ref === 'string') {
      const target = lookup[(schema.__absolute_ref__ as string | undefined) ?? schema.$ref]
      if (target === undefined)
        throw new Refused({ path: [...where(schema), '$ref'], detail: 'points at nothing in this schema' })
      found.push(target as Schema)
    }
    for (const [path, sub] of childSchemas(schema))
      if ([...IN_PLACE.one, ...IN_PLACE.list, ...IN_PLACE.map].includes(path[0] as string)) found.push(sub)
    return found
  }

  /** The subschemas one field or item gets, for each kind of field or item (a named property, any other, ...). */
  const below = (schema: Record<string, unknown>): Schema[][] => {
    const some = (...keys: string[]) =>
      keys.map((key) => schema[key]).filter((sub): sub is Schema => isObject(sub) || typeof sub === 'boolean')
    const properties = isObject(schema.properties) ? (Object.values(schema.properties) as Schema[]) : []
    const prefix = [schema.prefixItems, schema.items].flatMap((list) => (Array.isArray(list) ? list : []))
    return [
      ...properties.map((sub) => [sub, ...some('unevaluatedProperties')]),
      some('additionalProperties', 'unevaluatedProperties'),
      some('propertyNames'),
      ...(prefix as Schema[]).map((sub) => [sub, ...some('contains', 'unevaluatedItems')]),
      some('items', 'contains', 'unevaluatedItems'),
    ]
  }

  const ids = new Map<object, number>()
  const memo = new Map<string, number>()
  const open = new Set<string>()
  /** The most steps a value `level` levels below one `schema` applies to can cost. */
  const steps = (schema: Schema, level: number, chain: number): number => {
    if (typeof schema === 'boolean') return level === 0 ? 1 : 0
    if (!ids.has(schema)) ids.set(schema, ids.size)
    const key = `${ids.get(schema)}:${level}`
    const known = memo.get(key)
    if (known !== undefined) return known
    if (open.has(key))
      throw new Refused({
        path: where(schema),
        detail:
          'applies itself to the same value again ($ref loop that does not go down into a field or item)',
      })
    if (chain > SCHEMA_BUDGET.valueSteps)
      throw new Refused({
        path: where(schema),
        detail: `applies more than ${SCHEMA_BUDGET.valueSteps} subschemas one inside another to one value ($ref, allOf, anyOf, oneOf, not, if/then/else), over the budget of ${SCHEMA_BUDGET.valueSteps} steps a value; inline the chain of references`,
      })
    open.add(key)
    let total = level === 0 ? weight(schema) : 0
    if (level > 0)
      total += Math.max(
        0,
        ...below(schema).map((kind) => kind.reduce((sum, sub) => sum + steps(sub, level - 1, 0), 0)),
      )
    for (const sub of inPlace(schema)) total += steps(sub, level, chain + 1)
    open.delete(key)
    memo.set(key, total)
    return total
  }
  return Array.from({ length: PARAMS_DEPTH }, (_, level) => steps(root, level, 0))
}

/** One step for the subschema, one more for each 16 things it lists (names, 16 bytes of enum or const). */
function weight(schema: Record<string, unknown>): number {
  const count = (value: unknown) =>
    Array.isArray(value) ? value.length : isObject(value) ? Object.keys(value).length : 0
  let listed = count(schema.properties) + count(schema.required) + count(schema.dependentSchemas)
  if (isObject(schema.dependentRequired))
    for (const names of Object.values(schema.dependentRequired)) listed += count(names)
  for (const key of ['enum', 'const'])
    if (schema[key] !== undefined) listed += Math.ceil(JSON.stringify(schema[key]).length / 16)
  return 1 + Math.ceil(listed / 16)
}

const overBudget = (steps: number, level: number) =>
  `checking one value${level ? ` at level ${level} of the params` : ''} would cost ${steps > 1e15 ? 'over 10^15' : steps.toLocaleString('en-US')} steps, over the budget of ${SCHEMA_BUDGET.valueSteps}: each $ref, allOf, anyOf and oneOf entry applied to a value is one step, and references that use a definition more than once multiply; inline fewer references or write fewer alternatives`

/** `schema` compiled to check orders within the budget, or the problem that keeps it from being taken. */
export function costedSchema(schema: Record<string, unknown>): CostedSchema | CostProblem {
  const runs = forValidator(schema)
  try {
    const stepsAtLevel = stepsAtLevels(runs)
    const worst = Math.max(...stepsAtLevel)
    if (worst > SCHEMA_BUDGET.valueSteps)
      return { path: [], detail: overBudget(worst, stepsAtLevel.indexOf(worst)) }
    return { validator: new Validator(runs as never, '2020-12', false), runs, stepsAtLevel }
  } catch (error) {
    if (error instanceof Refused) return error.problem
    throw error
  }
}

/**
 * The most steps checking `params` can cost: each value (and property name) at the most its level can cost.
 * Linear in the size of `params`.
 */
export function orderSteps(costed: CostedSchema, params: Record<string, unknown>): number {
  let total = 0
  const pending: [unknown, number][] = [[params, 0]]
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, level] = next
    total += costed.stepsAtLevel[level] ?? Number.POSITIVE_INFINITY
    if (typeof value !== 'object' || value === null) continue
    const named = !Array.isArray(value)
    for (const child of Object.values(value)) {
      if (named) total += costed.stepsAtLevel[level + 1] ?? Number.POSITIVE_INFINITY
      pending.push([child, level + 1])
    }
  }
  return total
}
