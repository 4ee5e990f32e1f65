import { describe, expect, test } from 'bun:test'
import { Validator } from '@cfworker/json-schema'
import fc from 'fast-check'
import * as v from 'valibot'
import {
  type CostedSchema,
  costedSchema,
  orderSteps,
  SCHEMA_BUDGET,
} from '../../packages/core/src/SchemaCost.ts'
import { SkillInput } from '../../packages/core/src/Skill.ts'
import { paramsProblems } from '../../packages/core/src/SkillInputSchema.ts'
import { MAX_PARAMS_DEPTH } from '../../packages/core/src/TaskInput.ts'

// The cost guard on seller input schemas (issue 37, mechanism 2). Adversarial schemas (definitions that use each
// other several times, loops, nested alternatives, every applicator the validator knows) and params are run through
// what a publish and an order run: the skill's parse, then paramsProblems. The work is counted, not timed: every
// subschema the real validator applies to a value reads its `$recursiveAnchor` once, so a copy of the schema behind
// proxies counts the validator's steps exactly. For every schema the market takes and every order: the steps are
// within what the market priced the order at, that price is within the budget or the order is refused unchecked,
// and each value costs at most the per-value budget, so the work grows linearly with the order.

type Json = Record<string, unknown>

/** A validator over `schema` that counts the subschemas it applies (one read of `$recursiveAnchor` each). */
function countingValidator(schema: Json) {
  const counter = { steps: 0 }
  const wrap = (value: unknown): unknown => {
    if (typeof value !== 'object' || value === null) return value
    if (Array.isArray(value)) return value.map(wrap)
    const copy = Object.fromEntries(Object.entries(value).map(([key, sub]) => [key, wrap(sub)]))
    // A getter, not a Proxy: read once by each application of the subschema, and not enumerated.
    Object.defineProperty(copy, '$recursiveAnchor', {
      get: () => {
        counter.steps++
        return undefined
      },
    })
    return copy
  }
  const validator = new Validator(wrap(schema) as never, '2020-12', false)
  return { validate: (params: Json) => validator.validate(params), counter }
}

/** Values and property names in `params`: what the budget is linear in. */
function valuesIn(params: unknown): number {
  if (typeof params !== 'object' || params === null) return 1
  const named = Array.isArray(params) ? 0 : Object.keys(params).length
  return 1 + named + Object.values(params).reduce((sum: number, child) => sum + valuesIn(child), 0)
}

const NAMES = ['a', 'b', 'c']
const DEFS = ['d0', 'd1', 'd2', 'd3', 'd4']

/** Schemas built from every keyword skill inputs take, with references to any of five definitions. */
const schemaArbitrary = fc.letrec<{ node: unknown }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(
      true,
      false,
      { type: 'string' },
      { type: 'number', minimum: 1 },
      { type: 'array' },
      { type: 'object', required: ['a'] },
      { type: 'string', format: 'url' },
      { type: 'string', format: 'email' },
      { type: 'string', format: 'date-time' },
      { enum: [0, 'x', [1], { a: 1 }] },
      { const: 0 },
      { minLength: 2, maxLength: 40 },
    ),
    fc.constantFrom(...DEFS).map((name) => ({ $ref: `#/$defs/${name}` })),
    fc
      .tuple(
        fc.constantFrom('allOf', 'anyOf', 'oneOf'),
        fc.array(tie('node'), { minLength: 1, maxLength: 4 }),
      )
      .map(([keyword, list]) => ({ [keyword]: list })),
    tie('node').map((not) => ({ not })),
    fc.tuple(tie('node'), tie('node'), tie('node')).map(([when, then, otherwise]) => ({
      if: when,
      then,
      else: otherwise,
    })),
    fc
      .record(
        {
          properties: fc.dictionary(fc.constantFrom(...NAMES), tie('node'), { maxKeys: 3 }),
          additionalProperties: tie('node'),
          unevaluatedProperties: tie('node'),
          propertyNames: tie('node'),
          dependentSchemas: fc.dictionary(fc.constantFrom(...NAMES), tie('node'), { maxKeys: 2 }),
        },
        { requiredKeys: [] },
      )
      .map((object) => ({ type: 'object', ...object })),
    fc
      .record(
        {
          items: tie('node'),
          prefixItems: fc.array(tie('node'), { minLength: 1, maxLength: 2 }),
          contains: tie('node'),
          unevaluatedItems: tie('node'),
          unique: fc.integer({ min: 0, max: SCHEMA_BUDGET.uniqueItems }),
          minContains: fc.integer({ min: 0, max: 3 }),
        },
        { requiredKeys: [] },
      )
      .map(({ unique, ...array }) => ({
        type: 'array',
        ...array,
        ...(unique === undefined ? {} : { uniqueItems: true, maxItems: unique }),
      })),
  ),
}))

/** The root's own keywords: fields, other fields, and alternatives applied to the whole params. */
const rootArbitrary = fc
  .record(
    {
      properties: fc.dictionary(fc.constantFrom(...NAMES), schemaArbitrary.node, { maxKeys: 3 }),
      additionalProperties: schemaArbitrary.node,
      allOf: fc.array(schemaArbitrary.node, { minLength: 1, maxLength: 3 }),
    },
    { requiredKeys: [] },
  )
  .map((root) => root as Json)

/** A skill input: an object at the root, five definitions that may use each other (and loop). */
const inputArbitrary = fc
  .tuple(rootArbitrary, fc.array(schemaArbitrary.node, { minLength: DEFS.length, maxLength: DEFS.length }))
  .map(([root, defs]) => ({
    type: 'object',
    ...root,
    $defs: Object.fromEntries(DEFS.map((name, index) => [name, defs[index]])),
  }))

/** Params: nested values under the property names schemas use, and an array that repeats one many times. */
const paramsArbitrary = fc
  .tuple(
    fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constantFrom(
          0,
          'x',
          'https://example.com/a',
          'a@b.co',
          '2026-06-01T12:00:00Z',
          null,
          `${'a'.repeat(20)}.!`,
        ),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(fc.constantFrom(...NAMES, 'z'), tie('value'), { maxKeys: 4 }),
      ),
    })).value,
    fc.integer({ min: 1, max: 2_000 }),
  )
  .map(([value, count]) => ({ a: value, b: Array(count).fill(value), c: [value] }) as Json)
  .filter((params) => JSON.stringify(params).length <= 16 * 1024)

describe('the cost guard on seller input schemas (issue 37)', () => {
  test('cost guard: every order against every schema the market takes costs at most its price, within the budget', () => {
    let taken = 0
    let priced = 0
    fc.assert(
      fc.property(
        inputArbitrary,
        fc.array(paramsArbitrary, { minLength: 1, maxLength: 3 }),
        (input, orders) => {
          if (JSON.stringify(input).length > 8 * 1024) return
          if (!v.safeParse(SkillInput, { name: 'S', input }).success) return
          taken++
          const costed = costedSchema(input) as CostedSchema
          expect(costed.stepsAtLevel.length).toBe(MAX_PARAMS_DEPTH)
          expect(Math.max(...costed.stepsAtLevel)).toBeLessThanOrEqual(SCHEMA_BUDGET.valueSteps)
          const counting = countingValidator(costed.runs)
          for (const params of orders) {
            const price = orderSteps(costed, params)
            if (price > SCHEMA_BUDGET.orderSteps) {
              expect(paramsProblems(input, params)[0]?.pointer).toBe('/params')
              continue
            }
            priced++
            counting.counter.steps = 0
            counting.validate(params)
            expect(counting.counter.steps).toBeLessThanOrEqual(price)
            expect(counting.counter.steps).toBeLessThanOrEqual(SCHEMA_BUDGET.valueSteps * valuesIn(params))
            paramsProblems(input, params)
          }
        },
      ),
      { numRuns: 200 },
    )
    // The generators must reach the path under test, not only schemas the market refuses.
    expect(taken).toBeGreaterThan(30)
    expect(priced).toBeGreaterThan(30)
  }, 600_000)
})
