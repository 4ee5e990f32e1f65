/** How deep an example goes into nested objects and arrays before it stops with an empty value. */
const MAX_DEPTH = 6
/** How many properties an object example shows when the schema requires none. */
const MAX_OPTIONAL_PROPERTIES = 8

type Schema = Record<string, unknown>

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The schema a local `$ref` (`#/$defs/name`, `#/definitions/name`) points to in `root`, else undefined. */
function resolveRef(ref: unknown, root: Schema): Schema | undefined {
  if (typeof ref !== 'string' || !ref.startsWith('#/')) return undefined
  let node: unknown = root
  for (const part of ref.slice(2).split('/')) {
    const key = part.replaceAll('~1', '/').replaceAll('~0', '~')
    node = isSchema(node) ? node[key] : undefined
  }
  return isSchema(node) ? node : undefined
}

/** The first type a schema names, null last: `["string", "null"]` is a string. */
function typeOf(schema: Schema): string | undefined {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  const named = types.filter((type): type is string => typeof type === 'string')
  if (named.length) return named.find((type) => type !== 'null') ?? named[0]
  if (isSchema(schema.properties)) return 'object'
  if (isSchema(schema.items)) return 'array'
  return undefined
}

/** A value the schema states itself: its first example, its default, its const or its first enum member. */
function statedValue(schema: Schema): { value: unknown } | undefined {
  if (Array.isArray(schema.examples) && schema.examples.length) return { value: schema.examples[0] }
  if ('default' in schema) return { value: schema.default }
  if ('const' in schema) return { value: schema.const }
  if (Array.isArray(schema.enum) && schema.enum.length) return { value: schema.enum[0] }
  return undefined
}

/** A number inside the schema's bounds: its minimum, just above an exclusive one, else 1 (capped by a maximum). */
function numberExample(schema: Schema, integer: boolean): number {
  const { minimum, exclusiveMinimum, maximum } = schema
  let value = 1
  if (typeof minimum === 'number') value = minimum
  else if (typeof exclusiveMinimum === 'number') value = exclusiveMinimum + (integer ? 1 : 0.5)
  if (typeof maximum === 'number' && value > maximum) value = maximum
  return integer ? Math.ceil(value) : value
}

const STRING_FORMATS: Record<string, string> = {
  date: '2026-01-31',
  'date-time': '2026-01-31T12:00:00Z',
  time: '12:00:00Z',
  email: 'name@example.com',
  uri: 'https://example.com',
  url: 'https://example.com',
  uuid: '123e4567-e89b-12d3-a456-426614174000',
}

/** A placeholder string: one of a known format, else the property's name in angle brackets. */
function stringExample(schema: Schema, name: string): string {
  const format = typeof schema.format === 'string' ? STRING_FORMATS[schema.format] : undefined
  return format ?? `<${name}>`
}

/** The properties an object example fills: the required ones, or (none required) the first few. */
function propertiesToFill(schema: Schema): [string, Schema][] {
  const properties = isSchema(schema.properties) ? Object.entries(schema.properties) : []
  const schemas = properties.filter((entry): entry is [string, Schema] => isSchema(entry[1]))
  const required = Array.isArray(schema.required)
    ? schema.required.filter((key) => typeof key === 'string')
    : []
  if (required.length === 0) return schemas.slice(0, MAX_OPTIONAL_PROPERTIES)
  return required.map((key): [string, Schema] => [key, schemas.find(([name]) => name === key)?.[1] ?? {}])
}

/** An example value of `schema`, `depth` levels down from the root; `name` is the property it is the value of. */
function exampleOf(schema: Schema, root: Schema, name: string, depth: number): unknown {
  if (depth > MAX_DEPTH) return null
  const referenced = resolveRef(schema.$ref, root)
  if (referenced) return exampleOf({ ...referenced, ...schema, $ref: undefined }, root, name, depth + 1)
  const stated = statedValue(schema)
  if (stated) return stated.value
  const branch = [schema.oneOf, schema.anyOf].find(Array.isArray)?.find(isSchema)
  if (branch) return exampleOf(branch, root, name, depth + 1)
  if (Array.isArray(schema.allOf)) {
    const parts = schema.allOf.filter(isSchema).map((part) => exampleOf(part, root, name, depth + 1))
    if (parts.every(isSchema)) return Object.assign({}, ...parts)
  }
  switch (typeOf(schema)) {
    case 'object':
      return Object.fromEntries(
        propertiesToFill(schema).map(([key, property]) => [key, exampleOf(property, root, key, depth + 1)]),
      )
    case 'array':
      return isSchema(schema.items) ? [exampleOf(schema.items, root, name, depth + 1)] : []
    case 'string':
      return stringExample(schema, name)
    case 'integer':
      return numberExample(schema, true)
    case 'number':
      return numberExample(schema, false)
    case 'boolean':
      return true
    default:
      return null
  }
}

/**
 * An example `params` object for a skill whose input is the JSON Schema `schema` (2020-12): the values the schema
 * states (`examples`, `default`, `const`, `enum`) first, else placeholders by type for its required properties (all of
 * them, up to a few, when none is required), nested at most a few levels. Anything else than an object schema: `{}`.
 * @example exampleParams({ type: 'object', required: ['topic'], properties: { topic: { type: 'string' } } }) // {topic: '<topic>'}
 */
export function exampleParams(schema: unknown): Record<string, unknown> {
  if (!isSchema(schema)) return {}
  const example = exampleOf(schema, schema, 'value', 0)
  return isSchema(example) ? example : {}
}
