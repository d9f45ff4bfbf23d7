import type {
  InferenceEngine,
  KvCacheManager,
  LogitsProcessor,
  ModelExecutor,
  ScheduledStep,
  Scheduler,
  SequenceUpdate,
  Tokenizer,
} from '@ferrum/interfaces';
import { validateSamplingParams } from '@ferrum/sampler';
import {
  type EngineStatus,
  FerrumError,
  type FinishReason,
  type GenerateChunk,
  type GenerateRequest,
  type ModelInfo,
  resolveSamplingParams,
  type SamplingParams,
  type TokenLogprob,
} from '@ferrum/types';
import { EngineMetricsRecorder } from './engine-metrics-recorder.js';
import type { EngineMetrics } from './engine-options.js';
import { OutputProcessor } from './output-processor.js';
import { promptTokens } from './prompt-tokens.js';
import { StepLoop } from './step-loop.js';
import type { StepRunner } from './step-runner.js';

/** Everything a {@link FerrumEngine} runs on, resolved by `createEngine`. */
export interface EngineParts {
  readonly modelName: string;
  readonly executor: ModelExecutor;
  readonly kv: KvCacheManager;
  readonly scheduler: Scheduler;
  readonly stepRunner: StepRunner;
  readonly tokenizer: Tokenizer | null;
  readonly maxModelLen: number;
  readonly eosTokenIds: readonly number[];
  readonly defaultSampling: Partial<SamplingParams>;
  /** Custom processors: a request any of them applies to has its rows sampled on the host. */
  readonly logitsProcessors: readonly LogitsProcessor[];
  /** Plan step N + 1 while step N runs (when the scheduler supports it). */
  readonly asyncScheduling: boolean;
  readonly log: (message: string) => void;
}

/**
 * The engine: admits requests, runs the {@link StepLoop} while there is work, and streams each request's
 * chunks through its own channel.
 */
export class FerrumEngine implements InferenceEngine {
  readonly specificationVersion = 'v1' as const;
  readonly modelInfo: ModelInfo;
  readonly modelName: string;
  readonly tokenizer: Tokenizer | null;
  /** Longest prompt + output a request may ask for (tokens). */
  readonly maxModelLen: number;
  private readonly requests = new Map<string, OutputProcessor>();
  /** Removes a request's listener from its caller's signal, which may outlive it (shared by many requests). */
  private readonly signalDetachers = new Map<string, () => void>();
  private readonly recorder: EngineMetricsRecorder;
  private loopRunning: Promise<void> | null = null;
  private accepting = true;
  private disposed = false;
  private nextId = 0;
  private readonly stepLoop: StepLoop;

  constructor(private readonly parts: EngineParts) {
    this.modelInfo = parts.executor.info;
    this.modelName = parts.modelName;
    this.tokenizer = parts.tokenizer;
    this.maxModelLen = parts.maxModelLen;
    this.recorder = new EngineMetricsRecorder(parts.scheduler, parts.kv);
    this.stepLoop = new StepLoop(parts.scheduler, parts.stepRunner, parts.asyncScheduling, {
      onLaunch: (step) => this.onLaunch(step),
      onUpdates: (updates, logprobs) => this.apply(updates, logprobs),
      onUnschedulable: () => this.failUnschedulable(),
      onError: (error) => this.failAll(error),
    });
  }

  generate(
    request: GenerateRequest,
    options: { readonly signal?: AbortSignal } = {},
  ): AsyncIterable<GenerateChunk> {
    if (!this.accepting) throw new FerrumError('queue_full', 'the engine is shutting down');
    const id = request.id ?? `req-${++this.nextId}`;
    if (this.requests.has(id))
      throw new FerrumError('invalid_argument', `request id "${id}" is already running`);
    const { config } = this.modelInfo;
    const params = resolveSamplingParams({ ...this.parts.defaultSampling, ...request.sampling });
    validateSamplingParams(params, { vocabSize: config.vocabSize });
    const prompt = promptTokens(request.prompt, this.tokenizer, config.vocabSize);
    this.checkLength(prompt.length, params.maxTokens);
    if (options.signal?.aborted)
      throw new FerrumError('aborted', `request ${id} was aborted before it started`);
    const output = new OutputProcessor(id, prompt.length, params, this.tokenizer, performance.now(), () =>
      this.abort(id),
    );
    this.parts.scheduler.add({
      requestId: id,
      promptTokenIds: prompt,
      sampling: params,
      priority: request.priority ?? 0,
      arrivalTimeMs: output.times.arrivalMs,
      eosTokenIds: params.ignoreEos
        ? params.stopTokenIds
        : [...this.parts.eosTokenIds, ...params.stopTokenIds],
      needsHostLogits: this.parts.logitsProcessors.some((p) =>
        p.appliesTo({ requestId: id, params, promptTokenIds: prompt, outputTokenIds: new Int32Array(0) }),
      ),
    });
    this.requests.set(id, output);
    const { signal } = options;
    if (signal) {
      const onAbort = () => this.abort(id);
      signal.addEventListener('abort', onAbort, { once: true });
      this.signalDetachers.set(id, () => signal.removeEventListener('abort', onAbort));
    }
    this.kick();
    return output.channel;
  }

  abort(requestId: string): boolean {
    const output = this.requests.get(requestId);
    if (!output) return false;
    this.parts.scheduler.abort(requestId);
    this.finishRequest(output, 'abort');
    return true;
  }

  status(): EngineStatus {
    const s = this.parts.scheduler.stats();
    const k = this.parts.kv.stats();
    return {
      numWaiting: s.numWaiting,
      numRunning: s.numRunning,
      numKvSlots: k.numSlots,
      numFreeKvSlots: k.numFreeSlots + k.numCachedSlots,
      backend: this.modelInfo.backend,
      model: this.modelName,
    };
  }

  metrics(): EngineMetrics {
    return this.recorder.snapshot();
  }

  async shutdown(options: { readonly drain?: boolean } = {}): Promise<void> {
    this.accepting = false;
    if (!options.drain) for (const id of [...this.requests.keys()]) this.abort(id);
    await this.loopRunning;
    if (this.disposed) return;
    this.disposed = true;
    await this.parts.executor.dispose();
  }

  private checkLength(promptLength: number, maxTokens: number): void {
    const limit = this.maxModelLen;
    if (promptLength + maxTokens > limit) {
      throw new FerrumError(
        'context_length_exceeded',
        `this model's maximum context length is ${limit} tokens, but ${promptLength + maxTokens} were requested ` +
          `(${promptLength} in the prompt, ${maxTokens} to generate)`,
        { details: { maxModelLen: limit, promptTokens: promptLength, maxTokens } },
      );
    }
  }

  private kick(): void {
    if (this.loopRunning) return;
    this.loopRunning = this.stepLoop.run().finally(() => {
      this.loopRunning = null;
      if (this.parts.scheduler.hasWork() && !this.disposed) this.kick();
    });
  }

  private onLaunch(step: ScheduledStep): void {
    const now = performance.now();
    const { seqIds } = step;
    for (let b = 0; b < seqIds.length; b++) {
      const output = this.requests.get(requestIdOf(seqIds[b], this.requests));
      if (output) this.recorder.onScheduled(output.times, now);
    }
  }

  /** Runs every step: indexed loops, as iterators may allocate before V8 optimizes them away. */
  private apply(updates: readonly SequenceUpdate[], logprobs: readonly (TokenLogprob | undefined)[]): void {
    const now = performance.now();
    for (let k = 0; k < updates.length; k++) {
      const u = updates[k];
      const output = this.requests.get(u.requestId);
      if (!output) continue;
      output.cachedPromptTokens = u.numCachedPromptTokens;
      if (u.tokenId >= 0) {
        this.recorder.onToken(output.times, now);
        const lp = u.sampleIndex >= 0 ? logprobs[u.sampleIndex] : undefined;
        // A stop string ends the text even on the token that also hit max_tokens: the reason is 'stop' (vLLM).
        if (output.pushToken(u.index, u.tokenId, lp) === 'stop') {
          if (!u.finishReason) this.parts.scheduler.finish(u.seqId, 'stop');
          output.finish(u.index, 'stop');
        }
      }
      if (u.finishReason) output.finish(u.index, u.finishReason);
      if (output.done) this.finishRequest(output, output.lastFinishReason);
    }
  }

  /** Called when a request is done, or to end it early with `reason`; frees its bookkeeping. */
  private finishRequest(output: OutputProcessor, reason: FinishReason): void {
    if (!this.forget(output.requestId)) return;
    if (!output.done) output.finishAll(reason);
    this.recorder.onFinished(output.times, output.promptTokens, reason, performance.now());
  }

  /** Drop a request's bookkeeping and its signal listener; false when it was not running. */
  private forget(requestId: string): boolean {
    this.signalDetachers.get(requestId)?.();
    this.signalDetachers.delete(requestId);
    return this.requests.delete(requestId);
  }

  /** Nothing runs and nothing can be scheduled: the waiting requests can never fit. */
  private failUnschedulable(): void {
    const error = new FerrumError('kv_exhausted', 'the KV cache cannot hold this request');
    for (const output of [...this.requests.values()]) {
      this.parts.scheduler.abort(output.requestId);
      this.forget(output.requestId);
      output.channel.fail(error);
    }
  }

  private failAll(error: unknown): void {
    this.parts.log(`step failed: ${(error as Error).message}`);
    for (const output of [...this.requests.values()]) {
      this.parts.scheduler.abort(output.requestId);
      this.forget(output.requestId);
      output.channel.fail(error);
    }
  }
}

/** Sequence ids are `requestId` or `requestId#i` (n > 1). */
function requestIdOf(seqId: string, requests: ReadonlyMap<string, unknown>): string {
  if (requests.has(seqId)) return seqId;
  const hash = seqId.lastIndexOf('#');
  return hash < 0 ? seqId : seqId.slice(0, hash);
}
