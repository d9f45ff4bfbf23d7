import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ModelConfig } from '@ferrum/types';
import { loadModelConfig } from '../load-model-config.js';
import { readSafetensorsHeader } from '../read-safetensors-header.js';

/** A tiny checkpoint with transformers goldens (`golden.json`, `golden.safetensors`). */
export interface TinyModel {
  /** `<source>/<folder>`, e.g. `shared/llama2-mha`. */
  readonly label: string;
  readonly dir: string;
}

/** Tiny checkpoints under `root` (folders holding a golden.json), sorted; empty when `root` is absent. */
export function tinyModelsIn(root: string, source: string): TinyModel[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(path.join(root, entry.name, 'golden.json')))
    .map((entry) => ({ label: `${source}/${entry.name}`, dir: path.join(root, entry.name) }))
    .sort((a, b) => a.label.localeCompare(b.label));
}

/** What transformers computed for a tiny checkpoint. */
export interface Golden {
  readonly config: ModelConfig;
  readonly prompts: number[][];
  /** Greedy continuations (24 tokens, EOS ignored). */
  readonly greedy: number[][];
  /** logits[i]: [prompt i length × vocab] f32, at every prompt position. */
  readonly logits: Float32Array[];
}

/** Read a checkpoint's goldens. Throws when a prompt's logits are missing. */
export async function readGolden(dir: string): Promise<Golden> {
  const json = JSON.parse(await readFile(path.join(dir, 'golden.json'), 'utf8')) as {
    prompts: number[][];
    greedy: number[][];
  };
  const file = path.join(dir, 'golden.safetensors');
  const bytes = await readFile(file);
  const entries = new Map((await readSafetensorsHeader(file)).map((entry) => [entry.name, entry]));
  const logits = json.prompts.map((_, i) => {
    const entry = entries.get(`logits.${i}`);
    if (!entry) throw new Error(`golden logits.${i} missing in ${file}`);
    const start = bytes.byteOffset + entry.byteOffset;
    return new Float32Array(bytes.buffer.slice(start, start + entry.byteLength));
  });
  return { config: await loadModelConfig(dir), prompts: json.prompts, greedy: json.greedy, logits };
}
