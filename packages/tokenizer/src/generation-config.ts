import { FerrumError, type SamplingParams } from '@ferrum/types';

/** What `generation_config.json` contributes: stop ids and the model's default sampling values. */
export interface GenerationConfig {
  /** `eos_token_id`, which may be one id or a list. */
  readonly eosTokenIds: readonly number[];
  /**
   * Sampling defaults the model ships (vLLM's `--generation-config auto`): `temperature`, `top_k`, `top_p`,
   * `min_p`, `repetition_penalty`, and `max_new_tokens` as `maxTokens`. Only keys the file sets.
   */
  readonly samplingDefaults: Partial<SamplingParams>;
}

/** Keys of `generation_config.json` that map to sampling parameters. */
const SAMPLING_KEYS = {
  temperature: 'temperature',
  top_k: 'topK',
  top_p: 'topP',
  min_p: 'minP',
  repetition_penalty: 'repetitionPenalty',
  max_new_tokens: 'maxTokens',
} as const satisfies Record<string, keyof SamplingParams>;

/**
 * Normalize the raw JSON of `generation_config.json` (an empty object when the file is absent).
 *
 * @throws FerrumError `invalid_checkpoint` when `eos_token_id` or a sampling value has the wrong type.
 */
export function parseGenerationConfig(
  raw: Readonly<Record<string, unknown>>,
  file: string,
): GenerationConfig {
  const samplingDefaults: Record<string, number> = {};
  for (const [key, field] of Object.entries(SAMPLING_KEYS)) {
    const value = raw[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new FerrumError('invalid_checkpoint', `${file}: ${key} must be a number`, { details: { file } });
    }
    samplingDefaults[field] = value;
  }
  return { eosTokenIds: tokenIds(raw.eos_token_id, file), samplingDefaults };
}

function tokenIds(value: unknown, file: string): number[] {
  if (value === undefined || value === null) return [];
  const ids = Array.isArray(value) ? value : [value];
  for (const id of ids) {
    if (!Number.isInteger(id) || (id as number) < 0) {
      throw new FerrumError(
        'invalid_checkpoint',
        `${file}: eos_token_id must be a token id or a list of them`,
        {
          details: { file },
        },
      );
    }
  }
  return ids as number[];
}
