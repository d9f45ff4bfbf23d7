import type { InferenceEngine } from '@ferrum/interfaces';
import type { GenerateChunk } from '@ferrum/types';
import { GOLDEN_SAMPLING } from './fixture-models.js';

/** Everything one request streamed, grouped per sequence index. */
export interface Collected {
  readonly chunks: GenerateChunk[];
  readonly tokens: number[][];
  readonly texts: string[];
  readonly finishReasons: (string | undefined)[];
}

export async function collect(stream: AsyncIterable<GenerateChunk>): Promise<Collected> {
  const chunks: GenerateChunk[] = [];
  const tokens: number[][] = [];
  const texts: string[] = [];
  const finishReasons: (string | undefined)[] = [];
  for await (const chunk of stream) {
    chunks.push(chunk);
    tokens[chunk.index] ??= [];
    texts[chunk.index] ??= '';
    tokens[chunk.index].push(...chunk.tokenIds);
    texts[chunk.index] += chunk.text;
    if (chunk.finishReason) finishReasons[chunk.index] = chunk.finishReason;
  }
  return { chunks, tokens, texts, finishReasons };
}

/** The tokens `engine` continues `prompt` with under {@link GOLDEN_SAMPLING} (to compare with golden.json's). */
export async function goldenContinuation(
  engine: InferenceEngine,
  prompt: readonly number[],
): Promise<number[]> {
  const out = await collect(
    engine.generate({ prompt: { tokenIds: [...prompt] }, sampling: GOLDEN_SAMPLING }),
  );
  return out.tokens[0];
}
