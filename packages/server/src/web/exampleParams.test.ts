import { describe, expect, test } from 'bun:test'
import { exampleParams } from './exampleParams.ts'

describe('exampleParams', () => {
  test('behavior: values the schema states come first: examples, default, const, enum', () => {
    expect(
      exampleParams({
        type: 'object',
        required: ['topic', 'depth', 'mode', 'lang'],
        properties: {
          topic: { type: 'string', examples: ['solar panels', 'wind'], default: 'x' },
          depth: { type: 'integer', default: 3, minimum: 1 },
          mode: { const: 'brief' },
          lang: { enum: ['en', 'fr'] },
        },
      }),
    ).toEqual({ topic: 'solar panels', depth: 3, mode: 'brief', lang: 'en' })
    expect(exampleParams({ type: 'object', examples: [{ topic: 'given whole' }] })).toEqual({
      topic: 'given whole',
    })
  })

  test('behavior: placeholders by type for the required properties only, within the bounds', () => {
    expect(
      exampleParams({
        type: 'object',
        required: ['name', 'count', 'ratio', 'ok', 'tags', 'when', 'site', 'nested', 'maybe'],
        properties: {
          name: { type: 'string' },
          count: { type: 'integer', minimum: 5 },
          ratio: { type: 'number', exclusiveMinimum: 0, maximum: 0.2 },
          ok: { type: 'boolean' },
          tags: { type: 'array', items: { type: 'string' } },
          when: { type: 'string', format: 'date' },
          site: { type: 'string', format: 'uri' },
          nested: { type: 'object', required: ['id'], properties: { id: { type: 'integer' } } },
          maybe: { type: ['null', 'string'] },
          optional: { type: 'string' },
        },
      }),
    ).toEqual({
      name: '<name>',
      count: 5,
      ratio: 0.2,
      ok: true,
      tags: ['<tags>'],
      when: '2026-01-31',
      site: 'https://example.com',
      nested: { id: 1 },
      maybe: '<maybe>',
    })
  })

  test('behavior: with nothing required, the first properties are shown; refs, oneOf and allOf are followed', () => {
    expect(
      exampleParams({
        $defs: { city: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } },
        type: 'object',
        properties: {
          from: { $ref: '#/$defs/city' },
          via: { oneOf: [{ type: 'integer' }, { type: 'string' }] },
          both: {
            allOf: [{ $ref: '#/$defs/city' }, { properties: { zip: { const: '75001' } }, required: ['zip'] }],
          },
        },
      }),
    ).toEqual({ from: { name: '<name>' }, via: 1, both: { name: '<name>', zip: '75001' } })
  })

  test('edge: a recursive schema stops at a bounded depth; anything but an object schema gives {}', () => {
    const tree = {
      $defs: {
        node: { type: 'object', required: ['child'], properties: { child: { $ref: '#/$defs/node' } } },
      },
      $ref: '#/$defs/node',
    }
    const example = exampleParams(tree)
    expect(JSON.stringify(example).length).toBeLessThan(200)
    expect(example).toHaveProperty('child.child')
    for (const schema of [undefined, null, 'string', 42, [], { type: 'string' }, { type: 'array' }, true])
      expect(exampleParams(schema)).toEqual({})
    expect(exampleParams({ $ref: 'https://elsewhere.example/schema.json' })).toEqual({})
  })
})
