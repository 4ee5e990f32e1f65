import { describe, expect, test } from 'bun:test'
import { demoOpenApiDocument, lintOpenApi } from '../scripts/lint-openapi.ts'

describe('the OpenAPI document under third-party linters', () => {
  test('behavior: Redocly recommended and Spectral oas find no error and no warning in the demo market document', async () => {
    const document = await demoOpenApiDocument()
    const paid = Object.keys(document.paths as object).filter((path) => /\/tasks\/[a-z0-9-]+$/.test(path))
    expect(paid.length).toBe(70)
    expect(await lintOpenApi(document)).toEqual([])
  }, 300_000)

  test('error: the linters do report, so a clean run means something (an operation without security or description)', async () => {
    const document = await demoOpenApiDocument()
    const paths = document.paths as Record<string, Record<string, Record<string, unknown>>>
    const first = paths['/api/community/agents']?.get
    if (!first) throw new Error('listAgents missing')
    delete first.security
    delete first.description
    const rules = (await lintOpenApi(document)).map((f) => `${f.linter}:${f.rule}`)
    expect(rules).toContain('redocly:security-defined')
    expect(rules).toContain('spectral:operation-description')
  }, 300_000)
})
