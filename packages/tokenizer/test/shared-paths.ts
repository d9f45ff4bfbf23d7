import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (three levels above this file). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** `../shared` beside the checkout: real tokenizers and transformers goldens, absent in CI. */
export const sharedDir = path.resolve(repoRoot, '..', 'shared');
export const sharedTokenizersDir = path.join(sharedDir, 'models', 'tokenizers');
export const goldenDir = path.join(sharedDir, 'fixtures', 'tokenizer-golden');
export const hasShared = existsSync(sharedTokenizersDir) && existsSync(goldenDir);
