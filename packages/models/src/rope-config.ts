import { FerrumError, type RopeConfig } from '@ferrum/types';
import type { ConfigFields } from './config-fields.js';

/** transformers' default base when a config names none. */
const DEFAULT_ROPE_THETA = 10_000;

/**
 * Normalizes RoPE from either spelling transformers has used:
 * - classic (transformers 4): top-level `rope_theta` plus optional `rope_scaling` ({ rope_type | type, ... });
 * - `rope_parameters` (transformers 5): one object holding `rope_theta`, `rope_type` and the scaling keys.
 * `rope_parameters` wins when both are present, because transformers 5 writes it and keeps old keys only
 * for backward compatibility.
 */
export function parseRopeConfig(config: ConfigFields): RopeConfig {
  const parameters = config.object('rope_parameters');
  const scaling = parameters ?? config.object('rope_scaling');
  const theta = parameters?.has('rope_theta')
    ? parameters.positiveNumber('rope_theta', DEFAULT_ROPE_THETA)
    : config.positiveNumber('rope_theta', DEFAULT_ROPE_THETA);
  // Old checkpoints spell the kind `type`; transformers reads `rope_type` first.
  const ropeType = scaling?.string('rope_type') ?? scaling?.string('type') ?? 'default';

  switch (ropeType) {
    case 'default':
      return { type: 'default', theta };
    case 'llama3': {
      const fields = scaling!;
      return {
        type: 'llama3',
        theta,
        factor: requiredNumber(fields, 'factor'),
        lowFreqFactor: requiredNumber(fields, 'low_freq_factor'),
        highFreqFactor: requiredNumber(fields, 'high_freq_factor'),
        originalMaxPositionEmbeddings: fields.requiredInt('original_max_position_embeddings'),
      };
    }
    default:
      throw new FerrumError(
        'unsupported_architecture',
        `${config.source}: unsupported RoPE type "${ropeType}" (supported: default, llama3)`,
        { details: { file: config.source, ropeType } },
      );
  }
}

function requiredNumber(fields: ConfigFields, key: string): number {
  if (!fields.has(key)) {
    throw new FerrumError('invalid_checkpoint', `${fields.source}: llama3 RoPE scaling needs "${key}"`, {
      details: { file: fields.source, key },
    });
  }
  return fields.positiveNumber(key, 0);
}
