import { createToolCallParser, toolCallFormatNeedsSpecialTokens } from '@ferrum/tokenizer';
import type { ChatToolCall } from '@ferrum/types';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { renderChatPrompt } from '../chat-prompt.js';
import { type GenerationRun, startGeneration } from '../generation-run.js';
import { SequenceTokenTexts } from '../logprob-token-text.js';
import { type ChatLogprob, ChatLogprobsBuilder } from '../logprobs-format.js';
import { invalidRequest } from '../openai-error.js';
import { checkModel, type RouteContext, responseId, UsageTotal, unixSeconds } from '../route-context.js';
import { samplingFromRequest } from '../sampling-from-request.js';
import { type ChatRequest, ChatRequestSchema } from '../schemas/chat-request.js';
import { sendSse } from '../sse.js';
import { ChoiceOutput } from './chat-choice-output.js';
import { type ChatHeader, chatStreamEvents, finishOf } from './chat-stream.js';

/** How one request's choices are produced and reported. */
interface ChatPlan {
  readonly header: ChatHeader;
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
    const format = useTools ? context.toolCallFormat : null;
    const topLogprobs = body.logprobs ? (body.top_logprobs ?? 0) : null;
    const requested = samplingFromRequest(body, {
      maxTokens: body.max_completion_tokens ?? body.max_tokens,
      logprobs: topLogprobs,
      longestPromptTokens: prompt.tokenIds.length,
      maxModelLen: context.maxModelLen,
      vocabSize: engine.modelInfo.config.vocabSize,
    });
    // Formats whose calls start with a special token need it in the text (vLLM's Mistral parser does so).
    const sampling =
      format && toolCallFormatNeedsSpecialTokens(format)
        ? { ...requested, skipSpecialTokens: false }
        : requested;
    const header: ChatHeader = {
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
    const plan: ChatPlan = {
      header,
      outputs: Array.from(
        { length: sampling.n ?? 1 },
        () =>
          new ChoiceOutput(
            format ? createToolCallParser(format, { streamArguments: true }) : null,
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
      const includeUsage = body.stream_options?.include_usage === true;
      const events = chatStreamEvents(run, header, plan.outputs, includeUsage);
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
    if (finished) choice.finish_reason = finishOf(chunk.finishReason, output);
  }
  // OpenAI reports a message that only calls tools with null content.
  for (const { message } of choices) if (message.tool_calls && message.content === '') message.content = null;
  return reply.send({ ...plan.header, object: 'chat.completion', choices, usage: usage.toBody() });
}
