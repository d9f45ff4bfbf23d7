import type { GenerateChunk } from '@ferrum/types';
import type { GenerationRun } from '../generation-run.js';
import { finishReasonOf, UsageTotal } from '../route-context.js';
import type { ChoiceOutput } from './chat-choice-output.js';

/** Fixed fields of every chat response and chunk. */
export interface ChatHeader {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

/** A choice that called tools and stopped by itself finishes with `tool_calls`, as OpenAI reports it. */
export function finishOf(reason: GenerateChunk['finishReason'], output: ChoiceOutput) {
  const mapped = finishReasonOf(reason);
  return output.numToolCalls > 0 && mapped === 'stop' ? 'tool_calls' : mapped;
}

/**
 * The `chat.completion.chunk` events of a streamed response. Each engine chunk gives one event (role on
 * a choice's first, logprobs of its tokens, its first tool-call delta), plus one event per further
 * tool-call delta, as OpenAI sends them; `finish_reason` rides on the last. Text held back for a possible
 * tool call gives no event until it is decided.
 */
export async function* chatStreamEvents(
  run: GenerationRun,
  header: ChatHeader,
  outputs: readonly ChoiceOutput[],
  includeUsage: boolean,
): AsyncGenerator<unknown> {
  const base = { ...header, object: 'chat.completion.chunk' };
  const usage = new UsageTotal();
  for await (const { chunk } of run.chunks) {
    if (chunk.usage) usage.add(chunk.usage);
    const output = outputs[chunk.index];
    const finished = chunk.finishReason !== undefined;
    const { content, toolCallDeltas } = output.push(chunk.text, finished);
    const logprobs = output.logprobsOf(chunk.logprobs);
    const first = !output.started;
    if (!first && !finished && content === '' && toolCallDeltas.length === 0 && logprobs === null) continue;
    output.started = true;
    const finishReason = finished ? finishOf(chunk.finishReason, output) : null;
    const numEvents = Math.max(1, toolCallDeltas.length);
    for (let i = 0; i < numEvents; i++) {
      // A delta that only carries a call has no text: content null on the first chunk (OpenAI), else absent.
      const text = content === '' && toolCallDeltas.length > 0 ? null : content;
      const delta: Record<string, unknown> =
        i > 0 ? {} : first ? { role: 'assistant', content: text } : text === null ? {} : { content: text };
      if (i < toolCallDeltas.length) delta.tool_calls = [toolCallDeltas[i]];
      const choice = {
        index: chunk.index,
        delta,
        logprobs: i === 0 ? logprobs : null,
        finish_reason: i === numEvents - 1 ? finishReason : null,
      };
      yield { ...base, choices: [choice] };
    }
  }
  if (includeUsage) yield { ...base, choices: [], usage: usage.toBody() };
}
