import { writeFile } from 'node:fs/promises';
import { createEngine, type EngineOptions } from '@ferrum/engine';
import type { InferenceEngine } from '@ferrum/interfaces';
import { loadModelConfig } from '@ferrum/models';
import { FerrumError } from '@ferrum/types';
import { engineRequest } from '../bench/engine-request.js';
import type { SendRequest } from '../bench/offer-load.js';
import type { CliContext } from '../cli-context.js';
import { ENGINE_FLAGS, ENGINE_FLAGS_HELP, engineOptionsFrom } from '../engine-flags.js';
import { numberOption, type ParsedOptions, parseOptions, stringOption } from '../parse-options.js';

/** Flags of the offline benchmarks (`bench throughput`, `bench latency`): the engine's, and the workload's. */
export const OFFLINE_BENCH_FLAGS = {
  ...ENGINE_FLAGS,
  'input-len': { type: 'string' },
  'output-len': { type: 'string' },
  temperature: { type: 'string' },
  seed: { type: 'string' },
  'result-file': { type: 'string' },
  verbose: { type: 'boolean' },
} as const;

/** Help lines of {@link OFFLINE_BENCH_FLAGS} but the lengths, whose defaults differ per benchmark. */
export const OFFLINE_BENCH_HELP = `  --temperature T        0 is greedy (default 0); EOS is always ignored
  --seed S               seed of the random prompts and the sampler (default 0)
  --result-file F        also write the results as JSON
  --verbose              log engine start-up to stderr
${ENGINE_FLAGS_HELP}`;

/** What every request of an offline benchmark asks for. */
export interface OfflineWorkload {
  /** Shared prompt prefix before each prompt's own `inputLen` ids (0 where the benchmark has none). */
  readonly prefixLen: number;
  readonly inputLen: number;
  readonly outputLen: number;
  readonly temperature: number;
  readonly seed: number;
}

/** An offline benchmark's parsed flags and the workload they describe. */
export interface OfflineBench {
  /** `bench throughput` or `bench latency`, for messages. */
  readonly command: string;
  readonly parsed: ParsedOptions;
  readonly workload: OfflineWorkload;
}

/**
 * Parse an offline benchmark's flags ({@link OFFLINE_BENCH_FLAGS} and its own `flags`; no positional
 * argument) and its workload, with the benchmark's default lengths.
 */
export function parseOfflineBench(
  command: string,
  args: readonly string[],
  flags: Readonly<Record<string, { readonly type: 'string' | 'boolean' }>>,
  defaults: { readonly inputLen: number; readonly outputLen: number },
): OfflineBench {
  const parsed = parseOptions(command, args, { ...OFFLINE_BENCH_FLAGS, ...flags });
  if (parsed.positionals.length > 0) {
    throw new FerrumError('invalid_argument', `${command}: unexpected argument "${parsed.positionals[0]}"`);
  }
  const workload = {
    prefixLen: numberOption(parsed, 'prefix-len', { min: 0, integer: true }) ?? 0,
    inputLen: numberOption(parsed, 'input-len', { min: 1, integer: true }) ?? defaults.inputLen,
    outputLen: numberOption(parsed, 'output-len', { min: 1, integer: true }) ?? defaults.outputLen,
    temperature: numberOption(parsed, 'temperature', { min: 0 }) ?? 0,
    seed: numberOption(parsed, 'seed', { integer: true }) ?? 0,
  };
  return { command, parsed, workload };
}

/**
 * Write `toJson(config)` to the file `--result-file` names, if any; `config` is the engine and the
 * workload under vLLM's key names, then the benchmark's own `settings`.
 */
export async function writeResultFile(
  bench: OfflineBench,
  engine: InferenceEngine,
  settings: Readonly<Record<string, unknown>>,
  toJson: (config: Readonly<Record<string, unknown>>) => unknown,
): Promise<void> {
  const file = stringOption(bench.parsed, 'result-file');
  if (!file) return;
  const { workload } = bench;
  const config = {
    backend: engine.modelInfo.backend,
    model: engine.modelName,
    input_len: workload.inputLen,
    output_len: workload.outputLen,
    temperature: workload.temperature,
    seed: workload.seed,
    ...settings,
  };
  await writeFile(file, `${JSON.stringify(toJson(config), null, 2)}\n`);
}

/**
 * Check that a request fits the model, load the engine the engine flags describe, say on stderr what
 * runs (`benchmarking <model> on <backend>: <what>`), hand `run` a sender of requests shaped by the
 * workload (exactly `outputLen` tokens each: EOS is ignored), and shut the engine down however `run`
 * ends. Resolves to the exit status: 0, or 130 when Ctrl-C stopped the run (`run` then reports nothing).
 */
export async function withOfflineEngine(
  bench: OfflineBench,
  context: CliContext,
  what: string,
  run: (engine: InferenceEngine, send: SendRequest) => Promise<void>,
): Promise<number> {
  const { command, parsed, workload } = bench;
  const options = engineOptionsFrom(parsed, context.env);
  await checkRequestFits(command, workload, options);
  const log = parsed.values.verbose ? (line: string) => context.stderr.write(`${line}\n`) : undefined;
  const engine = await createEngine({ ...options, log });
  const sampling = {
    maxTokens: workload.outputLen,
    temperature: workload.temperature,
    seed: workload.seed,
    ignoreEos: true,
  };
  const send: SendRequest = (prompt) => engineRequest(engine, prompt, sampling);
  // One listener for the whole run rather than the signal on each of thousands of requests: shutting
  // down aborts every request in flight and refuses later ones.
  const stop = () => void engine.shutdown();
  context.signal.addEventListener('abort', stop, { once: true });
  try {
    context.stderr.write(`benchmarking ${engine.modelName} on ${engine.modelInfo.backend}: ${what}\n`);
    await run(engine, send);
    return context.signal.aborted ? 130 : 0;
  } catch (error) {
    // Interrupted requests fail; the run was stopped, not broken.
    if (context.signal.aborted) return 130;
    throw error;
  } finally {
    context.signal.removeEventListener('abort', stop);
    await engine.shutdown();
  }
}

/**
 * A request longer than `--max-model-len` (or the model's context) would fail every request after the
 * weights load; say so at once, as a usage error. The engine may still shorten the limit to its KV pool.
 */
async function checkRequestFits(
  command: string,
  workload: OfflineWorkload,
  options: EngineOptions,
): Promise<void> {
  const { maxPositionEmbeddings } = await loadModelConfig(options.model);
  const limit = options.maxModelLen ?? maxPositionEmbeddings;
  const total = workload.prefixLen + workload.inputLen + workload.outputLen;
  if (total > limit) {
    const what = options.maxModelLen === undefined ? "the model's context length" : '--max-model-len';
    throw new FerrumError(
      'invalid_argument',
      `${command}: prompt + output lengths (${total} tokens) exceed ${what} (${limit})`,
    );
  }
}
