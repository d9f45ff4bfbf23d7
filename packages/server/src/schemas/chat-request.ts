import { type Static, Type } from '@sinclair/typebox';
import { MAX_LOGPROBS, Nullable, samplingFields } from './sampling-fields.js';

const ContentPart = Type.Object({ type: Type.String(), text: Type.Optional(Type.String()) });

const ToolCall = Type.Object({
  id: Type.String(),
  type: Type.Literal('function'),
  function: Type.Object({ name: Type.String(), arguments: Type.String() }),
});

const Message = Type.Object({
  role: Type.Union(
    ['system', 'developer', 'user', 'assistant', 'tool'].map((role) => Type.Literal(role)),
    { description: 'one of system, developer, user, assistant, tool' },
  ),
  content: Type.Optional(
    Nullable(Type.Union([Type.String(), Type.Array(ContentPart)]), 'a string or an array of content parts'),
  ),
  name: Type.Optional(Type.String()),
  tool_calls: Type.Optional(Nullable(Type.Array(ToolCall))),
  tool_call_id: Type.Optional(Type.String()),
});

const Tool = Type.Object({
  type: Type.Literal('function'),
  function: Type.Object({
    name: Type.String({ minLength: 1 }),
    description: Type.Optional(Type.String()),
    parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }),
});

const ToolChoice = Type.Union(
  [
    Type.Literal('none'),
    Type.Literal('auto'),
    Type.Literal('required'),
    Type.Object({ type: Type.Literal('function'), function: Type.Object({ name: Type.String() }) }),
  ],
  { description: '"none", "auto", "required" or {"type": "function", "function": {"name": ...}}' },
);

/** Body of `POST /v1/chat/completions` (OpenAI's chat API with vLLM's extras). */
export const ChatRequestSchema = Type.Object({
  ...samplingFields,
  messages: Type.Array(Message, { minItems: 1 }),
  max_completion_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  logprobs: Type.Optional(Nullable(Type.Boolean())),
  top_logprobs: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: MAX_LOGPROBS }))),
  tools: Type.Optional(Nullable(Type.Array(Tool))),
  tool_choice: Type.Optional(Nullable(ToolChoice)),
  parallel_tool_calls: Type.Optional(Nullable(Type.Boolean())),
  response_format: Type.Optional(
    Nullable(Type.Object({ type: Type.Literal('text') }), '{"type": "text"}, the only format supported'),
  ),
  chat_template_kwargs: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
  add_generation_prompt: Type.Optional(Nullable(Type.Boolean())),
  continue_final_message: Type.Optional(Nullable(Type.Boolean())),
});

export type ChatRequest = Static<typeof ChatRequestSchema>;
export type ChatRequestMessage = Static<typeof Message>;
export type ChatRequestTool = Static<typeof Tool>;
