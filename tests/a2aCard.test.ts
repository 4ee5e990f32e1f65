import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { AgentCard as SdkAgentCard, verifyAgentCardSignature } from '@a2a-js/sdk'
import {
  type A2aAgentCard,
  type AgentCard,
  type AgentRegistrationFile,
  a2aCardView,
  buildMarketCard,
  defaultConfig,
  Marketplace,
  manualClock,
} from '@agentmarket/core'
import { libsqlStore, openDatabase } from '@agentmarket/store-libsql'
import { Validator } from '@cfworker/json-schema'
import { cardSigner } from '../packages/server/src/a2a/cardSigning.ts'
import { createApp } from '../packages/server/src/app.ts'
import { seedDemo } from '../packages/server/src/demo.ts'

const VENDOR = join(import.meta.dir, 'vendor/a2a-1.0.1')
const BASE_URL = 'https://market.example.org'

type Schema = Record<string, unknown>

/** The published schema's definition name of a proto message (`AgentCard` -> `Agent Card`). */
const definitionOf = (definitions: Record<string, Schema>, message: string) =>
  Object.keys(definitions).find((title) => title.replace(/ /g, '') === message)

/** Each message's required fields, read from the proto's `field_behavior = REQUIRED` (camelCase JSON names). */
function requiredFields(proto: string): Record<string, string[]> {
  const required: Record<string, string[]> = {}
  for (const [, name = '', body = ''] of proto.matchAll(/^message (\w+) \{([\s\S]*?)^\}/gm)) {
    const fields = [
      ...body.matchAll(
        /^\s+(?:repeated |optional )?(?:map<[^>]+>|[\w.]+) (\w+) = \d+ \[\(google\.api\.field_behavior\) = REQUIRED\]/gm,
      ),
    ].map(([, field = '']) => field.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase()))
    if (fields.length) required[name] = fields
  }
  return required
}

/**
 * The AgentCard schema to validate with: the published definitions, each `$ref` (a file name such as
 * `lf.a2a.v1.AgentCapabilities.jsonschema.json`) pointed at its definition, and the proto's required fields added.
 */
function agentCardSchema(): Schema {
  const published = JSON.parse(readFileSync(join(VENDOR, 'a2a.json'), 'utf8')) as {
    definitions: Record<string, Schema>
  }
  const definitions = published.definitions
  const required = requiredFields(readFileSync(join(VENDOR, 'a2a.proto'), 'utf8'))
  const key = (title: string) => title.replace(/ /g, '')
  const rewrite = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(rewrite)
    if (typeof value !== 'object' || value === null) return value
    const out: Record<string, unknown> = {}
    for (const [name, inner] of Object.entries(value)) {
      if (name === '$ref' && typeof inner === 'string') {
        const message =
          /^lf\.a2a\.v1\.(\w+)\.jsonschema\.json$/.exec(inner)?.[1] ??
          /^google\.protobuf\.(\w+)\.jsonschema\.json$/.exec(inner)?.[1]
        const title = message && definitionOf(definitions, message)
        if (!title) throw new Error(`unresolved $ref ${inner}`)
        out.$ref = `#/$defs/${key(title)}`
      } else if (name !== '$schema') out[name] = rewrite(inner)
    }
    return out
  }
  const $defs: Record<string, unknown> = {}
  for (const [title, schema] of Object.entries(definitions)) {
    const fields = required[key(title)]
    $defs[key(title)] = { ...(rewrite(schema) as Schema), ...(fields ? { required: fields } : {}) }
  }
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', $ref: '#/$defs/AgentCard', $defs }
}

const validator = new Validator(agentCardSchema() as never, '2020-12', false)
const problems = (card: unknown) =>
  validator.validate(card).errors.map((error) => `${error.instanceLocation} ${error.error}`)

/** Every agent card of a seeded demo market, as served: the SPEC card and the A2A view, by both paths. */
async function demoCards() {
  const store = libsqlStore(await openDatabase(':memory:'))
  const now = new Date()
  const clock = manualClock(now)
  const market = Marketplace.create({ store, config: defaultConfig(BASE_URL), clock })
  await seedDemo(market, store, { now, baseUrl: BASE_URL, clock })
  const app = createApp({ market, baseUrl: BASE_URL })
  const get = async (path: string, accept = 'application/json') => {
    const answer = await app.handle(new Request(`http://localhost${path}`, { headers: { accept } }))
    return {
      type: answer.headers.get('content-type'),
      json: (await answer.json()) as Record<string, unknown>,
    }
  }
  const { agents } = await market.listAgents({ limit: 100 })
  return { market, get, names: agents.map((agent) => agent.name) }
}

const demo = await demoCards()

describe('agent cards under the A2A 1.0 schema (vendored from the protocol, tests/vendor/a2a-1.0.1)', () => {
  test('behavior: every demo agent card as A2A serves it (well-known path, or Accept: application/a2a+json) is valid', async () => {
    expect(demo.names.length).toBe(36)
    for (const name of demo.names) {
      const known = await demo.get(`/api/agents/${name}/.well-known/agent-card.json`)
      expect(problems(known.json), name).toEqual([])
      const asked = await demo.get(`/api/agents/${name}/agent-card.json`, 'application/a2a+json')
      expect(asked.type).toBe('application/a2a+json')
      expect(asked.json).toEqual(known.json)
    }
    const market = await demo.get('/.well-known/agent-card.json')
    expect(problems(market.json)).toEqual([])
  })

  test("behavior: SPEC.md's card keeps every field, and its facts are the same in the A2A view's extensions", async () => {
    for (const name of demo.names) {
      const card = (await demo.get(`/api/agents/${name}/agent-card.json`)).json as unknown as AgentCard
      for (const field of [
        'name',
        'description',
        'url',
        'version',
        'provider',
        'capabilities',
        'defaultInputModes',
        'defaultOutputModes',
        'skills',
        'authentication',
        '_extensions',
      ])
        expect(card, `${name} ${field}`).toHaveProperty(field)
      expect(Object.keys(card._extensions).sort()).toEqual([
        'birthday',
        'birthdayVerified',
        'commerce',
        'heartbeat',
        'marketUrl',
        'milestones',
        'model',
        'owner',
        'platform',
        'registryRegistered',
      ])
      for (const skill of card.skills) expect(['free', 'purchasable']).toContain(skill.type)
      const view = (await demo.get(`/api/agents/${name}/.well-known/agent-card.json`))
        .json as unknown as A2aAgentCard
      const params = Object.fromEntries(
        view.capabilities.extensions.map((extension: { uri: string; params: unknown }) => [
          extension.uri,
          extension.params,
        ]),
      )
      const { skills: prices, ...commerce } = params['urn:agentmarket:a2a:commerce:v1'] as {
        skills: Record<string, unknown>
      }
      expect(commerce).toEqual(card._extensions.commerce)
      expect(params['urn:agentmarket:a2a:heartbeat:v1']).toEqual(card._extensions.heartbeat)
      const { commerce: _c, heartbeat: _h, ...provenance } = card._extensions
      expect(params['urn:agentmarket:a2a:provenance:v1']).toEqual(provenance)
      for (const skill of card.skills) {
        const { id, type, url, pricing, inputSchema, reveal } = skill
        expect(prices[id]).toEqual({
          type,
          url,
          ...(pricing ? { pricing } : {}),
          ...(inputSchema ? { inputSchema } : {}),
          ...(reveal ? { reveal } : {}),
        })
      }
    }
  })

  test('behavior: a skill revealing its result after acceptance says so on both cards; the A2A view stays valid', async () => {
    const market = Marketplace.create({
      store: libsqlStore(await openDatabase(':memory:')),
      config: defaultConfig(BASE_URL),
    })
    await market.registerAgent({
      name: 'careful',
      skills: [
        { name: 'Essay', type: 'purchasable', price: 2, review_seconds: 3600, reveal: 'after_acceptance' },
        { name: 'Note', type: 'purchasable', price: 1, review_seconds: 3600 },
      ],
    })
    const card = await market.agentCard('careful')
    expect(card.skills.map((skill) => skill.reveal)).toEqual(['after_acceptance', undefined])
    const view = a2aCardView(card)
    expect(problems(view)).toEqual([])
    const commerce = view.capabilities.extensions.find(
      (extension) => extension.uri === 'urn:agentmarket:a2a:commerce:v1',
    )?.params as { skills: Record<string, { reveal?: string }> }
    expect(commerce.skills.essay?.reveal).toBe('after_acceptance')
    expect(commerce.skills.note).not.toHaveProperty('reveal')
    // A2A's AgentSkill has no such field: SPEC's skill entry carries it, the A2A view only in the extension.
    expect(problems({ ...view, skills: [{ ...view.skills[0], reveal: 'after_acceptance' }] })).not.toEqual([])
  })

  test("error: the schema does reject what A2A does not define: SPEC's extra fields, a missing required field", async () => {
    const name = demo.names[0] ?? ''
    const card = (await demo.get(`/api/agents/${name}/agent-card.json`)).json
    expect(problems(card).join('\n')).toContain('url')
    const view = a2aCardView(await demo.market.agentCard(name))
    const { version: _version, ...withoutVersion } = view
    expect(problems(withoutVersion).join('\n')).toContain('version')
    expect(problems({ ...view, skills: [{ ...view.skills[0], pricing: {} }] })).not.toEqual([])
    expect(problems(buildMarketCard(defaultConfig(BASE_URL), '1.0.0'))).toEqual([])
  })
})

describe('registries and catalogs: ERC-8004 registration files and /.well-known/ai-catalog.json', () => {
  test('behavior: each agent has an ERC-8004 registration file whose services resolve (its A2A card valid, its page up)', async () => {
    for (const name of demo.names.slice(0, 6)) {
      const file = (await demo.get(`/api/agents/${name}/registration.json`))
        .json as unknown as AgentRegistrationFile
      expect(file).toMatchObject({
        type: 'https://eips.ethereum.org/EIPS/eip-8004#registration-v1',
        name,
        x402Support: false,
        registrations: [],
      })
      const card = (await demo.get(`/api/agents/${name}/agent-card.json`)).json as unknown as AgentCard
      expect(file.active).toBe(card._extensions.heartbeat.status !== 'off')
      const services = Object.fromEntries(
        (file.services as { name: string; endpoint: string }[]).map((service) => [
          service.name,
          service.endpoint,
        ]),
      )
      expect(Object.keys(services)).toEqual(['web', 'A2A', 'MCP'])
      const a2a = await demo.get(new URL(services.A2A ?? '').pathname)
      expect(problems(a2a.json)).toEqual([])
      expect(a2a.json.name).toBe(name)
      expect(new URL(services.web ?? '').pathname).toBe(`/agents/${name}`)
    }
  })

  test('behavior: the AI Catalog lists the marketplace and its agents, each entry a valid A2A card', async () => {
    const answer = await demo.get('/.well-known/ai-catalog.json')
    expect(answer.type).toBe('application/ai-catalog+json')
    const catalog = answer.json as {
      specVersion: string
      host: { displayName: string }
      entries: { identifier: string; displayName: string; mediaType: string; url: string }[]
      metadata: { agents: number }
    }
    expect(catalog.specVersion).toBe('1.0')
    expect(catalog.host.displayName).toBeTruthy()
    expect(catalog.entries.length).toBe(37)
    expect(catalog.metadata.agents).toBe(36)
    expect(new Set(catalog.entries.map((entry) => entry.identifier)).size).toBe(37)
    for (const entry of catalog.entries) {
      expect(entry.mediaType).toBe('application/a2a-agent-card+json')
      const card = await demo.get(new URL(entry.url).pathname)
      expect(problems(card.json), entry.url).toEqual([])
      expect(card.json.name).toBe(entry.displayName)
    }
  })
})

describe('signed A2A cards (JWS, A2A 1.0 §8.4): the marketplace vouches for the cards it serves', () => {
  test('behavior: cards carry a signature the official SDK verifies with the key at /.well-known/jwks.json; a changed card fails', async () => {
    const store = libsqlStore(await openDatabase(':memory:'))
    const signer = cardSigner(store, BASE_URL)
    const market = Marketplace.create({ store, config: defaultConfig(BASE_URL), cardSigner: signer })
    await market.registerAgent({ name: 'signed', bio: 'Signs nothing itself.', skills: ['Echo'] })
    const app = createApp({ market, baseUrl: BASE_URL })
    const get = async (path: string) =>
      (await (await app.handle(new Request(`http://localhost${path}`))).json()) as Record<string, unknown>
    const jwks = (await get('/.well-known/jwks.json')) as {
      keys: (Record<string, unknown> & { kid: string })[]
    }
    expect(jwks.keys.length).toBe(1)
    expect(jwks.keys[0]).not.toHaveProperty('d')
    const verify = verifyAgentCardSignature(async (kid, jku) => {
      expect(jku).toBe(`${BASE_URL}/.well-known/jwks.json`)
      const key = jwks.keys.find((candidate) => candidate.kid === kid)
      if (!key) throw new Error(`no key ${kid}`)
      return key
    })
    for (const path of ['/api/agents/signed/.well-known/agent-card.json', '/.well-known/agent-card.json']) {
      const card = await get(path)
      expect(problems(card), path).toEqual([])
      expect((card.signatures as unknown[]).length).toBe(1)
      await verify(SdkAgentCard.fromJSON(card))
      await expect(
        verify(SdkAgentCard.fromJSON({ ...card, description: 'Something else.' })),
      ).rejects.toThrow()
    }
    // SPEC's card is not the signed form (its extra fields are outside what A2A canonicalizes).
    expect(await get('/api/agents/signed/agent-card.json')).not.toHaveProperty('signatures')
    // The key is kept: another process on the same database signs with the same one.
    expect((await cardSigner(store, BASE_URL).publicKeys())[0]?.kid).toBe(jwks.keys[0]?.kid)
    await store.close()
  })
})
