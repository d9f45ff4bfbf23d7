import type { EngineOptions } from '@ferrum/engine';
import type { DType, LoadFormat } from '@ferrum/types';
import { FerrumError } from '@ferrum/types';
import { choiceOption, numberOption, type ParsedOptions, stringOption } from './parse-options.js';
import { resolveModelDir } from './resolve-model.js';

/** Flags that configure the engine, named as vLLM's (`run` and `serve` share them). */
export const ENGINE_FLAGS = {
  model: { type: 'string' },
  device: { type: 'string' },
  dtype: { type: 'string' },
  'load-format': { type: 'string' },
  'max-num-seqs': { type: 'string' },
  'max-num-batched-tokens': { type: 'string' },
  'max-model-len': { type: 'string' },
  'max-kv-tokens': { type: 'string' },
  'gpu-memory-utilization': { type: 'string' },
  'enable-prefix-caching': { type: 'boolean' },
  'no-enable-prefix-caching': { type: 'boolean' },
  'enforce-eager': { type: 'boolean' },
  'num-threads': { type: 'string' },
  'max-queue-size': { type: 'string' },
} as const;

export const ENGINE_FLAGS_HELP = `  --model DIR|ORG/NAME          model directory, or a repository pulled into the HF cache
                                (default: the repository's embedded tiny model)
  --device auto|cpu|cuda|metal  backend (default auto: the best whose probe succeeds)
  --dtype auto|f32|bf16|f16     compute dtype (default auto: the backend's choice for the checkpoint;
                                the CPU's is f32, and bf16 multiplies on AMX or AVX-512 BF16)
  --load-format safetensors|dummy  dummy fills random weights (benchmarks)
  --max-num-seqs N              sequences per step
  --max-num-batched-tokens N    tokens per step (prefill chunks + decodes)
  --max-model-len N             longest prompt + output
  --max-kv-tokens N             KV pool size in tokens (default: sized from memory)
  --gpu-memory-utilization F    fraction of device memory to use (0-1]
  --[no-]enable-prefix-caching  radix prefix cache (default on)
  --enforce-eager               no CUDA graphs
  --num-threads N               CPU worker threads (default: all cores)
  --max-queue-size N            waiting requests beyond this are refused`;

/** Engine options from the shared flags; `--model` is resolved to a directory. */
export function engineOptionsFrom(
  parsed: ParsedOptions,
  env: Readonly<Record<string, string | undefined>>,
): EngineOptions {
  if (parsed.values['enable-prefix-caching'] && parsed.values['no-enable-prefix-caching']) {
    throw new FerrumError(
      'invalid_argument',
      '--enable-prefix-caching and --no-enable-prefix-caching conflict',
    );
  }
  const dtype = choiceOption(parsed, 'dtype', [
    'auto',
    'f32',
    'bf16',
    'f16',
    'float32',
    'bfloat16',
    'float16',
  ]);
  return {
    model: resolveModelDir(stringOption(parsed, 'model'), env),
    device: stringOption(parsed, 'device'),
    dtype: dtype === undefined ? undefined : DTYPE_ALIASES[dtype],
    loadFormat: choiceOption<LoadFormat>(parsed, 'load-format', ['safetensors', 'dummy']),
    maxNumSeqs: numberOption(parsed, 'max-num-seqs', { min: 1, integer: true }),
    maxNumBatchedTokens: numberOption(parsed, 'max-num-batched-tokens', { min: 1, integer: true }),
    maxModelLen: numberOption(parsed, 'max-model-len', { min: 1, integer: true }),
    maxKvTokens: numberOption(parsed, 'max-kv-tokens', { min: 1, integer: true }),
    gpuMemoryUtilization: numberOption(parsed, 'gpu-memory-utilization', { min: 0.01, max: 1 }),
    enablePrefixCaching: parsed.values['no-enable-prefix-caching'] ? false : undefined,
    enforceEager: parsed.values['enforce-eager'] === true ? true : undefined,
    numThreads: numberOption(parsed, 'num-threads', { min: 0, integer: true }),
    maxQueueSize: numberOption(parsed, 'max-queue-size', { min: 1, integer: true }),
  };
}

/** vLLM spells dtypes as torch does; Ferrum's short names are accepted too. */
const DTYPE_ALIASES: Record<string, DType | 'auto'> = {
  auto: 'auto',
  f32: 'f32',
  float32: 'f32',
  bf16: 'bf16',
  bfloat16: 'bf16',
  f16: 'f16',
  float16: 'f16',
};
