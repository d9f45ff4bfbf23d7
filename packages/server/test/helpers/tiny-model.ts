import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEngine, type FerrumEngine } from '@ferrum/engine';
import type { LogitsProcessor, Tokenizer } from '@ferrum/interfaces';

/** The repo's tiny Qwen3 checkpoint (random weights, byte-level BPE of 512 tokens, ChatML template). */
export const TINY_MODEL_DIR = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '../../../../fixtures/tiny-models/qwen3-qknorm',
);

/** The name the tiny model is served under. */
export const TINY_MODEL_NAME = 'tiny';

/** An engine on the CPU runtime serving the tiny model as TINY_MODEL_NAME, with `logitsProcessors`. */
export function createTinyEngine(
  limits: { readonly maxModelLen: number; readonly maxKvTokens: number },
  logitsProcessors: readonly LogitsProcessor[],
): Promise<FerrumEngine> {
  return createEngine(
    { model: TINY_MODEL_DIR, device: 'cpu', servedModelName: TINY_MODEL_NAME, ...limits },
    { logitsProcessors },
  );
}

/** transformers' prompts and greedy continuations (24 tokens, EOS ignored) of the tiny model. */
export function readGolden(): { prompts: number[][]; greedy: number[][] } {
  return JSON.parse(readFileSync(join(TINY_MODEL_DIR, 'golden.json'), 'utf8'));
}

/**
 * A logits processor that makes the model write `text` (then EOS) for prompts containing `trigger`:
 * every other token is masked. It lets a random-weight model produce a real tool call, so the whole
 * path (engine, detokenizer, server parser) runs on real tokens.
 */
export function scriptedOutput(tokenizer: Tokenizer, trigger: string, text: string): LogitsProcessor {
  const script = [...tokenizer.encode(text, { addSpecialTokens: false }), tokenizer.eosTokenIds[0]];
  return {
    specificationVersion: 'v1',
    name: 'scripted-output',
    appliesTo: (context) => tokenizer.decode(context.promptTokenIds).includes(trigger),
    process(logits, context) {
      const next = script[Math.min(context.outputTokenIds.length, script.length - 1)];
      logits.fill(Number.NEGATIVE_INFINITY);
      logits[next] = 0;
    },
  };
}

/**
 * A logits processor that makes each step of prompts containing `trigger` take at least `stepMs` (it
 * waits on the host), so a test can rely on such a request still running a few hundred milliseconds later.
 */
export function slowSteps(tokenizer: Tokenizer, trigger: string, stepMs: number): LogitsProcessor {
  return {
    specificationVersion: 'v1',
    name: 'slow-steps',
    appliesTo: (context) => tokenizer.decode(context.promptTokenIds).includes(trigger),
    process() {
      const until = performance.now() + stepMs;
      while (performance.now() < until) {
        // Busy-wait: the step itself is what must be slow.
      }
    },
  };
}
