import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEngine, type FerrumEngine } from '@ferrum/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect } from './collect.js';
import { FIXTURES_DIR } from './fixture-models.js';

// stories260K: a tiny real trained Llama (TinyStories), the one model here whose output reads as English.
// Not ours, so it is read from ../shared and the suite skips visibly without it.
const storiesDir = join(FIXTURES_DIR, '../../../shared/models/stories260K-hf');
const present = existsSync(join(storiesDir, 'model.safetensors'));

interface Reference {
  readonly prompt_ids: number[];
  readonly greedy_ids: number[];
  readonly greedy_text: string;
}

describe.skipIf(!present)(
  `engine on stories260K${present ? '' : ' (skipped: ../shared/models absent)'}`,
  () => {
    let engine: FerrumEngine;
    let reference: Reference;
    beforeAll(async () => {
      reference = JSON.parse(readFileSync(join(storiesDir, 'reference_greedy.json'), 'utf8')) as Reference;
      engine = await createEngine({ model: storiesDir, device: 'cpu', maxKvTokens: 2048 });
    });
    afterAll(() => engine?.shutdown());

    it('tells the reference greedy story from BOS, token for token and as text', async () => {
      const continuation = reference.greedy_ids.slice(reference.prompt_ids.length);
      const out = await collect(
        engine.generate({
          prompt: { tokenIds: reference.prompt_ids },
          sampling: { temperature: 0, maxTokens: continuation.length, ignoreEos: true },
        }),
      );
      expect(out.tokens[0]).toEqual(continuation);
      expect(out.texts[0]).toBe(engine.tokenizer?.decode(continuation, { skipSpecialTokens: true }));
      expect(reference.greedy_text).toContain(out.texts[0].trim().slice(0, 60));
    });

    it('cuts the text before a stop string that spans tokens, and can keep it', async () => {
      const prompt = { text: 'Once upon a time' };
      const sampling = { temperature: 0, maxTokens: 60, ignoreEos: true };
      const full = (await collect(engine.generate({ prompt, sampling }))).texts[0];
      const stop = 'little girl';
      expect(full).toContain(stop);
      const cut = await collect(engine.generate({ prompt, sampling: { ...sampling, stop: [stop] } }));
      expect(cut.finishReasons[0]).toBe('stop');
      expect(cut.texts[0]).toBe(full.slice(0, full.indexOf(stop)));
      const kept = await collect(
        engine.generate({ prompt, sampling: { ...sampling, stop: [stop], includeStopStrInOutput: true } }),
      );
      expect(kept.texts[0]).toBe(full.slice(0, full.indexOf(stop) + stop.length));
      expect(engine.status().numFreeKvSlots).toBe(engine.status().numKvSlots);
    });

    it('reports stop, not length, when a stop string completes on the last allowed token', async () => {
      const prompt = { text: 'Once upon a time' };
      const sampling = { temperature: 0, maxTokens: 60, ignoreEos: true };
      const full = await collect(engine.generate({ prompt, sampling }));
      const stop = 'little girl';
      // The number of tokens whose decoded text first contains the stop string.
      const decode = (ids: number[]) => engine.tokenizer?.decode(ids, { skipSpecialTokens: true }) ?? '';
      const tokens = full.tokens[0];
      const numTokens = tokens.findIndex((_, i) => decode(tokens.slice(0, i + 1)).includes(stop)) + 1;
      expect(numTokens).toBeGreaterThan(0);
      const cut = await collect(
        engine.generate({ prompt, sampling: { ...sampling, maxTokens: numTokens, stop: [stop] } }),
      );
      expect(cut.texts[0]).toBe(full.texts[0].slice(0, full.texts[0].indexOf(stop)));
      expect(cut.finishReasons[0]).toBe('stop');
      expect(engine.status().numFreeKvSlots).toBe(engine.status().numKvSlots);
    });

    it('streams text that concatenates to the decoded tokens', async () => {
      const out = await collect(
        engine.generate({
          prompt: { text: 'The cat' },
          sampling: { temperature: 0.8, seed: 11, maxTokens: 50 },
        }),
      );
      expect(out.texts[0]).toBe(engine.tokenizer?.decode(out.tokens[0], { skipSpecialTokens: true }));
    });
  },
);
