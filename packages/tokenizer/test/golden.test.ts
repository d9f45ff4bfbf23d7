import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ChatMessage, ChatTool } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HfTokenizer, loadTokenizer } from '../src/index.js';
import { goldenDir, hasShared, sharedTokenizersDir } from './shared-paths.js';

/** One file of `../shared/fixtures/tokenizer-golden/`, made with transformers 5. */
interface Golden {
  readonly family: string;
  readonly encode: readonly {
    readonly text: string;
    readonly ids: number[];
    readonly ids_with_special: number[];
    readonly decode: string;
    readonly decode_skip_special: string;
  }[];
  readonly chat: readonly {
    readonly messages: ChatMessage[];
    readonly tools?: ChatTool[];
    readonly kw: { readonly add_generation_prompt: boolean } & Record<string, unknown>;
    readonly rendered?: string;
    readonly ids?: number[];
    readonly error?: string;
  }[];
  readonly eos_token_id: number;
  readonly bos_token_id: number | null;
  readonly vocab_size: number;
}

const families = hasShared ? readdirSync(goldenDir).map((file) => file.replace(/\.json$/, '')) : [];
/** The goldens were rendered on this day; `strftime_now` must give the same date. */
const GOLDEN_DATE = new Date(2026, 10, 21, 12);

describe.skipIf(!hasShared)('transformers goldens (skipped: ../shared absent)', () => {
  describe.each(families)('%s', (family) => {
    const golden = JSON.parse(readFileSync(path.join(goldenDir, `${family}.json`), 'utf8')) as Golden;
    let tokenizer: HfTokenizer;
    beforeAll(async () => {
      tokenizer = (await loadTokenizer(path.join(sharedTokenizersDir, family), { now: () => GOLDEN_DATE }))!;
    });
    afterAll(() => tokenizer.dispose());

    it('has the special ids and vocabulary size', () => {
      expect(tokenizer.vocabSize).toBe(golden.vocab_size);
      expect(tokenizer.eosTokenIds[0]).toBe(golden.eos_token_id);
      expect(tokenizer.bosTokenId).toBe(golden.bos_token_id);
    });

    it.each(golden.encode.map((entry) => [JSON.stringify(entry.text).slice(0, 40), entry] as const))(
      'encodes and decodes %s',
      async (_, entry) => {
        expect(tokenizer.encode(entry.text, { addSpecialTokens: false })).toEqual(entry.ids);
        expect(tokenizer.encode(entry.text)).toEqual(entry.ids_with_special);
        expect(await tokenizer.encodeAsync(entry.text)).toEqual(entry.ids_with_special);
        expect(tokenizer.decode(entry.ids_with_special)).toBe(entry.decode);
        expect(tokenizer.decode(entry.ids_with_special, { skipSpecialTokens: true })).toBe(
          entry.decode_skip_special,
        );
      },
    );

    it.each(golden.chat.map((chat, i) => [i, chat] as const))('renders chat %i', (_, chat) => {
      const { add_generation_prompt, ...kwargs } = chat.kw;
      const render = () =>
        tokenizer.applyChatTemplate(chat.messages, {
          tools: chat.tools,
          addGenerationPrompt: add_generation_prompt,
          kwargs,
        });
      if (chat.error !== undefined) {
        expect(render).toThrow(chat.error.replace(/^TemplateError: /, ''));
        return;
      }
      const rendered = render();
      expect(rendered).toBe(chat.rendered);
      if (chat.ids) expect(tokenizer.encode(rendered, { addSpecialTokens: false })).toEqual(chat.ids);
    });
  });
});
