import type { FastifyInstance, FastifyReply } from 'fastify';
import { ChatChoiceOutput, type ToolCallBody } from '../chat-choice-output.js';
import { renderChatPrompt } from '../chat-prompt.js';
import { type GenerationRun, startGeneration } from '../generation-run.js';
import { type ChatLogprob, chatLogprobs } from '../logprobs-format.js';
import { invalidRequest } from '../openai-error.js';
import {
  checkModel,
  finishReasonOf,
  type RouteContext,
  responseId,
  UsageTotal,
  unixSeconds,
} from '../route-context.js';
import { samplingFromRequest } from '../sampling-from-request.js';
import { type ChatRequest, ChatRequestSchema } from '../schemas/chat-request.js';
import { abortOnDisconnect, sendSse } from '../sse.js';

/** Fixed fields of every chat response and chunk. */
interface Header {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

/** How one request's choices are produced and reported. */
interface ChatPlan {
  readonly header: Header;
  readonly outputs: ChatChoiceOutput[];
  /** Alternatives per token when logprobs were asked for, else null. */
  readonly topLogprobs: number | null;
  readonly context: RouteContext;
}

/** `POST /v1/chat/completions`: the chat template renders messages (and tools); `n` choices. */
export function registerChatCompletionsRoute(app: FastifyInstance, context: RouteContext): void {
  app.post('/v1/chat/completions', { schema: { body: ChatRequestSchema } }, async (request, reply) => {
    const body = request.body as ChatRequest;
    checkModel(context, body.model);
    const useTools = toolsEnabled(body);
    if (body.top_logprobs != null && !body.logprobs) {
      throw invalidRequest('top_logprobs requires logprobs to be true', 'top_logprobs');
    }
    const { engine } = context;
    const prompt = renderChatPrompt(engine.tokenizer, {
      messages: body.messages,
      tools: useTools ? body.tools : null,
      addGenerationPrompt: body.add_generation_prompt,
      chatTemplateKwargs: body.chat_template_kwargs,
    });
    const topLogprobs = body.logprobs ? (body.top_logprobs ?? 0) : null;
    const sampling = samplingFromRequest(body, {
      maxTokens: body.max_completion_tokens ?? body.max_tokens,
      logprobs: topLogprobs,
      longestPromptTokens: prompt.tokenIds.length,
      maxModelLen: context.maxModelLen,
      vocabSize: engine.modelInfo.config.vocabSize,
    });
    const header: Header = {
      id: responseId('chatcmpl'),
      created: unixSeconds(),
      model: context.servedModelName,
    };
    const run = startGeneration(engine, [
      {
        id: header.id,
        prompt: { tokenIds: prompt.tokenIds },
        sampling,
        priority: body.priority ?? undefined,
      },
    ]);
    abortOnDisconnect(reply, run);
    const syntax = useTools ? context.toolCallSyntax : null;
    const plan: ChatPlan = {
      header,
      outputs: Array.from({ length: sampling.n ?? 1 }, () => new ChatChoiceOutput(syntax)),
      topLogprobs,
      context,
    };
    if (body.stream) {
      const events = streamEvents(run, plan, body.stream_options?.include_usage === true);
      return sendSse(reply, events, context.retryAfterSeconds);
    }
    return collect(run, plan, reply);
  });
}

/** Tools are rendered and parsed unless `tool_choice` is "none"; forcing a call needs guided decoding. */
function toolsEnabled(body: ChatRequest): boolean {
  const choice = body.tool_choice ?? 'auto';
  if (choice === 'required' || typeof choice === 'object') {
    throw invalidRequest(
      'tool_choice "required" or a named function is not supported; use "auto"',
      'tool_choice',
    );
  }
  return choice === 'auto' && (body.tools?.length ?? 0) > 0;
}

function logprobsOf(plan: ChatPlan, entries: Parameters<typeof chatLogprobs>[0] | undefined) {
  if (plan.topLogprobs === null) return null;
  return { content: chatLogprobs(entries ?? [], plan.context.engine.tokenizer, plan.topLogprobs) };
}

function finishOf(reason: Parameters<typeof finishReasonOf>[0], toolCalls: readonly ToolCallBody[]) {
  const mapped = finishReasonOf(reason);
  return toolCalls.length > 0 && mapped === 'stop' ? 'tool_calls' : mapped;
}

async function* streamEvents(
  run: GenerationRun,
  plan: ChatPlan,
  includeUsage: boolean,
): AsyncGenerator<unknown> {
  const base = { ...plan.header, object: 'chat.completion.chunk' };
  const usage = new UsageTotal();
  const started = new Set<number>();
  for await (const { chunk } of run.chunks) {
    if (chunk.usage) usage.add(chunk.usage);
    const output = plan.outputs[chunk.index];
    let content = output.push(chunk.text);
    const end = chunk.finishReason ? output.finish() : null;
    if (end) content += end.content;
    const first = !started.has(chunk.index);
    // Text held back for a possible tool call produces no event until it resolves.
    if (!first && !end && content === '' && !chunk.logprobs?.length) continue;
    started.add(chunk.index);
    const delta: Record<string, unknown> = first ? { role: 'assistant', content } : { content };
    if (end && end.toolCalls.length > 0) delta.tool_calls = end.toolCalls;
    const choice = {
      index: chunk.index,
      delta,
      logprobs: logprobsOf(plan, chunk.logprobs),
      finish_reason: end ? finishOf(chunk.finishReason, end.toolCalls) : null,
    };
    yield { ...base, choices: [choice] };
  }
  if (includeUsage) yield { ...base, choices: [], usage: usage.toBody() };
}

async function collect(run: GenerationRun, plan: ChatPlan, reply: FastifyReply) {
  const usage = new UsageTotal();
  const choices = plan.outputs.map((_, index) => ({
    index,
    message: {
      role: 'assistant',
      content: '' as string | null,
      tool_calls: undefined as ToolCallBody[] | undefined,
    },
    logprobs: plan.topLogprobs === null ? null : { content: [] as ChatLogprob[] },
    finish_reason: null as string | null,
  }));
  for await (const { chunk } of run.chunks) {
    if (chunk.usage) usage.add(chunk.usage);
    const choice = choices[chunk.index];
    const output = plan.outputs[chunk.index];
    choice.message.content += output.push(chunk.text);
    choice.logprobs?.content.push(...(logprobsOf(plan, chunk.logprobs)?.content ?? []));
    if (!chunk.finishReason) continue;
    const end = output.finish();
    choice.message.content += end.content;
    if (end.toolCalls.length > 0) {
      choice.message.tool_calls = end.toolCalls;
      if (choice.message.content === '') choice.message.content = null;
    }
    choice.finish_reason = finishOf(chunk.finishReason, end.toolCalls);
  }
  return reply.send({ ...plan.header, object: 'chat.completion', choices, usage: usage.toBody() });
}
