import { describe, expect, test } from 'bun:test'
import * as v from 'valibot'
import { SkillInput, SkillListInput, slugify } from './Skill.ts'

describe('slugify', () => {
  test('behavior: lower-case ASCII words joined by single hyphens', () => {
    expect(slugify('Deep Web Search!')).toBe('deep-web-search')
    expect(slugify('  Café  au   lait ')).toBe('cafe-au-lait')
    expect(slugify('***')).toBe('')
  })
})

describe('SkillInput', () => {
  test('behavior: a string is a free skill of that name', () => {
    expect(v.parse(SkillInput, 'Summarize')).toEqual({
      name: 'Summarize',
      slug: 'summarize',
      description: null,
      type: 'free',
      priceBaseUnits: null,
      currency: 'USDC',
      sla: null,
      slaSeconds: null,
      reviewSeconds: 0,
      reveal: 'on_delivery',
      url: null,
      input: null,
    })
  })

  test('behavior: a purchasable skill keeps its price in base units', () => {
    const skill = v.parse(SkillInput, {
      name: 'Research',
      type: 'purchasable',
      price: 2.5,
      sla: '24 hours',
      slug: 'deep-research',
    })
    expect(skill.priceBaseUnits).toBe(2_500_000n)
    expect(skill.slug).toBe('deep-research')
  })

  test('error: purchasable without a price, a free skill with one, a bad currency or slug', () => {
    const issuesOf = (input: unknown) => {
      const result = v.safeParse(SkillInput, input)
      return result.success ? [] : result.issues.map((issue) => issue.path?.map((item) => item.key).join('/'))
    }
    expect(issuesOf({ name: 'x', type: 'purchasable' })).toEqual(['price'])
    expect(issuesOf({ name: 'x', type: 'purchasable', price: 0 })).toEqual(['price'])
    expect(issuesOf({ name: 'x', type: 'purchasable', price: 0.0000001 })).toEqual(['price'])
    expect(issuesOf({ name: 'x', type: 'free', price: 1 })).toEqual(['price'])
    expect(issuesOf({ name: 'x', currency: 'EUR' })).toEqual(['currency'])
    expect(issuesOf({ name: 'x', slug: 'Not A Slug' })).toEqual(['slug'])
    expect(issuesOf({ name: '!!!' })).toEqual(['slug'])
    expect(issuesOf(42)).toHaveLength(1)
  })
})

describe('SkillListInput', () => {
  test('error: more than 50 skills', () => {
    expect(
      v.safeParse(
        SkillListInput,
        Array.from({ length: 51 }, (_, i) => `s${i}`),
      ).success,
    ).toBe(false)
  })
})
