import { describe, expect, test } from 'bun:test'
import * as v from 'valibot'
import { memoryStore } from './adapters/memoryStore.ts'
import { defaultConfig } from './Config.ts'
import { InvalidInputError } from './errors.ts'
import { Marketplace } from './Marketplace.ts'
import { SkillInput } from './Skill.ts'
import { compiledSchemas, MAX_COMPILED_SCHEMAS, paramsProblems } from './SkillInputSchema.ts'

const INPUT = {
  type: 'object',
  properties: {
    topic: { type: 'string', minLength: 3, maxLength: 50 },
    depth: { type: 'integer', minimum: 1, maximum: 5 },
    format: { enum: ['pdf', 'md'] },
    sources: { type: 'array', items: { type: 'string', format: 'uri' }, maxItems: 3 },
  },
  required: ['topic'],
  additionalProperties: false,
}

/** The field problems parsing `skill` gives, or [] when it parses. */
function skillProblems(skill: unknown) {
  const result = v.safeParse(SkillInput, skill)
  return result.success
    ? []
    : result.issues.map((issue) => [issue.path?.map((item) => item.key).join('/'), issue.message])
}

describe('skill input schemas', () => {
  test('behavior: a bounded, self-contained 2020-12 schema is kept on the skill', () => {
    const skill = v.parse(SkillInput, { name: 'Research', type: 'purchasable', price: 1, input: INPUT })
    expect(skill.input).toEqual(INPUT)
    expect(v.parse(SkillInput, 'ping').input).toBeNull()
  })

  test('error: schemas a seller may not declare are refused at the keyword, in plain words', () => {
    const cases: [unknown, string, RegExp][] = [
      [{ type: 'string' }, 'input/type', /must be "object"/],
      [
        { type: 'object', properties: { q: { type: 'string', pattern: '(a+)+$' } } },
        'input/properties/q/pattern',
        /regular expression/,
      ],
      [{ type: 'object', patternProperties: {} }, 'input/patternProperties', /regular expression/],
      [{ type: 'object', requred: ['q'] }, 'input/requred', /did you mean "required"/],
      [{ type: 'object', $ref: 'https://evil.example/schema' }, 'input/$ref', /inside this schema/],
      [{ type: 'object', $ref: '#/$defs/missing' }, 'input/$ref', /points at nothing/],
      [{ type: 'object', properties: { q: { type: 'text' } } }, 'input/properties/q/type', /must be one of/],
      [
        { type: 'object', properties: { q: { maxLength: -1 } } },
        'input/properties/q/maxLength',
        /whole number/,
      ],
      [{ type: 'object', description: 'x'.repeat(9000) }, 'input', /bytes/],
    ]
    for (const [input, path, message] of cases) {
      const problems = skillProblems({ name: 'S', input })
      expect(problems[0]?.[0], path).toBe(path)
      expect(problems[0]?.[1], path).toMatch(message)
    }
  })

  test('behavior: params are checked against the schema, each problem pointing into /params in plain words', () => {
    expect(paramsProblems(INPUT, { topic: 'solar panels', depth: 2, format: 'md' })).toEqual([])
    expect(
      paramsProblems(INPUT, { depth: 9, format: 'doc', extra: 1, sources: ['a', 'b', 'c', 'd'] }),
    ).toEqual([
      { pointer: '/params/topic', detail: 'is required' },
      { pointer: '/params/depth', detail: 'must be at most 5' },
      { pointer: '/params/format', detail: 'must be one of ["pdf","md"]' },
      { pointer: '/params/sources', detail: 'must have at most 3 items' },
      { pointer: '/params/sources/0', detail: 'must be in the "uri" format' },
      { pointer: '/params/sources/1', detail: 'must be in the "uri" format' },
      { pointer: '/params/sources/2', detail: 'must be in the "uri" format' },
      { pointer: '/params/sources/3', detail: 'must be in the "uri" format' },
      { pointer: '/params/extra', detail: 'is not a field this skill takes' },
    ])
    expect(paramsProblems(INPUT, { topic: 7 })).toEqual([
      { pointer: '/params/topic', detail: 'must be a string' },
    ])
  })

  test('error: an order whose params break the schema is 400 invalid_params and creates nothing', async () => {
    const store = memoryStore()
    const market = Marketplace.create({ store, config: defaultConfig('http://market.test') })
    await market.registerAgent({ name: 'seller', skills: [{ name: 'Research', input: INPUT }] })
    const refused = await market
      .createTask('seller', { skill: 'research', params: { topic: 'x' } })
      .catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(InvalidInputError)
    expect((refused as InvalidInputError).code).toBe('invalid_params')
    expect((refused as InvalidInputError).errors).toEqual([
      { pointer: '/params/topic', detail: 'must have at least 3 characters' },
    ])
    const noParams = await market.createTask('seller', { skill: 'research' }).catch((error: unknown) => error)
    expect((noParams as InvalidInputError).errors?.[0]?.pointer).toBe('/params/topic')
    const taken = await market.createTask('seller', { skill: 'research', params: { topic: 'solar' } })
    expect(taken.status).toBe(201)
    expect((await market.listTasks('seller', undefined, { status: 'all' })).total).toBe(1)
  })

  test('error: an unknown skill names the skills the agent sells and the closest one', async () => {
    const market = Marketplace.create({ store: memoryStore(), config: defaultConfig('http://market.test') })
    await market.registerAgent({ name: 'scout', skills: ['ping', { name: 'Deep Research' }] })
    const refused = (await market
      .createTask('scout', { skill: 'deep-search' })
      .catch((error: unknown) => error)) as InvalidInputError
    expect(refused.code).toBe('unknown_skill')
    expect(refused.message).toContain('it sells "ping", "deep-research"')
  })
})

describe('compiled validators (SECURITY.md "Input": at most 1,000 kept)', () => {
  /** A small schema of its own for each `label`: each is compiled once and kept under its text. */
  const schemaFor = (label: string) => ({
    type: 'object',
    properties: { [label]: { type: 'string', maxLength: 8 } },
    additionalProperties: false,
  })

  test('limit: however many schemas are checked, at most 1,000 compiled validators are kept', () => {
    for (let index = 0; index < 1_200; index++)
      expect(paramsProblems(schemaFor(`bound${index}`), { [`bound${index}`]: 'ok' })).toEqual([])
    expect(MAX_COMPILED_SCHEMAS).toBe(1_000)
    expect(compiledSchemas.size()).toBeLessThanOrEqual(1_000)
    // The newest are the ones kept.
    expect(compiledSchemas.has(schemaFor('bound1199'))).toBe(true)
    expect(compiledSchemas.has(schemaFor('bound0'))).toBe(false)
  })

  test('attack: a flood of new schemas never drops the validator of a skill in use (the least recently used goes first)', () => {
    const inUse = schemaFor('in-use')
    paramsProblems(inUse, {})
    // 1,500 new schemas (one seller publishing many), with an order of the skill in use after every 50 of them.
    for (let round = 0; round < 30; round++) {
      expect(compiledSchemas.has(inUse)).toBe(true)
      expect(paramsProblems(inUse, { 'in-use': 'fine' })).toEqual([])
      for (let index = 0; index < 50; index++) paramsProblems(schemaFor(`flood${round}-${index}`), {})
    }
    expect(compiledSchemas.has(inUse)).toBe(true)
    expect(compiledSchemas.size()).toBeLessThanOrEqual(1_000)
  })
})
