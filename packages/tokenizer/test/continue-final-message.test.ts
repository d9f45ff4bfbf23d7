import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ChatMessage } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HfTokenizer, loadTokenizer } from '../src/index.js';
import { goldenDir, hasShared, repoRoot, sharedTokenizersDir } from './shared-paths.js';

/** A golden chat entry of `../shared/fixtures/tokenizer-golden/`. */
interface GoldenChat {
  readonly messages: ChatMessage[];
  readonly kw: { readonly add_generation_prompt: boolean };
  readonly rendered?: string;
}

/**
 * What each family's template writes after an assistant message (its end of turn), from the model
 * cards' chat formats; `keepsSpacing`: whether a trailing space of the message stays, which transformers
 * decides by finding the message as given in the render (Llama 2 trims the content but writes a space
 * before `</s>`, so a trailing space reads as kept).
 */
const END_OF_TURN = [
  ['qwen3', '<|im_end|>\n', true],
  ['qwen2.5', '<|im_end|>\n', true],
  ['llama3', '<|eot_id|>', false],
  ['llama3.2', '<|eot_id|>', false],
  ['mistral-7b-instruct-v0.3', '</s>', false],
  ['llama2', ' </s>', true],
] as const;
const GOLDEN_DATE = new Date(2026, 10, 21, 12);

// transformers' goldens render [..., user, assistant "ok"] without a generation prompt; continuing the
// final message must give that text without the family's end of turn.
describe.skipIf(!hasShared)(
  `continueFinalMessage on real chat templates${hasShared ? '' : ' (skipped: ../shared absent)'}`,
  () => {
    describe.each(END_OF_TURN)('%s', (family, endOfTurn, keepsSpacing) => {
      let tokenizer: HfTokenizer;
      let golden: GoldenChat;
      beforeAll(async () => {
        tokenizer = (await loadTokenizer(path.join(sharedTokenizersDir, family), {
          now: () => GOLDEN_DATE,
        }))!;
        const chats = JSON.parse(readFileSync(path.join(goldenDir, `${family}.json`), 'utf8'))
          .chat as GoldenChat[];
        golden = chats.find(
          (chat) => chat.messages.at(-1)?.role === 'assistant' && !chat.kw.add_generation_prompt,
        )!;
      });
      afterAll(() => tokenizer?.dispose());

      it('leaves the final assistant message open', () => {
        expect(golden.messages.at(-1)?.content).toBe('ok');
        expect(golden.rendered!.endsWith(`ok${endOfTurn}`)).toBe(true);
        expect(tokenizer.applyChatTemplate(golden.messages, { continueFinalMessage: true })).toBe(
          golden.rendered!.slice(0, -endOfTurn.length),
        );
      });

      it('keeps trailing spacing only where the template kept it', () => {
        const before = golden.rendered!.slice(0, -`ok${endOfTurn}`.length);
        const messages = [...golden.messages.slice(0, -1), { role: 'assistant', content: 'The answer is ' }];
        expect(tokenizer.applyChatTemplate(messages, { continueFinalMessage: true })).toBe(
          `${before}The answer is${keepsSpacing ? ' ' : ''}`,
        );
      });
    });
  },
);

describe('continueFinalMessage on the repo tiny tokenizer (ChatML)', () => {
  let tokenizer: HfTokenizer;
  beforeAll(async () => {
    tokenizer = (await loadTokenizer(path.join(repoRoot, 'fixtures', 'tiny-models', 'qwen3-qknorm')))!;
  });
  afterAll(() => tokenizer?.dispose());

  it('renders the final message open-ended and encodes it', () => {
    const messages = [
      { role: 'user', content: 'Hello!' },
      { role: 'assistant', content: 'Hi, I am' },
    ];
    const text = tokenizer.applyChatTemplate(messages, { continueFinalMessage: true });
    expect(text).toBe('<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi, I am');
    // The prompt ends in the message's own tokens, not <|im_end|> (id 4).
    expect(tokenizer.encode(text, { addSpecialTokens: false }).at(-1)).not.toBe(4);
  });
});
