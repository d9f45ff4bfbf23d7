import { type Static, Type } from '@sinclair/typebox';
import { ChatRequestSchema } from './chat-request.js';

/** Body of `POST /tokenize` (vLLM's shape): either a completion prompt or chat messages. */
export const TokenizeRequestSchema = Type.Union(
  [
    Type.Object({
      model: Type.Optional(Type.String()),
      prompt: Type.String(),
      add_special_tokens: Type.Optional(Type.Boolean()),
      return_token_strs: Type.Optional(Type.Boolean()),
    }),
    Type.Object({
      model: Type.Optional(Type.String()),
      messages: ChatRequestSchema.properties.messages,
      tools: ChatRequestSchema.properties.tools,
      add_generation_prompt: Type.Optional(Type.Boolean()),
      add_special_tokens: Type.Optional(Type.Boolean()),
      chat_template_kwargs: ChatRequestSchema.properties.chat_template_kwargs,
      return_token_strs: Type.Optional(Type.Boolean()),
    }),
  ],
  { description: 'an object with either `prompt` or `messages`' },
);

export type TokenizeRequest = Static<typeof TokenizeRequestSchema>;

/** Body of `POST /detokenize` (vLLM's shape). */
export const DetokenizeRequestSchema = Type.Object({
  model: Type.Optional(Type.String()),
  tokens: Type.Array(Type.Integer({ minimum: 0 })),
});

export type DetokenizeRequest = Static<typeof DetokenizeRequestSchema>;
