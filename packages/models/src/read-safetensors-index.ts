import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { FerrumError } from '@ferrum/types';
import { readSafetensorsHeader } from './read-safetensors-header.js';
import type { TensorEntry } from './tensor-entry.js';

/** File names of a Hugging Face checkpoint's weights: one file, or shards listed by an index. */
export const SINGLE_WEIGHTS_FILE = 'model.safetensors';
export const SHARDED_WEIGHTS_INDEX = 'model.safetensors.index.json';

/**
 * Lists every tensor of the checkpoint in `modelDir` from its safetensors headers: the shards named by
 * `model.safetensors.index.json` when present, else `model.safetensors`. Other `.safetensors` files in the
 * folder are ignored on purpose (test folders keep golden outputs beside the weights).
 *
 * @throws FerrumError `not_found` (no weights), `invalid_checkpoint` (bad index, a tensor in two files),
 *   `missing_tensor` (the index names a tensor its shard lacks), and what {@link readSafetensorsHeader} throws.
 */
export async function readSafetensorsIndex(modelDir: string): Promise<Map<string, TensorEntry>> {
  const dir = path.resolve(modelDir);
  const indexPath = path.join(dir, SHARDED_WEIGHTS_INDEX);
  if (await exists(indexPath)) return readSharded(dir, indexPath);
  const single = path.join(dir, SINGLE_WEIGHTS_FILE);
  if (!(await exists(single))) {
    throw new FerrumError('not_found', `no ${SINGLE_WEIGHTS_FILE} or ${SHARDED_WEIGHTS_INDEX} in ${dir}`, {
      details: { dir },
    });
  }
  const tensors = new Map<string, TensorEntry>();
  addEntries(tensors, await readSafetensorsHeader(single));
  return tensors;
}

async function readSharded(dir: string, indexPath: string): Promise<Map<string, TensorEntry>> {
  const weightMap = await readWeightMap(indexPath);
  const shards = [...new Set(Object.values(weightMap))];
  const headers = await Promise.all(shards.map((shard) => readSafetensorsHeader(path.resolve(dir, shard))));
  const tensors = new Map<string, TensorEntry>();
  for (const entries of headers) addEntries(tensors, entries);
  for (const [name, shard] of Object.entries(weightMap)) {
    const file = path.resolve(dir, shard);
    if (tensors.get(name)?.file !== file) {
      throw new FerrumError(
        'missing_tensor',
        `tensor ${name} is listed in ${indexPath} but absent from ${file}`,
        {
          details: { tensor: name, files: [file] },
        },
      );
    }
  }
  return tensors;
}

async function readWeightMap(indexPath: string): Promise<Record<string, string>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(indexPath, 'utf8'));
  } catch (error) {
    throw new FerrumError('invalid_checkpoint', `cannot parse ${indexPath}: ${(error as Error).message}`, {
      cause: error,
      details: { file: indexPath },
    });
  }
  const weightMap = (parsed as { weight_map?: unknown } | null)?.weight_map;
  const valid =
    typeof weightMap === 'object' &&
    weightMap !== null &&
    Object.values(weightMap).every((shard) => typeof shard === 'string' && shard.endsWith('.safetensors'));
  if (!valid) {
    throw new FerrumError(
      'invalid_checkpoint',
      `${indexPath}: "weight_map" must map tensor names to .safetensors files`,
      {
        details: { file: indexPath },
      },
    );
  }
  return weightMap as Record<string, string>;
}

function addEntries(tensors: Map<string, TensorEntry>, entries: readonly TensorEntry[]): void {
  for (const entry of entries) {
    const previous = tensors.get(entry.name);
    if (previous !== undefined) {
      throw new FerrumError(
        'invalid_checkpoint',
        `tensor ${entry.name} appears in both ${previous.file} and ${entry.file}`,
        { details: { tensor: entry.name, files: [previous.file, entry.file] } },
      );
    }
    tensors.set(entry.name, entry);
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
