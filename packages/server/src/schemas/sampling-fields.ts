import { type TSchema, Type } from '@sinclair/typebox';

/** `T | null`, as OpenAI's schemas allow null for every optional parameter. */
export function Nullable<T extends TSchema>(schema: T, description?: string) {
  return Type.Union([schema, Type.Null()], description ? { description } : {});
}

/** Largest `n` and number of logprobs one request may ask for (vLLM's defaults). */
export const MAX_N = 128;
export const MAX_LOGPROBS = 20;

/**
 * Request fields shared by `/v1/completions` and `/v1/chat/completions`: OpenAI's sampling parameters
 * plus vLLM's extra fields. Ranges follow OpenAI's API reference; extra fields follow vLLM.
 * Unknown fields are accepted and ignored, as OpenAI clients send fields newer than this server.
 */
export const samplingFields = {
  // Optional, as vLLM, SGLang and llama.cpp take it: a request without it goes to the served model.
  model: Type.Optional(Nullable(Type.String({ minLength: 1 }))),
  max_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  temperature: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 2 }))),
  top_p: Type.Optional(Nullable(Type.Number({ exclusiveMinimum: 0, maximum: 1 }))),
  n: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: MAX_N }))),
  stream: Type.Optional(Nullable(Type.Boolean())),
  stream_options: Type.Optional(
    Nullable(Type.Object({ include_usage: Type.Optional(Nullable(Type.Boolean())) })),
  ),
  stop: Type.Optional(
    Nullable(
      Type.Union([Type.String(), Type.Array(Type.String({ minLength: 1 }))]),
      'a string or an array of strings',
    ),
  ),
  // The engine's seeds are exact integers: beyond 2^53 a JSON number no longer is one.
  seed: Type.Optional(
    Nullable(Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER })),
  ),
  presence_penalty: Type.Optional(Nullable(Type.Number({ minimum: -2, maximum: 2 }))),
  frequency_penalty: Type.Optional(Nullable(Type.Number({ minimum: -2, maximum: 2 }))),
  logit_bias: Type.Optional(
    Nullable(
      Type.Record(Type.String({ pattern: '^[0-9]+$' }), Type.Number({ minimum: -100, maximum: 100 })),
      'an object mapping token ids to biases in [-100, 100]',
    ),
  ),
  user: Type.Optional(Nullable(Type.String())),
  // vLLM's extra sampling fields.
  top_k: Type.Optional(Nullable(Type.Integer({ minimum: -1 }))),
  min_p: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
  repetition_penalty: Type.Optional(Nullable(Type.Number({ exclusiveMinimum: 0 }))),
  ignore_eos: Type.Optional(Nullable(Type.Boolean())),
  min_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
  stop_token_ids: Type.Optional(Nullable(Type.Array(Type.Integer({ minimum: 0 })))),
  skip_special_tokens: Type.Optional(Nullable(Type.Boolean())),
  include_stop_str_in_output: Type.Optional(Nullable(Type.Boolean())),
  priority: Type.Optional(Nullable(Type.Integer())),
};
