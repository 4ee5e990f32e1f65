import { describe, expect, test } from 'bun:test'
import { expectProblemShape, testApp } from '../testing/http.ts'

// The bounds of README's "Rules and limits", on the fields no other test takes to their bound: name, bio,
// skills[].name, model on update, milestone title, q, params size, list limits 0 and 101 on the agent list and 0 on
// the user list are in register.test.ts, agents.test.ts, community.test.ts, tasks.test.ts and users.test.ts.

type App = Awaited<ReturnType<typeof testApp>>

/** `length` characters of `unit`. */
const chars = (length: number, unit = 'x') => unit.repeat(length)
/** An http(s) URL of exactly `length` characters. */
const urlOf = (length: number) => `https://example.com/${chars(length - 20, 'p')}`
/** An e-mail address of exactly `length` characters (64-character local part, 63-character labels). */
const emailOf = (length: number) =>
  `${chars(64, 'l')}@${chars(63, 'a')}.${chars(63, 'b')}.${chars(length - 64 - 1 - 128 - 4, 'c')}.com`
/** An object nesting `levels` levels of objects, itself included. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {}
  for (let level = 1; level < levels; level++) value = { a: value }
  return value
}

/** A seller with a free skill, an open task on it and a milestone; `key` is its bearer key. */
async function market() {
  const app = await testApp()
  const { key } = await app.register('seller', { skills: ['Ping'], bio: 'sells' })
  const task = await app.call('POST', '/api/agents/seller/tasks', { body: { skill: 'Ping' } })
  await app.call('POST', '/api/agents/seller/milestones', { key, body: { date: '2026-01-01', title: 't' } })
  return { ...app, key, taskPath: `/api/agents/seller/tasks/${task.json.task_id}` }
}

/** Everything these writes could change, as a client reads it. */
async function snapshot({ call, key }: App & { key: string }) {
  const reads = [
    '/api/community/agents?limit=100',
    '/api/community/agents/seller',
    '/api/agents/seller/milestones',
    '/api/feed/live?limit=200',
  ]
  const answers = await Promise.all(reads.map(async (path) => (await call('GET', path)).text))
  const queue = await call('GET', '/api/agents/seller/tasks?status=all&limit=100', { key })
  return JSON.stringify([answers, queue.text])
}

/** One write of a field at a length: where it goes, and the pointer a refusal names. */
type FieldCase = {
  method: string
  path: (taskPath: string) => string
  pointer: string
  body: (n: number) => unknown
}

/** A registration body with `extra` fields. */
const register = (extra: Record<string, unknown>) => ({ name: 'newcomer', ...extra })
/** A registration body with one skill of `fields`. */
const skill = (fields: Record<string, unknown>) => register({ skills: [{ name: 'S', ...fields }] })
/** A milestone body with `fields`. */
const milestone = (fields: Record<string, unknown>) => ({ date: '2026-02-02', title: 'm', ...fields })

/** Fields with their documented maximum: at the maximum they are taken, one more is a 400 at their pointer. */
const bounded: (FieldCase & { max: number })[] = [
  {
    ...post('/api/agents/register'),
    pointer: '/model',
    max: 100,
    body: (n) => register({ model: chars(n) }),
  },
  {
    ...post('/api/agents/register'),
    pointer: '/skills/0/description',
    max: 1000,
    body: (n) => skill({ description: chars(n) }),
  },
  {
    ...post('/api/agents/register'),
    pointer: '/skills/0/sla',
    max: 100,
    body: (n) => skill({ sla: chars(n) }),
  },
  {
    ...post('/api/agents/register'),
    pointer: '/skills/0/slug',
    max: 64,
    body: (n) => skill({ slug: chars(n) }),
  },
  {
    ...post('/api/agents/register'),
    pointer: '/skills/0/url',
    max: 2048,
    body: (n) => skill({ url: urlOf(n) }),
  },
  {
    method: 'PUT',
    path: () => '/api/agents/seller',
    pointer: '/bio',
    max: 1000,
    body: (n) => ({ bio: chars(n) }),
  },
  {
    method: 'PUT',
    path: () => '/api/agents/seller',
    pointer: '/basename',
    max: 100,
    body: (n) => ({ basename: chars(n) }),
  },
  {
    ...post('/api/agents/seller/milestones'),
    pointer: '/description',
    max: 2000,
    body: (n) => milestone({ description: chars(n) }),
  },
  {
    ...post('/api/agents/seller/milestones'),
    pointer: '/proof',
    max: 2048,
    body: (n) => milestone({ proof: urlOf(n) }),
  },
  {
    ...post('/api/agents/seller/tasks'),
    pointer: '/buyer_email',
    max: 254,
    body: (n) => ({ skill: 'Ping', buyer_email: emailOf(n) }),
  },
  {
    ...post('/api/agents/seller/tasks'),
    pointer: '/params',
    max: 32,
    body: (n) => ({ skill: 'Ping', params: nested(n) }),
  },
  {
    method: 'POST',
    path: (taskPath) => `${taskPath}/complete`,
    pointer: '/result_url',
    max: 2048,
    body: (n) => ({ result_url: urlOf(n) }),
  },
]

/** Fields whose value at the maximum is refused for another reason (no such skill or invite): only the excess. */
const excessOnly: FieldCase[] = [
  {
    ...post('/api/agents/register'),
    pointer: '/owner_invite',
    body: () => register({ owner_invite: chars(101) }),
  },
  { ...post('/api/agents/seller/tasks'), pointer: '/skill', body: () => ({ skill: chars(101) }) },
]

/** A POST to a fixed path. */
function post(path: string) {
  return { method: 'POST', path: () => path }
}

describe('field length limits', () => {
  test('error: one character (or level) over a field maximum is a 400 problem at its pointer, and changes nothing', async () => {
    const app = await market()
    const before = await snapshot(app)
    const over = [
      ...bounded.map((field) => ({ ...field, sent: field.body(field.max + 1) })),
      ...excessOnly.map((field) => ({ ...field, sent: field.body(0) })),
    ]
    for (const { method, path, pointer, sent } of over) {
      const response = await app.call(method, path(app.taskPath), { key: app.key, body: sent })
      expectProblemShape(response, 400, 'invalid_body')
      expect(response.json.errors, pointer).toContainEqual({
        pointer,
        detail: expect.stringMatching(/at most/),
      })
    }
    expect(await snapshot(app)).toBe(before)
  })

  test('behavior: a field at its maximum is taken', async () => {
    for (const { method, path, pointer, max, body } of bounded) {
      const app = await market()
      const response = await app.call(method, path(app.taskPath), { key: app.key, body: body(max) })
      expect(response.status, `${pointer} ${response.text.slice(0, 300)}`).toBeLessThan(300)
    }
  })
})

describe('list limit', () => {
  test('error: limit 0 or 101 on the task list, 101 on the user list, is a 400 problem at /limit', async () => {
    const app = await market()
    const paths = [
      '/api/agents/seller/tasks?limit=0',
      '/api/agents/seller/tasks?limit=101',
      '/api/community/users?limit=101',
    ]
    for (const path of paths) {
      for (const key of [undefined, app.key]) {
        const response = await app.call('GET', path, { key })
        expectProblemShape(response, 400, 'invalid_query')
        expect(response.json.errors, path).toEqual([{ pointer: '/limit', detail: expect.any(String) }])
      }
    }
    expect((await app.call('GET', '/api/agents/seller/tasks?limit=100', { key: app.key })).status).toBe(200)
    expect((await app.call('GET', '/api/community/users?limit=100')).status).toBe(200)
  })
})
