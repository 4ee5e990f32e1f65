import type { OutputUnit } from '@cfworker/json-schema'
import * as v from 'valibot'
import type { FieldProblem } from './errors.ts'
import {
  type CostedSchema,
  type CostProblem,
  costedSchema,
  formatName,
  orderSteps,
  SCHEMA_BUDGET,
} from './SchemaCost.ts'
import { FORMAT_CHECKERS, UNCHECKED_FORMATS } from './SchemaFormats.ts'
import { boundedJsonObject, closestName } from './Validation.ts'

/** A skill's `input`: a JSON Schema (2020-12) of its order's `params`, as the seller declared it. */
export type SkillInputSchema = Record<string, unknown>

/** How large a skill's input schema may be: its UTF-8 JSON bytes and nesting depth. */
export const SKILL_INPUT_LIMITS = { bytes: 8 * 1024, depth: 16 } as const

/** The JSON Schema dialect skill inputs are written in. */
export const SKILL_INPUT_DIALECT = 'https://json-schema.org/draft/2020-12/schema'

/** What a keyword's value is: a subschema, a map or list of them, or a value of its own kind. */
type KeywordKind =
  | 'schema'
  | 'schemaMap'
  | 'schemaList'
  | 'count'
  | 'number'
  | 'boolean'
  | 'text'
  | 'type'
  | 'names'
  | 'nameLists'
  | 'array'
  | 'any'

/**
 * The keywords a skill input may use, by what their value is. Left out on purpose: `pattern` and `patternProperties`
 * (a seller's regular expression would run on the market's CPU over every order: a backtracking one stalls it), and
 * `$id`, `$anchor`, `$dynamicRef` and remote `$ref`s (the schema is one self-contained document). What checking an
 * order may cost is bounded too (SchemaCost.ts): formats the market cannot check in linear time, uniqueItems without a
 * small maxItems, and schemas whose references or alternatives multiply the work are refused.
 */
const KEYWORDS: Readonly<Record<string, KeywordKind>> = {
  $schema: 'text',
  $ref: 'text',
  $defs: 'schemaMap',
  $comment: 'text',
  title: 'text',
  description: 'text',
  default: 'any',
  examples: 'array',
  deprecated: 'boolean',
  readOnly: 'boolean',
  writeOnly: 'boolean',
  type: 'type',
  enum: 'array',
  const: 'any',
  format: 'text',
  properties: 'schemaMap',
  additionalProperties: 'schema',
  unevaluatedProperties: 'schema',
  propertyNames: 'schema',
  dependentSchemas: 'schemaMap',
  items: 'schema',
  prefixItems: 'schemaList',
  unevaluatedItems: 'schema',
  contains: 'schema',
  allOf: 'schemaList',
  anyOf: 'schemaList',
  oneOf: 'schemaList',
  not: 'schema',
  if: 'schema',
  // biome-ignore lint/suspicious/noThenProperty: the JSON Schema keyword; this table is never awaited
  then: 'schema',
  else: 'schema',
  required: 'names',
  dependentRequired: 'nameLists',
  multipleOf: 'number',
  minimum: 'number',
  maximum: 'number',
  exclusiveMinimum: 'number',
  exclusiveMaximum: 'number',
  minLength: 'count',
  maxLength: 'count',
  minItems: 'count',
  maxItems: 'count',
  minContains: 'count',
  maxContains: 'count',
  minProperties: 'count',
  maxProperties: 'count',
  uniqueItems: 'boolean',
}

const TYPES = ['array', 'boolean', 'integer', 'null', 'number', 'object', 'string']
const KNOWN = Object.keys(KEYWORDS)

/** One problem of a schema: where (keys from the schema's root) and what. */
type SchemaProblem = { path: string[]; detail: string }

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** What is wrong with a keyword's value for its kind, or null. */
function valueProblem(kind: KeywordKind, value: unknown): string | null {
  const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0
  const names = (list: unknown) => Array.isArray(list) && list.every((name) => typeof name === 'string')
  switch (kind) {
    case 'schema':
      return isObject(value) || typeof value === 'boolean'
        ? null
        : 'must be a schema (an object or a boolean)'
    case 'schemaMap':
      return isObject(value) ? null : 'must be an object of schemas'
    case 'schemaList':
      return Array.isArray(value) && value.length > 0 ? null : 'must be a non-empty array of schemas'
    case 'count':
      return count(value) ? null : 'must be a whole number, 0 or more'
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? null : 'must be a number'
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be true or false'
    case 'text':
      return typeof value === 'string' ? null : 'must be a string'
    case 'type': {
      const list = Array.isArray(value) ? value : [value]
      return list.length > 0 && list.every((type) => TYPES.includes(type as string))
        ? null
        : `must be one of ${TYPES.join(', ')}, or an array of them`
    }
    case 'names':
      return names(value) ? null : 'must be an array of property names'
    case 'nameLists':
      return isObject(value) && Object.values(value).every(names) ? null : 'must map names to arrays of names'
    case 'array':
      return Array.isArray(value) ? null : 'must be an array'
    default:
      return null
  }
}

/** What is wrong with one keyword of a schema (not its subschemas), or null. */
function keywordProblem(keyword: string, value: unknown): string | null {
  const kind = KEYWORDS[keyword]
  if (keyword === 'pattern' || keyword === 'patternProperties')
    return 'is not accepted: a regular expression would run on every order; use enum, format or maxLength instead'
  if (!kind) {
    const near = closestName(keyword, KNOWN)
    return `is not a JSON Schema keyword skill inputs take${near ? `; did you mean "${near}"?` : ''}`
  }
  if (keyword === '$ref' && typeof value === 'string' && !value.startsWith('#'))
    return 'must point inside this schema (start with #, e.g. #/$defs/name)'
  if (keyword === '$schema' && value !== SKILL_INPUT_DIALECT) return `must be "${SKILL_INPUT_DIALECT}"`
  if (keyword === 'format' && UNCHECKED_FORMATS.includes(value as string))
    return `"${value}" is not checked here; use one of ${Object.keys(FORMAT_CHECKERS).join(', ')}, or enum and maxLength`
  return valueProblem(kind, value)
}

/** The subschemas of a keyword's value, each with its path below the keyword. */
function subschemas(keyword: string, value: unknown): [string[], unknown][] {
  const kind = KEYWORDS[keyword]
  if (kind === 'schema') return [[[], value]]
  if (kind === 'schemaMap' && isObject(value)) return Object.entries(value).map(([key, sub]) => [[key], sub])
  if (kind === 'schemaList' && Array.isArray(value)) return value.map((sub, index) => [[String(index)], sub])
  return []
}

/** What is wrong with a schema's uniqueItems: the validator compares items pairwise, so arrays must be short. */
function uniqueItemsProblem(schema: Record<string, unknown>): string | null {
  if (schema.uniqueItems !== true) return null
  const limit = schema.maxItems
  return typeof limit === 'number' && limit <= SCHEMA_BUDGET.uniqueItems
    ? null
    : `needs "maxItems" of at most ${SCHEMA_BUDGET.uniqueItems} beside it: items are compared pairwise`
}

/** The first problem of a schema and its subschemas (a loop, not recursion), or null when it is one we take. */
function schemaProblem(root: Record<string, unknown>): SchemaProblem | null {
  if (root.type !== 'object')
    return { path: ['type'], detail: 'must be "object": params are always a JSON object' }
  const pending: { schema: unknown; path: string[] }[] = [{ schema: root, path: [] }]
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (typeof next.schema === 'boolean') continue
    if (!isObject(next.schema))
      return { path: next.path, detail: 'must be a schema (an object or a boolean)' }
    const unique = uniqueItemsProblem(next.schema)
    if (unique) return { path: [...next.path, 'uniqueItems'], detail: unique }
    for (const [keyword, value] of Object.entries(next.schema)) {
      const detail = keywordProblem(keyword, value)
      if (detail) return { path: [...next.path, keyword], detail }
      for (const [below, sub] of subschemas(keyword, value))
        pending.push({ schema: sub, path: [...next.path, keyword, ...below] })
    }
  }
  return null
}

/**
 * Compiled schemas per schema text, least recently used first (a Map keeps insertion order; a use moves its entry to
 * the end): skills are few and their schemas change rarely, so compiled ones are kept.
 */
const compiled = new Map<string, CostedSchema | CostProblem>()
/**
 * The most compiled schemas kept (SECURITY.md "Input"). Past it the least recently used one is dropped, not all of
 * them: clearing the whole map let anyone publishing 1,000 new schemas make every seller's next order compile again.
 */
export const MAX_COMPILED_SCHEMAS = 1000

/** `schema` compiled with its cost, or why it is over the budget (a schema stored before the budget may be). */
function costedOf(schema: SkillInputSchema): CostedSchema | CostProblem {
  const key = JSON.stringify(schema)
  const kept = compiled.get(key)
  if (kept) {
    compiled.delete(key)
    compiled.set(key, kept)
    return kept
  }
  const costed = costedSchema(schema)
  const oldest = compiled.size >= MAX_COMPILED_SCHEMAS ? compiled.keys().next() : null
  if (oldest && !oldest.done) compiled.delete(oldest.value)
  compiled.set(key, costed)
  return costed
}

/** How many compiled schemas are kept, and whether `schema`'s is: what tests of the bound read. */
export const compiledSchemas = {
  size: (): number => compiled.size,
  has: (schema: SkillInputSchema): boolean => compiled.has(JSON.stringify(schema)),
}

/** A schema a seller may declare as a skill's `input`: bounded, self-contained, without regular expressions. */
export const SkillInputSchemaInput = v.pipe(
  boundedJsonObject(SKILL_INPUT_LIMITS.bytes, SKILL_INPUT_LIMITS.depth),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return
    const problem = schemaProblem(dataset.value)
    const costed = problem ? null : costedOf(dataset.value)
    const found = problem ?? (costed && 'detail' in costed ? costed : null)
    if (!found) return
    const [first, ...rest] = found.path.map(
      (key): v.UnknownPathItem => ({ type: 'unknown', origin: 'value', input: null, key, value: null }),
    )
    addIssue({ message: found.detail, ...(first ? { path: [first, ...rest] } : {}) })
  }),
  v.description(
    'A JSON Schema (2020-12) of the params an order of this skill takes: "type": "object" at its root, at most 8 KiB, no pattern or patternProperties, $ref only inside it, uniqueItems only with maxItems of at most 128, checking one value costing at most 64 steps (SECURITY.md). Orders are checked against it (400 invalid_params).',
  ),
)

/** Keywords whose failure only sums up failures found deeper, which are reported instead. */
const SUMMARIES = new Set([
  'properties',
  'items',
  'prefixItems',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'allOf',
  '$ref',
  'dependentSchemas',
  'then',
  'else',
  'contains',
  'if',
])

/** The value a schema has at a `#/a/b` location, for messages that quote it. */
function atLocation(schema: SkillInputSchema, location: string): unknown {
  const keys = location.replace(/^#\/?/, '').split('/').filter(Boolean)
  let value: unknown = schema
  for (const key of keys)
    value =
      isObject(value) || Array.isArray(value)
        ? (value as Record<string, unknown>)[key.replaceAll('~1', '/').replaceAll('~0', '~')]
        : undefined
  return value
}

const withArticle = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`)

/** One failure in plain words, quoting the rule from the schema itself. */
function plainDetail(unit: OutputUnit, schema: SkillInputSchema): string {
  const rule = atLocation(schema, unit.keywordLocation)
  const said: Record<string, () => string> = {
    type: () => `must be ${(Array.isArray(rule) ? rule : [rule]).map(String).map(withArticle).join(' or ')}`,
    enum: () => `must be one of ${JSON.stringify(rule)}`,
    const: () => `must be ${JSON.stringify(rule)}`,
    minimum: () => `must be at least ${rule}`,
    maximum: () => `must be at most ${rule}`,
    exclusiveMinimum: () => `must be greater than ${rule}`,
    exclusiveMaximum: () => `must be less than ${rule}`,
    multipleOf: () => `must be a multiple of ${rule}`,
    minLength: () => `must have at least ${rule} characters`,
    maxLength: () => `must have at most ${rule} characters`,
    minItems: () => `must have at least ${rule} items`,
    maxItems: () => `must have at most ${rule} items`,
    uniqueItems: () => 'must not repeat an item',
    minProperties: () => `must have at least ${rule} fields`,
    maxProperties: () => `must have at most ${rule} fields`,
    format: () => `must be in the "${formatName(rule)}" format`,
    false: () => 'is not a field this skill takes',
    not: () => 'must not match the excluded form',
  }
  return said[unit.keyword]?.() ?? unit.error.replace(/^Instance /, 'the value ')
}

/** The JSON Pointer of a failure below `/params`; a missing required property points at the property itself. */
function pointerOf(unit: OutputUnit): string {
  const below = unit.instanceLocation.replace(/^#/, '')
  const missing = unit.keyword === 'required' ? /property "(.+)"/.exec(unit.error)?.[1] : undefined
  const escaped = missing?.replaceAll('~', '~0').replaceAll('/', '~1')
  return `/params${below}${escaped === undefined ? '' : `/${escaped}`}`
}

/** Why `params` are not checked: the schema is over the budget, or the order would cost more than it allows. */
function overBudget(
  costed: CostedSchema | CostProblem,
  params: Record<string, unknown>,
): FieldProblem | null {
  if ('detail' in costed)
    return {
      pointer: '/params',
      detail: `cannot be checked: this skill's input schema was published before the market's checking budget and is over it (${costed.detail}); its seller must publish a simpler one`,
    }
  const steps = orderSteps(costed, params)
  if (steps <= SCHEMA_BUDGET.orderSteps) return null
  const most = Math.max(...costed.stepsAtLevel.slice(1))
  return {
    pointer: '/params',
    detail: `would cost ${steps.toLocaleString('en-US')} steps to check against this skill's input schema, over the budget of ${SCHEMA_BUDGET.orderSteps.toLocaleString('en-US')}: send fewer values (each field, item and property name costs up to ${most} steps here)`,
  }
}

/**
 * How `params` break a skill's input schema, as field problems pointing into `/params` in plain words (at most 20);
 * empty when they fit it. Params whose check would cost more than the budget are refused unchecked.
 */
export function paramsProblems(schema: SkillInputSchema, params: Record<string, unknown>): FieldProblem[] {
  const costed = costedOf(schema)
  const refused = overBudget(costed, params)
  if (refused) return [refused]
  const { valid, errors } = (costed as CostedSchema).validator.validate(params)
  if (valid) return []
  const leaves = errors.filter((unit) => !SUMMARIES.has(unit.keyword))
  const problems: FieldProblem[] = []
  const seen = new Set<string>()
  // Plain words quote the schema (an enum can be 8 KiB): only for the 20 problems answered.
  for (const unit of leaves.length ? leaves : errors) {
    const pointer = pointerOf(unit)
    const detail =
      unit.keyword === 'required' ? 'is required' : plainDetail(unit, (costed as CostedSchema).runs)
    const key = `${pointer} ${detail}`
    if (seen.has(key)) continue
    seen.add(key)
    problems.push({ pointer, detail })
    if (problems.length === 20) break
  }
  return problems
}
