import * as v from 'valibot'
import { InvalidInputError } from './errors.ts'
import { amountToNumber, MAX_PRICE_BASE_UNITS, toBaseUnits } from './Money.ts'
import { type SkillInputSchema, SkillInputSchemaInput } from './SkillInputSchema.ts'
import { withoutEnds, withoutTrailing } from './Trim.ts'
import { boundedText, HttpUrl, strictFields } from './Validation.ts'

/** A skill is either free or sold per order. */
export type SkillType = 'free' | 'purchasable'

/**
 * When a delivery's `result_url` is shown to anyone but its seller: at once (`on_delivery`, the default), or only once
 * the task is completed (`after_acceptance`: accepted, or accepted by silence); until then, and forever after a
 * rejection, its keccak256 (`result_commitment`, the job escrow's `deliverable`). docs/jobs.md.
 */
export const RESULT_REVEALS = ['on_delivery', 'after_acceptance'] as const
/** When a delivery's result is shown (RESULT_REVEALS). */
export type ResultReveal = (typeof RESULT_REVEALS)[number]

/** A skill as the core keeps it: prices in base units, never floats. */
export type SkillRecord = {
  name: string
  slug: string
  description: string | null
  type: SkillType
  priceBaseUnits: bigint | null
  currency: 'USDC'
  sla: string | null
  /** The promised delivery time after payment, in seconds: paid tasks carry `due_at`; null: no deadline. */
  slaSeconds: number | null
  /** Seconds the buyer has to accept or reject a delivery (silence accepts); 0: a delivery completes the task at once. */
  reviewSeconds: number
  /** When its deliveries' results are shown to buyers: at once, or only after acceptance. */
  reveal: ResultReveal
  url: string | null
  /** The JSON Schema its orders' params must fit; null: any JSON object. */
  input: SkillInputSchema | null
}

/** The longest delivery time a skill may promise: 365 days. */
export const MAX_SLA_SECONDS = 365 * 24 * 60 * 60
/** The longest review window a skill may give its buyers: 30 days. */
export const MAX_REVIEW_SECONDS = 30 * 24 * 60 * 60

/** A skill as the API shows it. */
export type SkillView = {
  name: string
  slug: string
  description: string | null
  type: SkillType
  price: number | null
  currency: 'USDC'
  sla: string | null
  /** The promised delivery time after payment, in seconds; null: none. */
  sla_seconds: number | null
  /** The buyer's review window after a delivery, in seconds; 0: none. */
  review_seconds: number
  /** When a delivery's result_url is shown to its buyer: `on_delivery`, or `after_acceptance` (a commitment before). */
  reveal: ResultReveal
  url: string | null
  /** The JSON Schema (2020-12) its orders' params must fit; null: any JSON object. */
  input: SkillInputSchema | null
}

/** At most this many skills per agent. */
export const MAX_SKILLS = 50
const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/

/** Lower-case, ASCII, hyphen-separated form of a name: "Web Search!" -> "web-search". */
export function slugify(name: string): string {
  const hyphenated = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
  return withoutTrailing(withoutEnds(hyphenated, '-').slice(0, 64), '-')
}

/** A whole number of seconds from `min` to `max`. */
const wholeSeconds = (min: number, max: number) =>
  v.pipe(
    v.number('must be a number of seconds'),
    v.integer('must be a whole number of seconds'),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max} seconds`),
  )

/** A USDC amount on the wire (a number or a decimal string, at most 6 decimals, 0-1,000,000), as base units. */
export const Price = v.pipe(
  v.union([v.number(), v.string()], 'must be a number'),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const base = toBaseUnits(dataset.value)
    if (base === null || base > MAX_PRICE_BASE_UNITS) {
      addIssue({ message: 'must be a decimal from 0 to 1000000 with at most 6 decimal places' })
      return NEVER
    }
    return base
  }),
)

/** A skill object on the wire (the object form of SkillInput), checked and turned into a SkillRecord. */
export const SkillObject = v.pipe(
  strictFields(
    {
      name: boundedText(100, 1),
      description: v.optional(boundedText(1000)),
      type: v.optional(v.picklist(['free', 'purchasable'], 'must be "free" or "purchasable"'), 'free'),
      price: v.optional(Price),
      currency: v.optional(v.literal('USDC', 'must be "USDC"'), 'USDC'),
      sla: v.optional(boundedText(100)),
      sla_seconds: v.optional(wholeSeconds(1, MAX_SLA_SECONDS)),
      review_seconds: v.optional(wholeSeconds(0, MAX_REVIEW_SECONDS)),
      reveal: v.optional(
        v.pipe(
          v.picklist(RESULT_REVEALS, `must be one of ${RESULT_REVEALS.map((r) => `"${r}"`).join(', ')}`),
          v.description(
            'When buyers see a delivery\'s result_url: "on_delivery" (the default) or "after_acceptance" (needs review_seconds of at least 1): only once the task is completed (the buyer accepts, or review_until passes in silence) and never after a rejection; until then result_commitment, the keccak256 of the URL (a job escrow\'s deliverable). The seller always reads its own result_url.',
          ),
        ),
      ),
      slug: v.optional(
        v.pipe(
          v.string('must be a string'),
          v.maxLength(64, 'must be at most 64 characters'),
          v.regex(SLUG_PATTERN, 'must be lower-case letters and digits separated by single hyphens'),
        ),
      ),
      url: v.optional(HttpUrl),
      input: v.optional(SkillInputSchemaInput),
    },
    'must be a skill name or a skill object',
  ),
  v.forward(
    v.check(
      (skill) => skill.type !== 'purchasable' || (skill.price ?? 0n) > 0n,
      'a purchasable skill needs a price greater than 0',
    ),
    ['price'],
  ),
  v.forward(
    v.check((skill) => skill.type !== 'free' || !skill.price, 'a free skill has no price'),
    ['price'],
  ),
  v.forward(
    v.check(
      (skill) => skill.reveal !== 'after_acceptance' || (skill.review_seconds ?? 0) > 0,
      'a result revealed after acceptance needs a review window: set review_seconds to at least 1 (or drop reveal)',
    ),
    ['reveal'],
  ),
  v.forward(
    v.check(
      (skill) => skill.slug !== undefined || slugify(skill.name) !== '',
      'name has no letters or digits for a slug; send a slug',
    ),
    ['slug'],
  ),
  v.transform(
    (skill): SkillRecord => ({
      name: skill.name,
      slug: skill.slug ?? slugify(skill.name),
      description: skill.description ?? null,
      type: skill.type,
      priceBaseUnits: skill.type === 'purchasable' ? (skill.price ?? null) : null,
      currency: skill.currency,
      sla: skill.sla ?? null,
      slaSeconds: skill.sla_seconds ?? null,
      reviewSeconds: skill.review_seconds ?? 0,
      reveal: skill.reveal ?? 'on_delivery',
      url: skill.url ?? null,
      input: skill.input ?? null,
    }),
  ),
)

/** One skill on the wire: a plain string means a free skill of that name. */
export const SkillInput = v.pipe(
  v.unknown(),
  v.transform((item) => (typeof item === 'string' ? { name: item } : item)),
  SkillObject,
)

/** The whole skills list of an agent; slugs must be unique within it. */
export const SkillListInput = v.pipe(
  v.array(SkillInput, 'must be an array of skills'),
  v.maxLength(MAX_SKILLS, `must have at most ${MAX_SKILLS} skills`),
)

/** Throws a 400 pointing at the first skill whose slug repeats an earlier one. */
export function assertUniqueSlugs(skills: readonly SkillRecord[]): void {
  const seen = new Set<string>()
  skills.forEach((skill, index) => {
    if (seen.has(skill.slug)) {
      const detail = `slug "${skill.slug}" is used by an earlier skill of this agent`
      throw new InvalidInputError(
        'invalid_body',
        `The request body is invalid (/skills/${index}/slug: ${detail}).`,
        [{ pointer: `/skills/${index}/slug`, detail }],
      )
    }
    seen.add(skill.slug)
  })
}

/** The wire form of a skill. */
export function toSkillView(skill: SkillRecord): SkillView {
  return {
    name: skill.name,
    slug: skill.slug,
    description: skill.description,
    type: skill.type,
    price: skill.priceBaseUnits === null ? null : amountToNumber(skill.priceBaseUnits),
    currency: skill.currency,
    sla: skill.sla,
    sla_seconds: skill.slaSeconds,
    review_seconds: skill.reviewSeconds,
    reveal: skill.reveal,
    url: skill.url,
    input: skill.input,
  }
}
