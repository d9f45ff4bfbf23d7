import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (packages/models/test/helpers is four levels down). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
/** The shared fixtures folder beside the repository, absent in CI. */
export const sharedFixtures = path.resolve(repoRoot, '..', 'shared', 'fixtures');
export const hasShared = existsSync(sharedFixtures);
/** The repository's own fixtures. */
export const repoFixtures = path.join(repoRoot, 'fixtures');
