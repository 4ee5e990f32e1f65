import { SkillInput, SkillObject } from '@agentmarket/core'
import { type ConversionConfig, type JsonSchema, toJsonSchema } from '@valibot/to-json-schema'
import type { GenericSchema } from 'valibot'

const CONFIG: ConversionConfig = {
  target: 'draft-2020-12',
  typeMode: 'input',
  errorMode: 'ignore',
  // SkillInput turns a string into an object before checking it, which converts to {}: refer to a component instead.
  definitions: { SkillInput },
  overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
  // Page numbers accept a JSON number or query-string digits; the document says what they mean: an integer.
  overrideAction: ({ valibotAction, jsonSchema }) => {
    if (valibotAction.type !== 'integer' || !jsonSchema.anyOf) return undefined
    const { anyOf: _either, ...integer } = jsonSchema
    return integer
  },
}

/** JSON Schema (draft 2020-12, input side) of a valibot schema, as OpenAPI 3.1 embeds it. */
export function jsonSchemaOf(schema: GenericSchema): JsonSchema {
  const { $schema: _dialect, $defs: _definitions, ...rest } = toJsonSchema(schema, CONFIG)
  return rest
}

let skillInput: JsonSchema | undefined

/** The component a skill list item refers to: a name, or a skill object (converted on first use, not at start). */
export function skillInputSchema(): JsonSchema {
  skillInput ??= {
    oneOf: [
      { type: 'string', minLength: 1, maxLength: 100, description: 'A free skill of that name.' },
      jsonSchemaOf(SkillObject),
    ],
  }
  return skillInput
}
