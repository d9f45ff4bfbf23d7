import { type Static, Type } from '@sinclair/typebox';
import { MAX_LOGPROBS, Nullable, samplingFields } from './sampling-fields.js';

const TokenIds = Type.Array(Type.Integer({ minimum: 0 }), { minItems: 1 });

/** Body of `POST /v1/completions` (OpenAI's legacy completions API with vLLM's extras). */
export const CompletionRequestSchema = Type.Object({
  ...samplingFields,
  prompt: Type.Union(
    [
      Type.String(),
      Type.Array(Type.String(), { minItems: 1 }),
      TokenIds,
      Type.Array(TokenIds, { minItems: 1 }),
    ],
    { description: 'a string, an array of strings, an array of token ids, or an array of those' },
  ),
  logprobs: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: MAX_LOGPROBS }))),
  echo: Type.Optional(Nullable(Type.Boolean())),
  suffix: Type.Optional(Type.Null({ description: 'null: suffixes are not supported' })),
  best_of: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  add_special_tokens: Type.Optional(Nullable(Type.Boolean())),
});

export type CompletionRequest = Static<typeof CompletionRequestSchema>;
