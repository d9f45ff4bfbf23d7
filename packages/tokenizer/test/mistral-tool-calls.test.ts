import path from 'node:path';
import type { ChatMessage } from '@ferrum/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createToolCallParser,
  extractToolCalls,
  type HfTokenizer,
  loadTokenizer,
  toolCallFormatNeedsSpecialTokens,
} from '../src/index.js';
import { hasShared, sharedTokenizersDir } from './shared-paths.js';

const CALLS = [
  {
    id: 'a1b2c3d4e',
    type: 'function',
    function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' },
  },
  { id: 'Z9y8X7w6V', type: 'function', function: { name: 'get_time', arguments: '{"tz":"Europe/Paris"}' } },
] as const;

// Mistral-7B-Instruct-v0.3's own chat template writes past tool calls as the model is trained to write
// them: the assistant turn after the last [/INST] is that model output, followed by </s>.
describe.skipIf(!hasShared)(
  `Mistral-7B-Instruct-v0.3 tool calls${hasShared ? '' : ' (skipped: ../shared absent)'}`,
  () => {
    let tokenizer: HfTokenizer;
    let output: string;
    beforeAll(async () => {
      tokenizer = (await loadTokenizer(path.join(sharedTokenizersDir, 'mistral-7b-instruct-v0.3')))!;
      const messages: ChatMessage[] = [
        { role: 'user', content: 'Weather and time in Paris?' },
        { role: 'assistant', content: null, tool_calls: [...CALLS] },
      ];
      const rendered = tokenizer.applyChatTemplate(messages, { addGenerationPrompt: false });
      output = rendered.slice(rendered.lastIndexOf('[/INST]') + '[/INST]'.length).replace(/<\/s>$/, '');
    });
    afterAll(() => tokenizer?.dispose());

    it('reads back the calls the template wrote', () => {
      expect(output.startsWith('[TOOL_CALLS] [{')).toBe(true);
      const { content, toolCalls } = extractToolCalls(output, 'mistral');
      expect(content).toBe('');
      expect(toolCalls.map((call) => call.function)).toEqual(CALLS.map((call) => call.function));
    });

    it('sees the calls in streamed detokenization only with special tokens kept', () => {
      const ids = tokenizer.encode(output, { addSpecialTokens: false });
      expect(ids[0]).toBe(tokenizer.tokenToId('[TOOL_CALLS]'));
      expect(toolCallFormatNeedsSpecialTokens('mistral')).toBe(true);
      for (const skipSpecialTokens of [false, true]) {
        const stream = tokenizer.createDecodeStream({ skipSpecialTokens });
        const parser = createToolCallParser('mistral', { streamArguments: true });
        const steps = [
          ...ids.map((id) => parser.push(stream.push(id))),
          parser.push(stream.flush()),
          parser.finish(),
        ];
        const calls = steps.flatMap((step) => step.toolCalls.map((call) => call.function.name));
        expect(calls).toEqual(skipSpecialTokens ? [] : ['get_weather', 'get_time']);
        // Argument text streamed over several steps, raw as the model wrote it.
        const chunks = steps.flatMap((step) => step.toolCallChunks ?? []);
        if (skipSpecialTokens) {
          expect(chunks).toEqual([]);
        } else {
          expect(chunks.length).toBeGreaterThan(4);
          const first = chunks.filter((chunk) => chunk.index === 0).map((chunk) => chunk.function.arguments);
          expect(JSON.parse(first.join(''))).toEqual({ city: 'Paris', unit: 'c' });
        }
      }
    });
  },
);
