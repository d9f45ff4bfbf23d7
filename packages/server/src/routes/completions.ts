import type { Tokenizer } from '@ferrum/interfaces';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { completionPrompts } from '../completion-prompts.js';
import { type GenerationRun, startGeneration } from '../generation-run.js';
import { SequenceTokenTexts } from '../logprob-token-text.js';
import { type CompletionLogprobs, CompletionLogprobsBuilder } from '../logprobs-format.js';
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
import { type CompletionRequest, CompletionRequestSchema } from '../schemas/completion-request.js';
import { sendSse } from '../sse.js';

/** Fixed fields of every completion response and chunk. */
interface Header {
  readonly id: string;
  readonly object: 'text_completion';
  readonly created: number;
  readonly model: string;
}

/** `POST /v1/completions`: one engine request per prompt, `n` choices each (choice = prompt × n + i). */
export function registerCompletionsRoute(app: FastifyInstance, context: RouteContext): void {
  app.post('/v1/completions', { schema: { body: CompletionRequestSchema } }, async (request, reply) => {
    const body = request.body as CompletionRequest;
    checkModel(context, body.model);
    if (body.echo) throw invalidRequest('echo is not supported', 'echo');
    if (body.best_of != null && body.best_of !== (body.n ?? 1)) {
      throw invalidRequest('best_of is not supported (it must equal n)', 'best_of');
    }
    const { engine } = context;
    const vocabSize = engine.modelInfo.config.vocabSize;
    const prompts = await completionPrompts(
      body.prompt,
      engine.tokenizer,
      vocabSize,
      body.add_special_tokens ?? true,
    );
    const sampling = samplingFromRequest(body, {
      maxTokens: body.max_tokens,
      logprobs: body.logprobs ?? null,
      longestPromptTokens: Math.max(...prompts.map((p) => p.length)),
      maxModelLen: context.maxModelLen,
      vocabSize,
    });
    const header: Header = {
      id: responseId('cmpl'),
      object: 'text_completion',
      created: unixSeconds(),
      model: context.servedModelName,
    };
    const run = startGeneration(
      engine,
      prompts.map((tokenIds, i) => ({
        id: `${header.id}-${i}`,
        prompt: { tokenIds },
        sampling,
        priority: body.priority ?? undefined,
      })),
    );
    context.openRequests.track(reply, run);
    const n = sampling.n ?? 1;
    const choices = new ChoiceLogprobs(engine.tokenizer, prompts, n, body.logprobs != null);
    if (body.stream) {
      const events = streamEvents(run, header, n, choices, body.stream_options?.include_usage === true);
      return sendSse(reply, events, context.retryAfterSeconds);
    }
    return collect(run, header, n, choices, reply);
  });
}

/** Per-choice logprob builders (each keeps its own text offset); empty when logprobs were not asked for. */
class ChoiceLogprobs {
  private readonly builders: CompletionLogprobsBuilder[];

  /** Choice `p × n + i` continues prompt `p`, which is its tokens' first context. */
  constructor(tokenizer: Tokenizer | null, prompts: readonly number[][], n: number, enabled: boolean) {
    this.builders = enabled
      ? Array.from(
          { length: prompts.length * n },
          (_, index) =>
            new CompletionLogprobsBuilder(new SequenceTokenTexts(tokenizer, prompts[Math.floor(index / n)])),
        )
      : [];
  }

  get enabled(): boolean {
    return this.builders.length > 0;
  }

  append(
    index: number,
    entries: Parameters<CompletionLogprobsBuilder['append']>[0],
    into?: CompletionLogprobs,
  ) {
    return this.builders[index].append(entries, into);
  }
}

async function* streamEvents(
  run: GenerationRun,
  header: Header,
  n: number,
  logprobs: ChoiceLogprobs,
  includeUsage: boolean,
): AsyncGenerator<unknown> {
  const usage = new UsageTotal();
  for await (const { promptIndex, chunk } of run.chunks) {
    if (chunk.usage) usage.add(chunk.usage);
    const index = promptIndex * n + chunk.index;
    const choice = {
      index,
      text: chunk.text,
      // A chunk with no token (the one that finishes) reports null, as OpenAI does, not empty lists.
      logprobs: logprobs.enabled && chunk.logprobs?.length ? logprobs.append(index, chunk.logprobs) : null,
      finish_reason: finishReasonOf(chunk.finishReason),
    };
    yield { ...header, choices: [choice] };
  }
  if (includeUsage) yield { ...header, choices: [], usage: usage.toBody() };
}

async function collect(
  run: GenerationRun,
  header: Header,
  n: number,
  logprobs: ChoiceLogprobs,
  reply: FastifyReply,
) {
  const usage = new UsageTotal();
  const choices: {
    index: number;
    text: string;
    logprobs: CompletionLogprobs | null;
    finish_reason: string | null;
  }[] = [];
  for await (const { promptIndex, chunk } of run.chunks) {
    if (chunk.usage) usage.add(chunk.usage);
    const index = promptIndex * n + chunk.index;
    choices[index] ??= { index, text: '', logprobs: null, finish_reason: null };
    const choice = choices[index];
    choice.text += chunk.text;
    if (logprobs.enabled)
      choice.logprobs = logprobs.append(index, chunk.logprobs ?? [], choice.logprobs ?? undefined);
    if (chunk.finishReason) choice.finish_reason = finishReasonOf(chunk.finishReason);
  }
  return reply.send({ ...header, choices, usage: usage.toBody() });
}
