/** One change that takes a protection out: in `file`, the exact text `find` (found once) becomes `replace`. */
export type Edit = { file: string; find: string; replace: string }

/** A protection: where it is in the code, how to take it out, and the test that must then fail. */
export type Protection = {
  /** A short, unique name (the script's filter matches it). */
  id: string
  /** What the protection stops, in a few words. */
  what: string
  /** The changes that take it out. */
  edits: Edit[]
  /** The test file that must fail without it. */
  test: string
  /** A test name pattern within it (bun test -t), to run only the tests that hold this protection. */
  name?: string
}

const A2A = 'packages/server/src/a2a/handler.ts'
const SCHEMA = 'packages/core/src/SkillInputSchema.ts'
const PROOF = 'packages/core/src/WalletProof.ts'
const ADDRESS_SLOTS = 'packages/core/src/AddressSlots.ts'
const WRITE_SCOPE = 'packages/core/src/ports/writeScope.ts'
const IDEMPOTENCY = 'packages/core/src/actions/idempotency.ts'
const IDEMPOTENT_ROWS = 'packages/core/src/routes/idempotentRows.ts'
const PG_FAULTS = 'packages/store-postgres/src/faults.ts'
const PG_ADMISSION = 'packages/store-postgres/src/admission.ts'
const PG_PROGRESS = 'packages/store-postgres/src/progress.ts'
const CHAIN_BUDGET = 'packages/core/src/ports/chainBudget.ts'

/** Every protection `scripts/protections.ts` removes in turn (issue 37: each must have a test that notices). */
export const PROTECTIONS: Protection[] = [
  {
    id: 'ipv6-network-ceiling',
    what: "an IPv6 /48 shares a ceiling, so rotating /64s does not multiply a client's allowance",
    edits: [
      {
        file: 'packages/core/src/RateLimit.ts',
        find: "if (!address.includes(':') || IPV4_MAPPED.test(address)) return null",
        replace: 'return null',
      },
    ],
    test: 'packages/core/src/RateLimit.test.ts',
    name: 'IPv6 networks',
  },
  {
    id: 'a2a-gettask-context',
    what: "GetTask shows the task id, never the buyer's conversation, to a request that presents only the task id",
    edits: [
      {
        file: A2A,
        find: 'return await this.taskOf(found.agent, params.id, params.id)',
        replace: 'return await this.taskOf(found.agent, params.id, found.thread ?? params.id)',
      },
    ],
    test: 'tests/security/a2aContexts.test.ts',
    name: 'GetTask',
  },
  {
    id: 'a2a-follow-up-context',
    what: 'a follow-up naming a task shows its conversation only when the message presented that contextId',
    edits: [
      {
        file: A2A,
        find: 'const shown = found.thread !== null && message.contextId === found.thread ? found.thread : message.taskId',
        replace: 'const shown = found.thread ?? message.taskId',
      },
    ],
    test: 'tests/security/a2aContexts.test.ts',
    name: 'follow-up',
  },
  {
    id: 'schema-step-budget',
    what: "a seller's input schema whose check costs more than the budget ($ref chains, alternatives) is refused",
    edits: [
      {
        file: SCHEMA,
        find: "const found = problem ?? (costed && 'detail' in costed ? costed : null)",
        replace: 'const found = problem',
      },
    ],
    test: 'tests/security/schemaCost.test.ts',
    name: '\\$ref chain',
  },
  {
    id: 'schema-linear-formats',
    what: "formats are checked by the market's linear checkers, never the validator's backtracking expressions",
    edits: [
      {
        file: 'packages/core/src/SchemaCost.ts',
        find: "if (typeof schema.format === 'string') copy.format = FORMAT_PREFIX + schema.format",
        replace: '',
      },
    ],
    test: 'tests/security/schemaCost.test.ts',
    name: 'format url',
  },
  {
    id: 'schema-unique-items',
    what: 'uniqueItems needs a small maxItems (the validator compares items pairwise)',
    edits: [
      {
        file: SCHEMA,
        find: "if (unique) return { path: [...next.path, 'uniqueItems'], detail: unique }",
        replace: '',
      },
    ],
    test: 'tests/security/schemaCost.test.ts',
    name: 'uniqueItems',
  },
  {
    id: 'webhook-fair-share',
    what: 'one tenant holds at most its share of webhook attempts in flight, so hanging endpoints starve no one else',
    edits: [
      {
        file: 'packages/core/src/FairQueue.ts',
        find: 'WEBHOOK_FAIR_SHARE: FairShare = { limit: 20, perTenant: 10, perEndpoint: 4 }',
        replace: 'WEBHOOK_FAIR_SHARE: FairShare = { limit: 20, perTenant: 1000, perEndpoint: 1000 }',
      },
      {
        file: 'packages/store-sql/src/fairQueue.ts',
        find: 'order by endpoints_free.tenant_rank, endpoints_free.due_at, endpoints_free.id',
        replace: 'order by endpoints_free.due_at, endpoints_free.id',
      },
    ],
    test: 'tests/security/webhookFairness.test.ts',
  },
  {
    id: 'webhook-tenant-adder',
    what: "a task's endpoint counts against the share of the client that added it, never the buyer's",
    edits: [
      {
        file: 'packages/core/src/Webhook.ts',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, found as written
        find: 'if (webhook.addedBy) return `client:${webhook.addedBy}`',
        replace: '',
      },
    ],
    test: 'tests/security/webhookFairness.test.ts',
    name: 'spends its own share',
  },
  {
    id: 'mail-loop-passes',
    what: "a mail pass whose sends hang does not hold the server's loop",
    edits: [
      {
        file: 'packages/server/src/mail/delivery.ts',
        find: 'if (running.size >= MAIL_PASSES_AT_ONCE) {',
        replace: 'if (running.size >= 1) {',
      },
    ],
    test: 'tests/security/queueFairness.test.ts',
    name: 'does not hold the loop',
  },
  {
    id: 'task-webhook-secret',
    what: "a task's webhook endpoints are read and deleted with their own secret, not the task id the seller knows",
    edits: [
      {
        file: 'packages/core/src/actions/webhooks/endpoints.ts',
        find: 'secret !== undefined && constantTimeEqual(await webhookSecret(await masterKey(), id), secret)',
        replace: 'true',
      },
    ],
    test: 'tests/security/taskWebhookAttacks.test.ts',
  },
  {
    id: 'escrow-late-delivery',
    what: 'an escrow job delivered at or past deliver_by is 409 task_overdue, keeping nothing',
    edits: [
      {
        file: 'packages/core/src/actions/tasks/completeTask.ts',
        find: 'if (deliverBy && now >= deliverBy)',
        replace: 'if (deliverBy && now < deliverBy && false)',
      },
    ],
    test: 'tests/security/jobAttacks.test.ts',
    name: 'deliver_by',
  },
  {
    id: 'rejection-reason',
    what: 'a rejection (a dispute) needs a reason of 1-1000 characters',
    edits: [
      {
        file: 'packages/core/src/TaskInput.ts',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, found as written
        find: 'v.minLength(DISPUTE_REASON_LENGTH.min, `must not be empty or blank: send ${DISPUTE_REASON}`),',
        replace: '',
      },
    ],
    test: 'tests/security/jobAttacks.test.ts',
    name: 'without a reason',
  },
  {
    id: 'proof-digest-identity',
    what: 'a wallet proof is spent by the digest the wallet signed, not the signature bytes as sent',
    edits: [
      {
        file: PROOF,
        find: "return outcome === 'ok' ? { ok: true, id: hash, at } : { ok: false, reason: outcome }",
        replace:
          "return outcome === 'ok' ? { ok: true, id: keccak256(signature), at } : { ok: false, reason: outcome }",
      },
    ],
    test: 'tests/security/walletProofs.test.ts',
    name: 'signed digest',
  },
  {
    id: 'signature-high-s',
    what: "a 65-byte signature with a high s (another's signature re-encoded) is refused",
    edits: [
      {
        file: 'packages/core/src/SignatureCheck.ts',
        find: 'if (isAddressEqual(wallet, zeroAddress) || isHighS(signature)) return',
        replace: 'if (isAddressEqual(wallet, zeroAddress)) return',
      },
    ],
    test: 'tests/security/walletProofs.test.ts',
    name: 'signed digest',
  },
  {
    id: 'eip191-where-named',
    what: 'the deprecated EIP-191 proof is taken only where CONTRACT.md names it',
    edits: [
      {
        file: 'packages/core/src/actions/users/walletProof.ts',
        find: "if (proof.signature && !typed && schemes === 'eip712') throw eip712Required(context, request)",
        replace: '',
      },
    ],
    test: 'tests/security/walletProofs.test.ts',
    name: 'EIP-191',
  },
  {
    id: 'smtp-per-address',
    what: 'one address holds at most its share of SMTP connections, so it cannot close the mailbox',
    edits: [{ file: ADDRESS_SLOTS, find: 'if (held >= limits.perClient)', replace: 'if (held < 0)' }],
    test: 'packages/server/src/mail/listener.test.ts',
    name: 'one address opening many connections',
  },
  {
    id: 'smtp-reserve',
    what: 'the last SMTP slots are kept for addresses holding none',
    edits: [
      {
        file: ADDRESS_SLOTS,
        find: 'if ((held > 0 || siteHeld > 0) && open >= shared)',
        replace: 'if (held < 0)',
      },
    ],
    test: 'packages/server/src/mail/listener.test.ts',
    name: 'cannot take the reserve',
  },
  {
    id: 'smtp-session-lifetime',
    what: 'NOOP, RSET and HELO do not keep an SMTP session past its lifetime',
    edits: [
      {
        file: 'packages/server/src/mail/listener.ts',
        find: 'if (session.ended || now - session.startedAt < lifetimeMs) return false',
        replace: 'return false',
      },
    ],
    test: 'packages/server/src/mail/listener.test.ts',
    name: 'past its lifetime',
  },
  {
    id: 'trust-vote-weight',
    what: 'a rating weighs what its wallet paid, so cheap purchases cannot sabotage a seller',
    edits: [
      {
        file: 'packages/core/src/Trust.ts',
        find: 'return Number(weight < 1000n ? weight : 1000n)',
        replace: 'return weight < 0n ? 0 : 1000',
      },
    ],
    test: 'packages/core/src/adapters/memoryStore.test.ts',
    name: 'eight rival wallets',
  },
  {
    id: 'trust-newcomers-one-buyer',
    what: 'wallets without independent history count together as one buyer, so a ring of fresh wallets earns little',
    edits: [
      {
        file: 'packages/core/src/Trust.ts',
        find: 'history.elsewhereBaseUnits >= STANDING_ELSEWHERE_BASE_UNITS &&',
        replace: 'true ||',
      },
    ],
    test: 'packages/core/src/adapters/memoryStore.test.ts',
    name: 'fresh wallets',
  },
  {
    id: 'seller-key',
    what: "only the seller's key completes its tasks (the access matrix, every interface)",
    edits: [
      {
        file: 'packages/core/src/actions/context.ts',
        find: 'return constantTimeEqual(agent.apiKeyHash, hash) ? agent : refuseKey(context, agent.name, hash)',
        replace: 'return agent',
      },
    ],
    test: 'tests/security/access/access.test.ts',
    name: 'as otherSeller',
  },
  {
    id: 'result-reveal-after-acceptance',
    what: 'a result revealed after acceptance shows buyers only its commitment until completed, never after a rejection',
    edits: [
      {
        file: 'packages/core/src/TaskView.ts',
        find: "  if (task.reveal === 'on_delivery') return { result_url: task.resultUrl }",
        replace: '  return { result_url: task.resultUrl }',
      },
    ],
    test: 'tests/security/revealAttacks.test.ts',
    name: 'attack',
  },
  {
    id: 'result-reveal-a2a-state',
    what: 'A2A asks for the decision (no artifact) while only the commitment of a delivery shows',
    edits: [
      {
        file: 'packages/server/src/a2a/taskMapping.ts',
        find: "task.status === 'delivered' && task.result_url === undefined",
        replace: 'false',
      },
    ],
    test: 'tests/security/revealAttacks.test.ts',
    name: 'reads its delivery under review',
  },
  {
    id: 'linear-webhook-host',
    what: "a webhook URL's host is trimmed in linear time (a run of dots made /\\.+$/ quadratic)",
    edits: [
      {
        file: 'packages/core/src/Webhook.ts',
        find: "const host = withoutTrailing(parsed.hostname.toLowerCase(), '.')",
        replace: "const host = parsed.hostname.toLowerCase().replace(/\\.+$/, '')",
      },
    ],
    test: 'tests/security/costGuard.test.ts',
    name: 'run of dots',
  },
  {
    id: 'params-finite-numbers',
    what: 'params holding a number JSON cannot keep (1e999) are refused, not stored as null past the schema',
    edits: [
      {
        file: 'packages/core/src/Validation.ts',
        find: "    if (typeof item === 'number' && !Number.isFinite(item)) nonFinite = true\n",
        replace: '',
      },
    ],
    test: 'tests/security/schemaCost.test.ts',
    name: 'JSON cannot keep',
  },
  {
    id: 'dispute-visible-reason',
    what: 'a dispute reason must show text (zero-width spaces and fillers are not a reason)',
    edits: [
      { file: 'packages/core/src/TaskInput.ts', find: '      visibleText(DISPUTE_REASON),\n', replace: '' },
    ],
    test: 'tests/security/jobAttacks.test.ts',
    name: 'without a reason',
  },
  {
    id: 'log-url-origin',
    what: 'a URL in a logged error keeps only its origin (an RPC key in its path or query is never logged)',
    edits: [
      {
        file: 'packages/server/src/log.ts',
        find: 'const message = (text: string) => withoutUrlSecrets(text)',
        replace: 'const message = (text: string) => text',
      },
    ],
    test: 'packages/server/src/log.test.ts',
    name: 'RPC URL',
  },
  {
    id: 'escrow-deadline-bound',
    what: 'an escrow deposit pays only with a deadline its seller reaches (at most verification + sla_seconds + 1 h)',
    edits: [
      {
        file: 'packages/core/src/payments/Verifier.ts',
        find: "  if (deposit.slaDeadline > expected.latestSlaDeadline) return refuse('escrow_deadline_too_late')\n",
        replace: '',
      },
    ],
    test: 'tests/security/escrowDeadline.test.ts',
    name: 'an hour past the SLA',
  },
  {
    id: 'job-funding-buyer-wallet',
    what: "the job follower pays a task only with a funding by the order's buyer_wallet, never a copy of the fund call",
    edits: [
      {
        file: 'packages/core/src/actions/tasks/jobFollower.ts',
        find: "if (!task?.buyerWallet || !expected) return 'skipped'",
        replace: "if (!task || !expected) return 'skipped'",
      },
    ],
    test: 'tests/security/jobFrontRunning.test.ts',
    name: 'fund call',
  },
  {
    id: 'job-funded-by-seller',
    what: "a job funded from the seller's wallet or its owner's never pays (422 job_funded_by_seller)",
    edits: [
      {
        file: 'packages/core/src/actions/tasks/judging.ts',
        find: 'return own.some((wallet) => sameAddress(wallet, client))',
        replace: 'return own.some((wallet) => sameAddress(wallet, client)) && false',
      },
    ],
    test: 'tests/security/jobFrontRunning.test.ts',
    name: 'front-runs its buyer from its own wallet',
  },
  {
    id: 'a2a-list-page-first',
    what: 'A2A ListTasks reads and builds only its page, not the whole conversation',
    edits: [
      {
        file: A2A,
        find: 'return { shown: await this.views(entries.slice(offset, offset + pageSize)), total: entries.length }',
        replace:
          'const all = await this.views(entries)\n    return { shown: all.slice(offset, offset + pageSize), total: entries.length }',
      },
    ],
    test: 'tests/security/a2aListCost.test.ts',
    name: 'reads and builds one task',
  },
  {
    id: 'a2a-list-charge-per-task',
    what: 'A2A ListTasks spends a read token per task its page may hold (a full page with a state filter)',
    edits: [
      {
        file: 'packages/server/src/a2a/methods.ts',
        find: 'tokens: (params) => (isStateFilter(params.status) ? A2A_PAGE_MAX : a2aPageSize(params.pageSize)),',
        replace: 'tokens: () => 1,',
      },
    ],
    test: 'tests/security/a2aListCost.test.ts',
    name: 'spends a read per task',
  },
  {
    id: 'order-mail-header-limits',
    what: "an order e-mail's header past the limits is refused (552) before mailauth or postal-mime reads it",
    edits: [
      {
        file: 'packages/server/src/mail/listener.ts',
        find: '    if (refusal) throw smtpError(552, refusalText(refusal))\n',
        replace: '',
      },
    ],
    test: 'tests/security/costGuard.test.ts',
    name: 'a header past the limits',
  },
  {
    id: 'smtp-answer-no-task-id',
    what: 'the SMTP answer to an order (in clear, in the sending server’s logs) carries no task id',
    edits: [
      {
        file: 'packages/server/src/mail/listener.ts',
        find: "if (result.outcome === 'task') return '2.0.0 Order taken; the reply carries its task id'",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, as written
        replace: "if (result.outcome === 'task') return `2.0.0 Order taken: ${result.taskId}`",
      },
    ],
    test: 'tests/security/mailAbuse.test.ts',
    name: 'carries no task id',
  },
  {
    id: 'late-jobs-funder-standing',
    what: 'judged jobs weigh their funder’s standing: fresh wallets missing deadlines count together as one buyer',
    edits: [
      {
        file: 'packages/core/src/Trust.ts',
        find: '    if (row.established) {\n      totals.reliabilityVotes',
        replace: '    if (row.established || true) {\n      totals.reliabilityVotes',
      },
    ],
    test: 'packages/core/src/adapters/memoryStore.test.ts',
    name: "fund the victim's jobs",
  },
  {
    id: 'refunded-rating-not-counted',
    what: "a refunded buyer's rating counts in neither the public summary nor the trust score",
    edits: [
      {
        file: 'packages/core/src/Rating.ts',
        find: "return moneyState(task) !== 'refunded'",
        replace: "return moneyState(task) !== 'refunded' || true",
      },
    ],
    test: 'tests/security/ratingAttacks.test.ts',
    name: 'refunded buyer',
  },
  {
    id: 'settings-error-secrets',
    what: "a malformed setting is refused naming the variable, never quoting a secret or a URL's password or key",
    edits: [
      {
        file: 'packages/server/src/env.ts',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, as written
        find: "throw new SettingsError(`${shownSetting(name, raw ?? '')} is invalid",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, as written
        replace: "throw new SettingsError(`${name}=${JSON.stringify(raw ?? '')} is invalid",
      },
    ],
    test: 'tests/logs.test.ts',
    name: 'malformed setting',
  },
  {
    id: 'recheck-cap',
    what: 'a payment is re-checked in the background at most 12 times (about 40 minutes)',
    edits: [
      {
        file: 'packages/core/src/PaymentRechecks.ts',
        find: 'export const MAX_RECHECKS = 12',
        replace: 'export const MAX_RECHECKS = 1_000',
      },
    ],
    test: 'tests/security/unpaidTasks.test.ts',
    name: 're-checked at most 12 times',
  },
  {
    id: 'compiled-schema-bound',
    what: 'at most 1,000 compiled input-schema validators are kept in memory',
    edits: [
      {
        file: SCHEMA,
        find: 'const oldest = compiled.size >= MAX_COMPILED_SCHEMAS ? compiled.keys().next() : null',
        replace: 'const oldest = null as IteratorResult<string> | null',
      },
    ],
    test: 'packages/core/src/SkillInputSchema.test.ts',
    name: 'at most 1,000 compiled validators',
  },
  {
    id: 'compiled-schema-lru',
    what: 'past the bound the least recently used validator goes, so a flood of new schemas never drops one in use',
    edits: [{ file: SCHEMA, find: 'compiled.delete(oldest.value)', replace: 'compiled.clear()' }],
    test: 'packages/core/src/SkillInputSchema.test.ts',
    name: 'flood of new schemas',
  },
  {
    id: 'key-rotation-bucket',
    what: 'key rotations spend their own bucket, 10 an hour per address',
    edits: [
      {
        file: 'packages/core/src/routes/marketRoutes.ts',
        find: "    rate: 'keys',\n",
        replace: "    rate: 'write',\n",
      },
    ],
    test: 'tests/rateLimits.test.ts',
    name: 'key rotations',
  },
  {
    id: 'workers-base-url',
    what: "the Workers example's public address comes from BASE_URL, never from the first request's Host",
    edits: [
      {
        file: 'examples/fetch-handler/index.ts',
        find: 'config: defaultConfig(baseUrlOf(env))',
        replace: 'config: defaultConfig(new URL(request.url).origin)',
      },
    ],
    test: 'examples/fetch-handler/host.test.ts',
    name: 'forged Host',
  },
  {
    id: 'job-funding-sla-from-verify',
    what: "a job funding pays at verify-payment only while its deliverBy leaves the seller's whole SLA from then",
    edits: [
      {
        file: 'packages/core/src/payments/JobEscrow.ts',
        find: '    funded.deliverBy >= expected.judgedAt + sla &&\n',
        replace: '',
      },
    ],
    test: 'tests/security/jobLateVerify.test.ts',
    name: 'verif',
  },
  {
    id: 'job-late-needs-whole-sla',
    what: 'a job counts late only when its seller had its whole SLA after the market marked it paid',
    edits: [
      {
        file: 'packages/core/src/actions/tasks/jobSteps.ts',
        find: "  if (count === 'late' && !hadWholeSla(task)) return {}\n",
        replace: '',
      },
    ],
    test: 'tests/security/jobLateVerify.test.ts',
    name: 'follower running late',
  },
  {
    id: 'free-dispute-uncounted',
    what: "a rejection of a free task is its record, never a dispute on the seller's public profile",
    edits: [
      {
        file: 'packages/core/src/actions/tasks/jobSteps.ts',
        find: '      counts: disputeCounts(task),',
        replace: '      counts: { dispute: true },',
      },
    ],
    test: 'tests/security/freeDisputes.test.ts',
    name: 'free skill',
  },
  {
    id: 'job-still-funded-at-verify',
    what: 'verify-payment pays a job only while it is still funded on chain (not submitted on by its seller first)',
    edits: [
      {
        file: 'packages/core/src/actions/tasks/judging.ts',
        find: "      if (JOB_STATUSES[status] === 'funded') return verdict\n",
        replace: '      return verdict\n',
      },
    ],
    test: 'tests/security/jobLateVerify.test.ts',
    name: 'seller submits',
  },
  {
    id: 'slots-per-ipv6-48',
    what: 'one IPv6 /48 holds at most 8 times an address share of SMTP connections and feed streams, so it cannot fill the mailbox',
    edits: [
      {
        file: 'packages/core/src/AddressSlots.ts',
        find: "      if (siteHeld >= perNetwork) return { refused: 'network' }\n",
        replace: '',
      },
    ],
    test: 'packages/server/src/mail/connectionSlots.test.ts',
    name: 'one IPv6 /48',
  },
  {
    id: 'webhook-https-pinned',
    what: 'an HTTPS webhook connects to the address checked, so DNS rebinding cannot reach loopback',
    edits: [
      {
        file: 'packages/server/src/webhooks/transport.ts',
        find: '    ? tls.connect({ host: address ?? bare, port,',
        replace: '    ? tls.connect({ host: bare, port,',
      },
    ],
    test: 'tests/security/webhookRebinding.test.ts',
    name: 'attack',
  },
  {
    id: 'webhook-slot-reserve',
    what: 'the last webhook delivery slots go only to sellers with nothing in flight, so ten hanging sellers cannot hold them all',
    edits: [
      {
        file: 'packages/server/src/webhooks/delivery.ts',
        find: 'const reserveOnly = free <= WEBHOOK_IN_FLIGHT.reserve',
        replace: 'const reserveOnly = false',
      },
      {
        file: 'packages/server/src/webhooks/delivery.ts',
        find: 'reserveOnly ? free : free - WEBHOOK_IN_FLIGHT.reserve',
        replace: 'free',
      },
    ],
    test: 'tests/security/webhookFairness.test.ts',
    name: 'ten sellers of one client',
  },
  // Issue 39: faults answered honestly, no duplicate on retry.
  {
    id: 'write-scope-unknown',
    what: 'a store fault after a write of the same request landed is outcome_unknown, never "nothing changed"',
    edits: [
      { file: WRITE_SCOPE, find: 'throw scope.wrote ? afterAWrite(error) : error', replace: 'throw error' },
      {
        file: WRITE_SCOPE,
        find: 'const answer = scope.wrote ? afterAWrite(error) : error',
        replace: 'const answer = error',
      },
    ],
    test: 'packages/core/src/routes/idempotentRows.test.ts',
    name: 'earlier write',
  },
  {
    id: 'idempotency-unknown-kept',
    what: 'a write whose outcome is unknown keeps its Idempotency-Key taken, so a retry never runs it twice',
    edits: [
      {
        file: IDEMPOTENCY,
        find: 'if (changedNothing(error)) await settle(',
        replace: 'if (true) await settle(',
      },
    ],
    test: 'packages/core/src/routes/idempotentRows.test.ts',
    name: 'outcome unknown',
  },
  {
    id: 'idempotency-settled-later',
    what: 'a key the store could not free when its request changed nothing is freed later, so the retry runs',
    edits: [{ file: IDEMPOTENCY, find: 'if (unsettled.size > 0) await settleEarlier(name)', replace: '' }],
    test: 'packages/core/src/routes/idempotentRows.test.ts',
    name: 'once the store takes writes',
  },
  {
    id: 'idempotency-answer-cap',
    what: 'an answer over 16 KiB is not kept, so fresh keys cannot make each write store its whole answer again',
    edits: [
      {
        file: IDEMPOTENCY,
        find: 'const tooLarge = !request.shownOnce && JSON.stringify(answer).length > MAX_KEPT_ANSWER_BYTES',
        replace: 'const tooLarge = false',
      },
    ],
    test: 'packages/core/src/routes/idempotentRows.test.ts',
    name: 'whole-profile',
  },
  {
    id: 'idempotency-in-use',
    what: 'a retry while the first request under a key is under way waits (409 idempotency_key_in_use), never runs',
    edits: [
      {
        file: IDEMPOTENCY,
        find: "if (entry.state === 'running' && left > 0) throw new IdempotencyKeyInUseError(Math.ceil(left / 1000))",
        replace: '',
      },
    ],
    test: 'packages/core/src/routes/idempotentRows.test.ts',
    name: 'under way',
  },
  {
    id: 'idempotency-body',
    what: 'a key sent with another body is 409 idempotency_key_reused, never the first answer (or its secret)',
    edits: [
      {
        file: IDEMPOTENCY,
        find: 'if (entry.fingerprint !== request.fingerprint)',
        replace: "if (entry.fingerprint === '')",
      },
    ],
    test: 'tests/security/idempotency.test.ts',
    name: 'another body',
  },
  {
    id: 'idempotency-scope',
    what: "keys are scoped by client and credential: a stranger's same key and body never gets the first answer",
    edits: [{ file: IDEMPOTENT_ROWS, find: 'scope: scopeOf(row, call),', replace: 'scope: row.path,' }],
    test: 'tests/security/idempotency.test.ts',
    name: 'replaying',
  },
  {
    id: 'idempotency-secret-window',
    what: 'an answer holding a secret shown once is replayed for 10 minutes only',
    edits: [
      {
        file: IDEMPOTENCY,
        find: 'replayUntil: request.shownOnce ? now + SECRET_REPLAY_MS : forgetAt,',
        replace: 'replayUntil: forgetAt,',
      },
    ],
    test: 'tests/security/idempotency.test.ts',
    name: '10-minute window',
  },
  {
    id: 'health-probe-shared',
    what: 'health probes that arrive while one runs share it, so a probe flood costs one database ping at a time',
    edits: [
      {
        file: 'packages/server/src/routes/discovery.ts',
        find: 'databaseProbe ??= probe(',
        replace: 'databaseProbe = probe(',
      },
    ],
    test: 'packages/server/src/routes/health.test.ts',
    name: 'flood of readiness probes',
  },
  {
    id: 'postgres-maybe-sent',
    what: 'a PostgreSQL write cut off after it was sent answers outcome_unknown, never "nothing changed"',
    edits: [
      {
        file: PG_FAULTS,
        find: "return new StoreUnavailableError(wrote && fault.sent ? 'unknown' : 'unchanged', { cause: error })",
        replace: "return new StoreUnavailableError('unchanged', { cause: error })",
      },
    ],
    test: 'packages/store-postgres/src/faults.test.ts',
    name: 'already sent',
  },
  {
    id: 'postgres-deadline-unknown',
    what: 'a PostgreSQL write past its deadline answers outcome_unknown (it may still commit)',
    edits: [
      {
        file: PG_FAULTS,
        find: "() => new StoreUnavailableError(wrote ? 'unknown' : 'unchanged'),",
        replace: "() => new StoreUnavailableError('unchanged'),",
      },
    ],
    test: 'packages/store-postgres/src/faults.test.ts',
    name: 'deadline path',
  },
  {
    id: 'libsql-lock-wait-off-loop',
    what: "a libSQL write waits for another process's write lock on timers, not inside SQLite (the event loop stays free)",
    edits: [
      {
        file: 'packages/store-libsql/src/open.ts',
        find: "connection.exec('PRAGMA busy_timeout = 0')",
        replace: "connection.exec('PRAGMA busy_timeout = 1000')",
      },
    ],
    test: 'packages/store-libsql/src/lockWait.test.ts',
    name: 'event loop free',
  },
  {
    id: 'libsql-lone-writes-wait',
    what: 'every libSQL write, lone statements included, waits for a lock held a moment by another process',
    edits: [
      {
        file: 'packages/store-libsql/src/connection.ts',
        find: 'unlocked: (write) => whenUnlocked(write, LOCK_WAIT_MS),',
        replace: 'unlocked: async (write) => write(),',
      },
    ],
    test: 'packages/store-libsql/src/lockWait.test.ts',
    name: 'find the lock held once',
  },
  {
    id: 'postgres-down-one-probe',
    what: 'a PostgreSQL database found down is waited on once per request: one call at a time finds out, the rest answer at once',
    edits: [
      {
        file: PG_FAULTS,
        find: 'if (!progress?.down) return admittedCall(call, limits)',
        replace: 'return admittedCall(call, limits)',
      },
    ],
    test: 'packages/store-postgres/src/faults.test.ts',
    name: 'found down',
  },
  {
    id: 'fault-answer-not-held-by-key-ending',
    what: "after a store fault the answer does not wait for the key's ending to be written",
    edits: [
      {
        file: IDEMPOTENCY,
        find: 'if (!(error instanceof StoreUnavailableError || error instanceof StorageFullError)) await ending',
        replace: 'await ending',
      },
    ],
    test: 'packages/core/src/routes/idempotentRows.test.ts',
    name: 'does not wait for the key',
  },
  {
    id: 'postgres-connect-fault-down',
    what: 'a PostgreSQL call that could get no connection marks the database down for the calls after it',
    edits: [
      {
        file: PG_FAULTS,
        find: "if (NOT_THERE.has(faultCode(error)?.code ?? '')) progress.down = true",
        replace: '',
      },
    ],
    test: 'packages/store-postgres/src/faults.test.ts',
    name: 'refuses connections is down at once',
  },
  {
    id: 'postgres-no-extension-while-down',
    what: 'no PostgreSQL call gets a deadline extension while the database is known to be down',
    edits: [
      {
        file: PG_PROGRESS,
        find: 'const idle = progress.completed === seen || progress.down === true',
        replace: 'const idle = progress.completed === seen',
      },
    ],
    test: 'packages/store-postgres/src/faults.test.ts',
    name: 'shutting down',
  },
  {
    id: 'postgres-admission-unsent',
    what: 'a PostgreSQL call waits for a turn (one per connection) and is refused unsent past its deadline, never queued in the driver to be sent late',
    edits: [
      {
        file: PG_ADMISSION,
        find: 'if (admission.out < admission.slots && admission.waiting.length === 0) {',
        replace: 'if (admission.out >= 0) {',
      },
    ],
    test: 'packages/store-postgres/src/admission.test.ts',
    name: 'refused unsent',
  },
  {
    id: 'postgres-admission-busy-waits',
    what: 'a PostgreSQL call waiting for a turn while other calls complete is waited on, never refused by the clock (a busy pool answers by its work, not by the machine speed)',
    edits: [
      {
        file: PG_ADMISSION,
        find: 'const cancel = patience(progress, windows, timer, () => {',
        replace: 'const cancel = timer.start(windows.first, () => {',
      },
    ],
    test: 'packages/store-postgres/src/admission.test.ts',
    name: 'not refused by the clock',
  },
  {
    id: 'postgres-request-waits-once',
    what: "a request's PostgreSQL calls share one wait (DATABASE_REQUEST_TIMEOUT_MS in all), not one per call",
    edits: [
      {
        file: PG_ADMISSION,
        find: 'return request ? ms - (waitedByRequest.get(request) ?? 0) : ms',
        replace: 'return ms',
      },
    ],
    test: 'packages/store-postgres/src/admission.test.ts',
    name: 'waits its bound once in all',
  },
  {
    id: 'postgres-admission-deadline-order',
    what: 'calls waiting for a PostgreSQL turn go in deadline order: a request under way before one that just came',
    edits: [
      {
        file: PG_ADMISSION,
        find: 'const at = admission.waiting.findIndex((other) => other.deadline > deadline)',
        replace: 'const at = -1',
      },
    ],
    test: 'packages/store-postgres/src/admission.test.ts',
    name: 'ordered by deadline',
  },
  {
    id: 'chain-request-budget',
    what: 'the chain calls of one request share one time budget (a frozen RPC costs one budget, not a bound per call)',
    edits: [{ file: CHAIN_BUDGET, find: 'if (!budget) return boundMs', replace: 'return boundMs' }],
    test: 'tests/faults/chainBudget.test.ts',
    name: 'x402 order against a frozen RPC',
  },
  {
    id: 'a2a-chain-budget',
    what: "an A2A message's chain calls share one time budget, as an HTTP request's do",
    edits: [
      {
        file: A2A,
        find: 'return await inChainBudget(this.market.config.chain.requestBudgetMs, () =>',
        replace: 'return await inChainBudget(600_000, () =>',
      },
    ],
    test: 'tests/faults/chainBudget.test.ts',
    name: 'inside A2A',
  },
  {
    id: 'mpp-chain-budget',
    what: "an MPP order's Tempo calls share the request's chain budget (the server's Tempo client is budgeted)",
    edits: [
      {
        file: 'packages/server/src/serve.ts',
        find: 'transport: budgetedTransport(http(rpcUrl, { retryCount: 0, timeout: 10_000 })),',
        replace: 'transport: http(rpcUrl, { retryCount: 0, timeout: 10_000 }),',
      },
    ],
    test: 'tests/faults/chainBudget.test.ts',
    name: 'MPP order',
  },
  {
    id: 'idempotency-quota',
    what: 'answers kept for Idempotency-Key replays are held to a quota per client (address, /48, API key)',
    edits: [
      {
        file: IDEMPOTENCY,
        find: 'charge(request, bytes, Math.floor(now / HOUR_MS)).catch(() => true)',
        replace: 'Promise.resolve(true)',
      },
    ],
    test: 'packages/core/src/routes/idempotentRows.test.ts',
    name: 'quota of answers kept',
  },
  {
    id: 'secret-replay-needs-working-key',
    what: 'a replay of an answer holding a secret shown once needs the API key it was sent with to still work',
    edits: [
      {
        file: IDEMPOTENCY,
        find: 'if (request.shownOnce && request.credentialValid && !(await request.credentialValid()))',
        replace: 'if (request.shownOnce && request.credentialValid && false)',
      },
    ],
    test: 'tests/security/keyRotation.test.ts',
    name: 'rotated-away key replaying',
  },
]
