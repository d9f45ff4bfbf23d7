import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { FerrumError, type ModelConfig } from '@ferrum/types';
import { ConfigFields } from './config-fields.js';
import { parseJsonObject } from './json-object.js';
import { normalizeModelConfig } from './normalize-model-config.js';

/**
 * Reads `<modelDir>/config.json` and normalizes it. When `generation_config.json` exists, its EOS ids are
 * added to the config's (transformers' `generate` stops on those, and chat models often list their
 * end-of-turn token only there), and its BOS id fills a config that names none.
 *
 * @throws FerrumError `not_found` when config.json is absent, `invalid_checkpoint` for unreadable JSON,
 *   and whatever {@link normalizeModelConfig} throws.
 */
export async function loadModelConfig(modelDir: string): Promise<ModelConfig> {
  const configPath = path.resolve(modelDir, 'config.json');
  const raw = await readJsonObject(configPath, true);
  const config = normalizeModelConfig(raw!, configPath);

  const generationPath = path.resolve(modelDir, 'generation_config.json');
  const generation = await readJsonObject(generationPath, false);
  if (generation === undefined) return config;
  const fields = new ConfigFields(generation, generationPath);
  const eosTokenIds = [...config.eosTokenIds];
  for (const id of fields.tokenIds('eos_token_id')) if (!eosTokenIds.includes(id)) eosTokenIds.push(id);
  return { ...config, eosTokenIds, bosTokenId: config.bosTokenId ?? fields.tokenId('bos_token_id') };
}

async function readJsonObject(file: string, required: boolean): Promise<Record<string, unknown> | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !required) return undefined;
    throw new FerrumError('not_found', `cannot read ${file}: ${(error as Error).message}`, {
      cause: error,
      details: { file },
    });
  }
  return parseJsonObject(text, file);
}
