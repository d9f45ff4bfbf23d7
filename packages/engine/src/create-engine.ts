import 'reflect-metadata';
import { basename, resolve } from 'node:path';
import {
  COMPUTE_BACKENDS,
  type ComputeBackend,
  KV_CACHE_MANAGER,
  LOGITS_PROCESSORS,
  SAMPLER,
  SCHEDULER,
  TOKENIZER,
} from '@ferrum/interfaces';
import { createKvCacheManager } from '@ferrum/kv';
import { loadModelConfig } from '@ferrum/models';
import { createSampler } from '@ferrum/sampler';
import { createScheduler } from '@ferrum/scheduler';
import { loadTokenizer } from '@ferrum/tokenizer';
import { FerrumError, type ModelConfig } from '@ferrum/types';
import { type DependencyContainer, instanceCachingFactory, container as rootContainer } from 'tsyringe';
import { defaultBackends } from './default-backends.js';
import type { EngineOptions } from './engine-options.js';
import type { EngineBuildContext, EngineOverrides } from './engine-overrides.js';
import { FerrumEngine } from './ferrum-engine.js';
import { chooseBackend, probeAll } from './select-backend.js';
import { StepRunner } from './step-runner.js';
import { resolveAllTokens, resolveToken } from './typed-container.js';

const DEFAULT_MAX_NUM_SEQS = 256;
const DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048;

/**
 * Build an engine: a tsyringe child container gets the defaults (backends, KV manager, scheduler,
 * sampler, tokenizer), then the caller's overrides; the best available backend loads the model.
 */
export async function createEngine(
  options: EngineOptions,
  overrides: EngineOverrides = {},
): Promise<FerrumEngine> {
  const log = options.log ?? (() => {});
  const modelDir = resolve(options.model);
  const config = await loadModelConfig(modelDir);
  const container = rootContainer.createChildContainer();
  for (const backend of overrides.backends ?? defaultBackends())
    container.register(COMPUTE_BACKENDS, { useValue: backend });
  const probed = await probeAll(resolveAllTokens(container, COMPUTE_BACKENDS));
  const chosen = chooseBackend(probed, options.device ?? 'auto', log);
  log(`backend: ${chosen.backend.name} (${chosen.capabilities.device})`);
  const executor = await chosen.backend.loadModel(loadSpec(options, modelDir, config));
  try {
    const maxModelLen = effectiveMaxModelLen(options, config, executor.info.numKvSlots, log);
    const context: EngineBuildContext = { options, executor, capabilities: chosen.capabilities, maxModelLen };
    registerParts(container, context, overrides);
    const tokenizer = overrides.tokenizer !== undefined ? overrides.tokenizer : await loadTokenizer(modelDir);
    // tsyringe treats a null value provider as no provider: a model without a tokenizer registers none.
    if (tokenizer) container.register(TOKENIZER, { useValue: tokenizer });
    overrides.configure?.(container);
    log(`KV pool: ${executor.info.numKvSlots} tokens; max model length ${maxModelLen}`);
    const eosTokenIds = [...new Set([...config.eosTokenIds, ...(tokenizer?.eosTokenIds ?? [])])];
    const sampler = resolveToken(container, SAMPLER);
    return new FerrumEngine({
      modelName: options.servedModelName ?? basename(modelDir),
      executor,
      kv: resolveToken(container, KV_CACHE_MANAGER),
      scheduler: resolveToken(container, SCHEDULER),
      stepRunner: new StepRunner(executor, sampler, chosen.capabilities, stepSamples(options), eosTokenIds),
      tokenizer: container.isRegistered(TOKENIZER, true) ? resolveToken(container, TOKENIZER) : null,
      maxModelLen,
      eosTokenIds,
      logitsProcessors: resolveAllTokens(container, LOGITS_PROCESSORS),
      defaultSampling: {},
      asyncScheduling: options.asyncScheduling ?? true,
      log,
    });
  } catch (error) {
    await executor.dispose();
    throw error;
  }
}

/** Probe every backend the engine would consider (for `ferrum devices`). */
export async function probeBackends(backends: readonly ComputeBackend[] = defaultBackends()) {
  const probed = await probeAll(backends);
  return probed.map((p) => ({ name: p.backend.name, capabilities: p.capabilities }));
}

function registerParts(
  container: DependencyContainer,
  context: EngineBuildContext,
  overrides: EngineOverrides,
): void {
  const { options, executor, maxModelLen } = context;
  const kvFactory =
    overrides.kvCacheManager ??
    (() =>
      createKvCacheManager({
        numSlots: executor.info.numKvSlots,
        numHostSlots: executor.info.numHostKvSlots,
        enablePrefixCaching: options.enablePrefixCaching ?? true,
      }));
  container.register(KV_CACHE_MANAGER, { useFactory: instanceCachingFactory(() => kvFactory(context)) });
  const schedulerFactory =
    overrides.scheduler ??
    ((_: EngineBuildContext, kv) =>
      createScheduler(
        {
          maxNumSeqs: options.maxNumSeqs ?? DEFAULT_MAX_NUM_SEQS,
          maxNumBatchedTokens: options.maxNumBatchedTokens ?? DEFAULT_MAX_NUM_BATCHED_TOKENS,
          maxModelLen,
          maxQueueSize: options.maxQueueSize ?? 1024,
          preemptionMode: options.preemptionMode ?? 'recompute',
        },
        kv,
      ));
  container.register(SCHEDULER, {
    useFactory: instanceCachingFactory((c) => schedulerFactory(context, resolveToken(c, KV_CACHE_MANAGER))),
  });
  for (const p of overrides.logitsProcessors ?? []) container.register(LOGITS_PROCESSORS, { useValue: p });
  const sampler = overrides.sampler;
  container.register(SAMPLER, {
    useFactory: instanceCachingFactory(
      (c) => sampler ?? createSampler({ processors: resolveAllTokens(c, LOGITS_PROCESSORS) }),
    ),
  });
}

function loadSpec(options: EngineOptions, modelDir: string, config: ModelConfig) {
  const maxBatchTokens = options.maxNumBatchedTokens ?? DEFAULT_MAX_NUM_BATCHED_TOKENS;
  const maxBatchSeqs = options.maxNumSeqs ?? DEFAULT_MAX_NUM_SEQS;
  if (!(maxBatchTokens >= 1 && maxBatchSeqs >= 1)) {
    throw new FerrumError('invalid_argument', 'maxNumBatchedTokens and maxNumSeqs must be at least 1');
  }
  return {
    modelDir,
    config,
    loadFormat: options.loadFormat ?? 'safetensors',
    dtype: options.dtype === 'auto' ? undefined : options.dtype,
    maxKvTokens: options.maxKvTokens,
    gpuMemoryUtilization: options.gpuMemoryUtilization,
    maxBatchTokens,
    maxBatchSeqs,
    seed: options.seed,
    numThreads: options.numThreads,
    backendOptions: {
      ...options.backendOptions,
      enforceEager: options.enforceEager ?? false,
      ...(options.swapSpaceTokens === undefined ? {} : { swapSpaceTokens: options.swapSpaceTokens }),
    },
  } as const;
}

function effectiveMaxModelLen(
  options: EngineOptions,
  config: ModelConfig,
  numKvSlots: number,
  log: (m: string) => void,
): number {
  const wanted = options.maxModelLen ?? config.maxPositionEmbeddings;
  if (options.maxModelLen !== undefined && options.maxModelLen > config.maxPositionEmbeddings) {
    throw new FerrumError(
      'invalid_argument',
      `maxModelLen ${options.maxModelLen} exceeds the model's max_position_embeddings ${config.maxPositionEmbeddings}`,
    );
  }
  if (wanted <= numKvSlots) return wanted;
  log(`max model length lowered from ${wanted} to the KV pool size ${numKvSlots}`);
  return numKvSlots;
}

/** Sampled rows per step: one per sequence, plus forks of n > 1 requests. */
function stepSamples(options: EngineOptions): number {
  return Math.max(
    options.maxNumSeqs ?? DEFAULT_MAX_NUM_SEQS,
    options.maxNumBatchedTokens ?? DEFAULT_MAX_NUM_BATCHED_TOKENS,
  );
}
