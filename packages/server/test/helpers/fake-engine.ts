import type { Tokenizer } from '@ferrum/interfaces';
import {
  type EngineStatus,
  FerrumError,
  type FinishReason,
  type GenerateChunk,
  type GenerateRequest,
  type ModelInfo,
  resolveSamplingParams,
  type SamplingParams,
} from '@ferrum/types';
import type { ServableEngine } from '../../src/index.js';
import { createByteTokenizer, EOS_ID } from './byte-tokenizer.js';

/** Knobs of the fake engine. */
export interface FakeEngineOptions {
  readonly maxModelLen?: number;
  readonly numKvSlots?: number;
  /** Live requests beyond this are refused with `queue_full`. */
  readonly maxLiveRequests?: number;
  /** Milliseconds between tokens. */
  readonly stepMs?: number;
  /** When the rendered prompt contains a key, the output is that value's text, then EOS. */
  readonly scripts?: Readonly<Record<string, string>>;
}

/** A pull queue the producer pushes into; `return()` from the consumer cancels. */
class Channel<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private wake: (() => void) | null = null;
  private closed = false;

  constructor(private readonly onCancel: () => void) {}

  push(item: T): void {
    this.items.push(item);
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    try {
      while (true) {
        const item = this.items.shift();
        if (item !== undefined) yield item;
        else if (this.closed) return;
        else await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      if (!this.closed) this.onCancel();
    }
  }
}

/**
 * A deterministic stand-in for the engine (fast unit tests of the server): one token per `stepMs`,
 * greedy output cycles through letters, seeded output is a pure function of the seed, logprobs are
 * derived from token ids, and KV slots are counted so tests can see leaks.
 */
export class FakeEngine implements ServableEngine {
  readonly specificationVersion = 'v1' as const;
  readonly modelName = 'fake-model';
  readonly tokenizer: Tokenizer = createByteTokenizer();
  readonly modelInfo: ModelInfo;
  readonly requests: { id: string; prompt: number[]; sampling: SamplingParams }[] = [];
  /** How each request ended. */
  readonly outcomes = new Map<string, 'completed' | 'aborted'>();
  private readonly live = new Map<string, () => void>();
  private freeSlots: number;
  private nextId = 0;
  private generated = 0;

  constructor(private readonly options: FakeEngineOptions = {}) {
    this.freeSlots = options.numKvSlots ?? 100_000;
    this.modelInfo = {
      config: { vocabSize: 258, maxPositionEmbeddings: options.maxModelLen ?? 512 } as ModelInfo['config'],
      weightDtype: 'f32',
      numKvSlots: this.freeSlots,
      numHostKvSlots: 0,
      maxBatchTokens: 2048,
      maxBatchSeqs: 32,
      backend: 'fake',
    };
  }

  generate(request: GenerateRequest, options: { signal?: AbortSignal } = {}): AsyncIterable<GenerateChunk> {
    const params = resolveSamplingParams(request.sampling);
    if (!('tokenIds' in request.prompt)) throw new Error('the server always sends token ids');
    const prompt = [...request.prompt.tokenIds];
    const maxModelLen = this.options.maxModelLen ?? 512;
    if (prompt.length + params.maxTokens > maxModelLen) {
      throw new FerrumError('context_length_exceeded', `context is ${maxModelLen} tokens`);
    }
    if (this.live.size >= (this.options.maxLiveRequests ?? Number.POSITIVE_INFINITY)) {
      throw new FerrumError('queue_full', 'too many requests');
    }
    const id = request.id ?? `fake-${++this.nextId}`;
    this.requests.push({ id, prompt, sampling: params });
    const slots = prompt.length + params.maxTokens * params.n;
    this.freeSlots -= slots;
    let timer: NodeJS.Timeout | undefined;
    const release = (outcome: 'completed' | 'aborted') => {
      if (!this.live.delete(id)) return;
      this.outcomes.set(id, outcome);
      clearTimeout(timer);
      this.freeSlots += slots;
    };
    const channel = new Channel<GenerateChunk>(() => release('aborted'));
    this.live.set(id, () => {
      release('aborted');
      channel.close();
    });
    options.signal?.addEventListener('abort', () => this.abort(id), { once: true });
    const outputs = Array.from({ length: params.n }, (_, i) => this.outputOf(prompt, params, i));
    const counts = outputs.map(() => 0);
    const decoders = outputs.map(() => this.tokenizer.createDecodeStream());
    const finished: (FinishReason | null)[] = outputs.map(() => null);
    const step = () => {
      for (let i = 0; i < outputs.length; i++) {
        if (finished[i]) continue;
        const tokenId = outputs[i][counts[i]++];
        const reason = tokenId === EOS_ID ? 'stop' : counts[i] >= params.maxTokens ? 'length' : null;
        const text = decoders[i].push(tokenId) + (reason ? decoders[i].flush() : '');
        this.generated++;
        const logprobs = params.logprobs === null ? undefined : [logprobOf(tokenId, params.logprobs)];
        channel.push({ requestId: id, index: i, text, tokenIds: [tokenId], logprobs });
        if (reason) finished[i] = reason;
        if (reason) channel.push({ requestId: id, index: i, text: '', tokenIds: [], finishReason: reason });
      }
      if (finished.every(Boolean)) {
        const completionTokens = counts.reduce((a, b) => a + b, 0);
        const usage = { promptTokens: prompt.length, completionTokens, cachedPromptTokens: 0 };
        channel.push({ requestId: id, index: 0, text: '', tokenIds: [], usage });
        release('completed');
        channel.close();
      } else timer = setTimeout(step, this.options.stepMs ?? 1);
    };
    timer = setTimeout(step, this.options.stepMs ?? 1);
    return channel;
  }

  /** Output tokens of sequence `index`: a scripted reply, seeded letters, or letters cycling from the prompt. */
  private outputOf(prompt: number[], params: SamplingParams, index: number): number[] {
    const rendered = Buffer.from(prompt.filter((t) => t < 256)).toString('utf8');
    const script = Object.entries(this.options.scripts ?? {}).find(([key]) => rendered.includes(key));
    if (script) return [...Buffer.from(script[1]), EOS_ID];
    const seed =
      params.temperature === 0 ? prompt.length : (params.seed ?? Math.floor(Math.random() * 2 ** 31));
    const offset = params.temperature === 0 ? 0 : index * 3;
    return Array.from({ length: params.maxTokens }, (_, t) => 97 + ((seed * 7 + offset + t) % 26));
  }

  abort(requestId: string): boolean {
    const cancel = this.live.get(requestId);
    cancel?.();
    return cancel !== undefined;
  }

  status(): EngineStatus {
    return {
      numWaiting: 0,
      numRunning: this.live.size,
      numKvSlots: this.modelInfo.numKvSlots,
      numFreeKvSlots: this.freeSlots,
      backend: 'fake',
      model: this.modelName,
    };
  }

  metrics() {
    const histogram = { buckets: [0.1, 1], counts: [1, 2, 2], sum: 0.6, count: 2 };
    return {
      numRequestsRunning: this.live.size,
      numRequestsWaiting: 0,
      numRequestsSwapped: 0,
      kvCacheUsage: 1 - this.freeSlots / this.modelInfo.numKvSlots,
      promptTokensTotal: this.requests.reduce((sum, r) => sum + r.prompt.length, 0),
      generationTokensTotal: this.generated,
      prefixCacheQueriesTotal: 0,
      prefixCacheHitsTotal: 0,
      numPreemptionsTotal: 0,
      requestSuccessTotal: { stop: 0, length: 0, abort: 0, error: 0 },
      timeToFirstTokenSeconds: histogram,
      interTokenLatencySeconds: histogram,
      e2eRequestLatencySeconds: histogram,
      requestQueueTimeSeconds: histogram,
    };
  }

  async shutdown(): Promise<void> {
    for (const id of [...this.live.keys()]) this.abort(id);
  }
}

/** Deterministic logprobs: the chosen token, then `k` alternatives with lower values. */
function logprobOf(tokenId: number, k: number) {
  const logprob = -0.1 - (tokenId % 5) / 10;
  const top = Array.from({ length: k }, (_, j) => ({ tokenId: tokenId + j, logprob: logprob - j }));
  return { tokenId, logprob, top };
}
