import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The repository's embedded tiny model (random weights, real tokenizer and chat template), used when no
 * `--model` is given. Resolved relative to this package (src/ and dist/ sit at the same depth), so it
 * works from any working directory inside a checkout; null in an installed package, which has no fixtures.
 */
export function defaultModelDir(): string | null {
  const here = dirname(fileURLToPath(import.meta.url));
  const dir = resolve(here, '../../../fixtures/tiny-models/qwen3-qknorm');
  return existsSync(dir) ? dir : null;
}
