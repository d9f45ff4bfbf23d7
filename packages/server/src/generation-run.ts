import type { InferenceEngine } from '@ferrum/interfaces';
import type { GenerateChunk, GenerateRequest } from '@ferrum/types';

/** A chunk tagged with the index of the prompt (engine request) it belongs to. */
export interface TaggedChunk {
  readonly promptIndex: number;
  readonly chunk: GenerateChunk;
}

/** The engine requests of one HTTP request: their merged chunks, and a way to abort them all. */
export interface GenerationRun {
  readonly chunks: AsyncIterable<TaggedChunk>;
  /** Abort every request of the run (client gone); the engine frees their KV. Idempotent. */
  abort(): void;
}

/**
 * Submit one engine request per prompt under a shared AbortSignal. Input errors the engine raises at
 * submission are rethrown after aborting the requests already submitted, so nothing leaks.
 */
export function startGeneration(
  engine: InferenceEngine,
  requests: readonly GenerateRequest[],
): GenerationRun {
  const controller = new AbortController();
  const streams: AsyncIterable<GenerateChunk>[] = [];
  try {
    for (const request of requests) streams.push(engine.generate(request, { signal: controller.signal }));
  } catch (error) {
    controller.abort();
    throw error;
  }
  return {
    chunks: streams.length === 1 ? tagged(streams[0]) : merge(streams),
    abort: () => controller.abort(),
  };
}

async function* tagged(stream: AsyncIterable<GenerateChunk>): AsyncGenerator<TaggedChunk> {
  for await (const chunk of stream) yield { promptIndex: 0, chunk };
}

/**
 * Interleave several streams in arrival order. One `next()` is pending per live stream, so a slow
 * consumer slows every stream equally and nothing is buffered here.
 */
async function* merge(streams: readonly AsyncIterable<GenerateChunk>[]): AsyncGenerator<TaggedChunk> {
  const iterators = streams.map((s) => s[Symbol.asyncIterator]());
  const pending = new Map<number, Promise<{ index: number; result: IteratorResult<GenerateChunk> }>>();
  const arm = (index: number) => {
    const next = iterators[index].next().then((result) => ({ index, result }));
    // The race observes a rejection; one that lands after we stopped listening must not go unhandled.
    next.catch(() => {});
    pending.set(index, next);
  };
  for (let i = 0; i < iterators.length; i++) arm(i);
  try {
    while (pending.size > 0) {
      const { index, result } = await Promise.race(pending.values());
      if (result.done) {
        pending.delete(index);
        continue;
      }
      arm(index);
      yield { promptIndex: index, chunk: result.value };
    }
  } finally {
    // Early exit (error or consumer gone): release the streams still running.
    for (const index of pending.keys()) void iterators[index].return?.();
  }
}
