import { createToolCallParser, type ToolCallDelta, type ToolCallParser } from '@ferrum/tokenizer';
import type { ChatToolCall, TokenLogprob } from '@ferrum/types';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { renderChatPrompt } from '../chat-prompt.js';
import { type GenerationRun, startGeneration } from '../generation-run.js';
import { SequenceTokenTexts } from '../logprob-token-text.js';
import { type ChatLogprob, ChatLogprobsBuilder } from '../logprobs-format.js';
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
import { sendSse } from '../sse.js';

/** Fixed fields of every chat response and chunk. */
interface Header {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

/**
 * State of one choice: its tool-call parser (null when tools are off), how many calls it made, and its
 * logprobs builder (null when logprobs were not asked for).
 */
class ChoiceOutput {
  numToolCalls = 0;
  started = false;

  constructor(
    private readonly parser: ToolCallParser | null,
    private readonly logprobs: ChatLogprobsBuilder | null,
  ) {}

  /** The logprobs of a chunk's tokens; null when none were asked for or the chunk has no token (OpenAI's shape). */
  logprobsOf(entries: readonly TokenLogprob[] | undefined): { content: ChatLogprob[] } | null {
    if (!this.logprobs || !entries?.length) return null;
    return { content: this.logprobs.build(entries) };
  }

  /** Split a text delta (and, at the end, whatever the parser held back) into content and tool calls. */
  push(text: string, finished: boolean): { content: string; toolCalls: ToolCallDelta[] } {
    if (!this.parser) return { content: text, toolCalls: [] };
    const step = this.parser.push(text);
    const end = finished ? this.parser.finish() : null;
    const toolCalls = end ? [...step.toolCalls, ...end.toolCalls] : [...step.toolCalls];
    this.numToolCalls += toolCalls.length;
    return { content: end ? step.text + end.text : step.text, toolCalls };
  }
}

/** How one request's choices are produced and reported. */
interface ChatPlan {
  readonly header: Header;
  readonly outputs: ChoiceOutput[];
  /** Whether logprobs were asked for. */
  readonly logprobs: boolean;
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
    const prompt = await renderChatPrompt(engine.tokenizer, {
      messages: body.messages,
      tools: useTools ? body.tools : null,
      addGenerationPrompt: body.add_generation_prompt,
      continueFinalMessage: body.continue_final_message,
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
    context.openRequests.track(reply, run);
    const format = useTools ? context.toolCallFormat : null;
    const plan: ChatPlan = {
      header,
      outputs: Array.from(
        { length: sampling.n ?? 1 },
        () =>
          new ChoiceOutput(
            format ? createToolCallParser(format) : null,
            topLogprobs === null
              ? null
              : new ChatLogprobsBuilder(
                  new SequenceTokenTexts(engine.tokenizer, prompt.tokenIds),
                  topLogprobs,
                ),
          ),
      ),
      logprobs: topLogprobs !== null,
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

/** A choice that called tools and stopped by itself finishes with `tool_calls`, as OpenAI reports it. */
function finishOf(reason: Parameters<typeof finishReasonOf>[0], output: ChoiceOutput) {
  const mapped = finishReasonOf(reason);
  return output.numToolCalls > 0 && mapped === 'stop' ? 'tool_calls' : mapped;
}

async function* streamEvents(
  run: GenerationRun,
  plan: ChatPlan,
  includeUsage: boolean,
): AsyncGenerator<unknown> {
  const base = { ...plan.header, object: 'chat.completion.chunk' };
  const usage = new UsageTotal();
  for await (const { chunk } of run.chunks) {
    if (chunk.usage) usage.add(chunk.usage);
    const output = plan.outputs[chunk.index];
    const finished = chunk.finishReason !== undefined;
    const { content, toolCalls } = output.push(chunk.text, finished);
    const first = !output.started;
    // Text held back for a possible tool call produces no event until it resolves.
    if (!first && !finished && content === '' && toolCalls.length === 0 && !chunk.logprobs?.length) continue;
    output.started = true;
    const delta: Record<string, unknown> = first ? { role: 'assistant', content } : { content };
    if (toolCalls.length > 0) delta.tool_calls = toolCalls;
    const choice = {
      index: chunk.index,
      delta,
      logprobs: output.logprobsOf(chunk.logprobs),
      finish_reason: finished ? finishOf(chunk.finishReason, output) : null,
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
      tool_calls: undefined as ChatToolCall[] | undefined,
    },
    logprobs: plan.logprobs ? { content: [] as ChatLogprob[] } : null,
    finish_reason: null as string | null,
  }));
  for await (const { chunk } of run.chunks) {
    if (chunk.usage) usage.add(chunk.usage);
    const choice = choices[chunk.index];
    const output = plan.outputs[chunk.index];
    const finished = chunk.finishReason !== undefined;
    const { content, toolCalls } = output.push(chunk.text, finished);
    choice.message.content += content;
    choice.logprobs?.content.push(...(output.logprobsOf(chunk.logprobs)?.content ?? []));
    for (const call of toolCalls) {
      choice.message.tool_calls ??= [];
      choice.message.tool_calls.push({ id: call.id, type: call.type, function: call.function });
    }
    if (!finished) continue;
    // OpenAI reports a message that only calls tools with null content.
    if (choice.message.tool_calls && choice.message.content === '') choice.message.content = null;
    choice.finish_reason = finishOf(chunk.finishReason, output);
  }
  return reply.send({ ...plan.header, object: 'chat.completion', choices, usage: usage.toBody() });
}
