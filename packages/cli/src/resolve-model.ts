import { existsSync, statSync } from 'node:fs';
import { FerrumError } from '@ferrum/types';
import { defaultModelDir } from './default-model.js';
import { cachedSnapshotDir, hubCacheDir } from './hub/hf-cache.js';

/**
 * Turn `--model` into a model directory: an existing directory as is; a hub id (`org/name[@revision]`)
 * already pulled into the Hugging Face cache as its snapshot folder; nothing as the embedded tiny model.
 */
export function resolveModelDir(
  model: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): string {
  if (model === undefined) {
    const dir = defaultModelDir();
    if (dir) return dir;
    throw new FerrumError('invalid_argument', 'no --model given, and the embedded tiny model is not here');
  }
  if (existsSync(model)) {
    if (!statSync(model).isDirectory()) {
      throw new FerrumError('invalid_argument', `--model ${model} is a file; give the model's directory`);
    }
    return model;
  }
  const match = /^([\w.-]+\/[\w.-]+)(?:@(.+))?$/.exec(model);
  const snapshot = match ? cachedSnapshotDir(hubCacheDir(env), match[1], match[2] ?? 'main') : null;
  if (snapshot) return snapshot;
  const hint = match ? `; download it with \`ferrum pull ${model}\`` : '';
  throw new FerrumError(
    'not_found',
    `model ${model} is neither a directory nor in the Hugging Face cache${hint}`,
  );
}
