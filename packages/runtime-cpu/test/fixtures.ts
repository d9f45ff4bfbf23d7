import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { type TinyModel, tinyModelsIn } from '@ferrum/models/testing';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..', '..');
export const sharedDir = path.resolve(repoRoot, '..', 'shared');
export const sharedTinyModels = path.join(sharedDir, 'fixtures', 'tiny-models');
export const repoTinyModels = path.join(repoRoot, 'fixtures', 'tiny-models');

/** The repo's tiny checkpoints, then ../shared's when present. */
export function allTinyModels(): TinyModel[] {
  return [...tinyModelsIn(repoTinyModels, 'repo'), ...tinyModelsIn(sharedTinyModels, 'shared')];
}
