import { nameKey } from '../../Agent.ts'
import { constantTimeEqual, generateId } from '../../Credentials.ts'
import { ConflictError, InvalidInputError, NotFoundError, UnauthorizedError } from '../../errors.ts'
import { type KeptSecret, keptSecret } from '../../PersistentSecret.ts'
import type { AgentStore, FeedStore, KvStore, TaskStore, WebhookStore } from '../../ports/Store.ts'
import { clientKeyOf } from '../../RateLimit.ts'
import { parseInput } from '../../Validation.ts'
import {
  MAX_WEBHOOKS,
  toWebhookView,
  WEBHOOK_CURSOR,
  WEBHOOK_EVENT_TYPES,
  WebhookInput,
  type WebhookRecord,
  type WebhookView,
  webhookSecret,
  webhookUrlProblem,
} from '../../Webhook.ts'
import { type ActionContext, authenticate, requireAgent } from '../context.ts'
import { requireTask } from '../tasks/judging.ts'

/** How many of its latest deliveries an endpoint is shown with. */
export const DELIVERIES_SHOWN = 20

/** The owner of an endpoint: a seller (its key checked) for every task, or a buyer for one task (its id). */
type Owner = { agentKey: string; taskId: string | null }

/** A new endpoint with its secret, shown this once. */
export type NewWebhook = WebhookView & { secret: string }

/**
 * The key every endpoint's secret is derived from: made once (when the first endpoint is added) and kept in the store
 * like the MPP secret. A check of a secret only reads it: without a key no secret was ever answered.
 */
export function webhookMasterKey(context: Pick<ActionContext<KvStore>, 'store' | 'random'>): KeptSecret {
  return keptSecret(context.store, context.random, WEBHOOK_KEY_SETTING)
}

const WEBHOOK_KEY_SETTING = 'setting:webhook_key'

/** The endpoint actions of sellers (with their key) and buyers (with their task id). */
export function webhookEndpointActions(
  context: ActionContext<AgentStore & FeedStore & TaskStore & WebhookStore & KvStore>,
  masterKey: KeptSecret,
) {
  const { store, config, clock, random } = context

  const sellerOf = async (name: string, apiKey: string | undefined): Promise<Owner> => {
    const agent = await authenticate(context, name, apiKey)
    return { agentKey: nameKey(agent.name), taskId: null }
  }
  const buyerOf = async (name: string, taskId: string): Promise<Owner> => {
    const agent = await requireAgent(context, name)
    const task = await requireTask(context, agent, taskId)
    return { agentKey: nameKey(agent.name), taskId: task.id }
  }

  const create = async (owner: Owner, body: unknown, addedBy = ''): Promise<NewWebhook> => {
    const input = parseInput(WebhookInput, body)
    const problem = webhookUrlProblem(input.url, config.webhookAllowPrivate === true)
    if (problem)
      throw new InvalidInputError('invalid_body', `The request body is invalid: /url ${problem}.`, [
        { pointer: '/url', detail: problem },
      ])
    // The feed's newest event now: the endpoint gets only what happens after it was added.
    const [newest] = await store.listEvents({ limit: 1 })
    const webhook: WebhookRecord = {
      id: generateId(random, 'whk_'),
      afterEventId: newest?.id ?? '0',
      droppedDeliveries: 0,
      addedBy,
      ...owner,
      url: input.url,
      events: input.events ? [...new Set(input.events)] : [...WEBHOOK_EVENT_TYPES],
      createdAt: clock.now(),
    }
    const max = owner.taskId === null ? MAX_WEBHOOKS.seller : MAX_WEBHOOKS.task
    if (!(await store.insertWebhook(webhook, max)))
      throw new ConflictError(
        'too_many_webhooks',
        `At most ${max} endpoints here; delete one (DELETE …/webhooks/{id}) before adding another.`,
      )
    // The first endpoint starts the fan-out at the feed's newest event: nothing older is ever sent.
    await store.kvUpdate(WEBHOOK_CURSOR, (current) =>
      current === null
        ? { op: 'set', value: webhook.afterEventId, result: null }
        : { op: 'noop', result: null },
    )
    const secret = await webhookSecret(await masterKey.made(), webhook.id)
    return { ...toWebhookView(webhook, []), secret }
  }

  const list = async (owner: Owner) => views(await store.listWebhooks(owner.agentKey, owner.taskId))

  /** True when `secret` is the one answered when endpoint `id` was added. */
  const holdsSecretOf = async (id: string, secret: string | undefined) => {
    if (secret === undefined) return false
    const key = await masterKey.existing()
    return key !== null && constantTimeEqual(await webhookSecret(key, id), secret)
  }

  /**
   * A task's endpoints whose secret the caller sent: the task id is the seller's too (its queue lists it), so only the
   * secret answered to whoever added an endpoint shows it. Refused alike whether or not the task has endpoints.
   */
  const listHeld = async (owner: Owner, secret: string | undefined) => {
    const held: WebhookRecord[] = []
    for (const hook of await store.listWebhooks(owner.agentKey, owner.taskId))
      if (await holdsSecretOf(hook.id, secret)) held.push(hook)
    if (held.length === 0) throw endpointSecretRequired()
    return views(held)
  }

  const views = async (hooks: WebhookRecord[]): Promise<{ webhooks: WebhookView[] }> => ({
    webhooks: await Promise.all(
      hooks.map(async (hook) => toWebhookView(hook, await store.listDeliveries(hook.id, DELIVERIES_SHOWN))),
    ),
  })

  const remove = async (owner: Owner, id: string): Promise<{ deleted: true }> => {
    if (!(await store.deleteWebhook(id, owner.agentKey, owner.taskId)))
      throw new NotFoundError('webhook_not_found', `No endpoint "${id}" here; GET …/webhooks lists them.`)
    return { deleted: true }
  }

  return {
    /** A seller's endpoint for events of every one of its tasks (its key); the secret is answered once. */
    addWebhook: async (name: string, apiKey: string | undefined, body: unknown) =>
      create(await sellerOf(name, apiKey), body),
    /** A seller's endpoints, each with its latest deliveries and their attempts (its key). */
    listWebhooks: async (name: string, apiKey: string | undefined) => list(await sellerOf(name, apiKey)),
    /** Deletes a seller's endpoint and its deliveries (its key). */
    deleteWebhook: async (name: string, apiKey: string | undefined, id: string) =>
      remove(await sellerOf(name, apiKey), id),
    /** A buyer's endpoint for events of one task (the task id); its secret, answered once, is what manages it. */
    addTaskWebhook: async (
      name: string,
      taskId: string,
      body: unknown,
      options: { client?: string | null } = {},
    ) => create(await buyerOf(name, taskId), body, clientKeyOf(options.client)),
    /** The task's endpoint whose secret is sent, with its latest deliveries (the task id and that secret). */
    listTaskWebhooks: async (name: string, taskId: string, secret: string | undefined) =>
      listHeld(await buyerOf(name, taskId), secret),
    /** Deletes a task's endpoint (the task id and the endpoint's secret). */
    deleteTaskWebhook: async (name: string, taskId: string, id: string, secret: string | undefined) => {
      const owner = await buyerOf(name, taskId)
      // Checked against the id sent, before the store is read: a wrong secret learns nothing of which ids exist.
      if (!(await holdsSecretOf(id, secret))) throw endpointSecretRequired()
      return remove(owner, id)
    },
  }
}

/** The 401 of a task endpoint's list or deletion without the secret answered when it was added. */
function endpointSecretRequired(): UnauthorizedError {
  return new UnauthorizedError(
    "Send the endpoint's secret, answered once when it was added: Authorization: Bearer whsec_…. The task id alone does not manage a task's endpoints (its seller knows it too).",
  )
}
