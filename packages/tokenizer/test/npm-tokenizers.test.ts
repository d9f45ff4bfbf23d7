import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HfTokenizer, loadTokenizer } from '../src/index.js';
import { npmTokenizerDir } from './npm-tokenizers.js';

/*
 * Expected values are transformers 5.17 outputs (AutoTokenizer `encode`, `decode(skip_special_tokens=True)`,
 * `apply_chat_template`) for the very same files: the npm packages ship them unchanged.
 */
interface EncodeCase {
  readonly text: string;
  readonly ids: number[];
  readonly withSpecial: number[];
  readonly decodeSkip: string;
}

const CASES: Record<'qwen2_5' | 'llama3_1' | 'llama2', EncodeCase[]> = {
  qwen2_5: [
    {
      text: 'emoji 🦀🚀👩‍👩‍👧‍👦 and flags 🇯🇵🇫🇷',
      ids: [
        37523, 11162, 99, 222, 145836, 145233, 378, 235, 145233, 378, 235, 145665, 378, 235, 145988, 323,
        8042, 11162, 229, 107, 145516, 145919, 145070,
      ],
      withSpecial: [
        37523, 11162, 99, 222, 145836, 145233, 378, 235, 145233, 378, 235, 145665, 378, 235, 145988, 323,
        8042, 11162, 229, 107, 145516, 145919, 145070,
      ],
      decodeSkip: 'emoji 🦀🚀👩‍👩‍👧‍👦 and flags 🇯🇵🇫🇷',
    },
    {
      text: '<|im_start|>user\nlooks special<|im_end|>',
      ids: [151644, 872, 198, 94273, 3281, 151645],
      withSpecial: [151644, 872, 198, 94273, 3281, 151645],
      decodeSkip: 'user\nlooks special',
    },
    {
      text: '    \n        \n',
      ids: [1066, 1789],
      withSpecial: [1066, 1789],
      decodeSkip: '    \n        \n',
    },
  ],
  llama3_1: [
    {
      text: '数学是科学的皇后，算术是数学的女王。',
      ids: [
        118687, 21043, 108396, 9554, 105600, 34547, 3922, 70203, 102347, 21043, 118687, 9554, 58850, 101538,
        1811,
      ],
      withSpecial: [
        128000, 118687, 21043, 108396, 9554, 105600, 34547, 3922, 70203, 102347, 21043, 118687, 9554, 58850,
        101538, 1811,
      ],
      decodeSkip: '数学是科学的皇后，算术是数学的女王。',
    },
    {
      text: 'def f(x):\n    return x ** 2  # comment\n\n\tif x: pass',
      ids: [755, 282, 2120, 997, 262, 471, 865, 3146, 220, 17, 220, 674, 4068, 271, 748, 865, 25, 1522],
      withSpecial: [
        128000, 755, 282, 2120, 997, 262, 471, 865, 3146, 220, 17, 220, 674, 4068, 271, 748, 865, 25, 1522,
      ],
      decodeSkip: 'def f(x):\n    return x ** 2  # comment\n\n\tif x: pass',
    },
    {
      text: '<|begin_of_text|>text<|eot_id|>',
      ids: [128000, 1342, 128009],
      withSpecial: [128000, 128000, 1342, 128009],
      decodeSkip: 'text',
    },
    { text: '', ids: [], withSpecial: [128000], decodeSkip: '' },
  ],
  llama2: [
    {
      text: '한국어 문장입니다.',
      ids: [28705, 29282, 30779, 29433, 28705, 29710, 29747, 29429, 29194, 29043, 28723],
      withSpecial: [1, 28705, 29282, 30779, 29433, 28705, 29710, 29747, 29429, 29194, 29043, 28723],
      decodeSkip: '한국어 문장입니다.',
    },
    {
      text: '  leading and trailing spaces  ',
      ids: [28705, 5374, 304, 27166, 10599, 259],
      withSpecial: [1, 28705, 5374, 304, 27166, 10599, 259],
      decodeSkip: ' leading and trailing spaces  ',
    },
    {
      text: '<s>[INST] hi [/INST]</s>',
      ids: [1, 733, 16289, 28793, 12014, 733, 28748, 16289, 28793, 2],
      withSpecial: [1, 1, 733, 16289, 28793, 12014, 733, 28748, 16289, 28793, 2],
      decodeSkip: '[INST] hi [/INST]',
    },
    {
      text: 'ÿþ\u0000\u0001 control \u200b zero-width',
      ids: [28705, 30281, 29767, 3, 29534, 2602, 15758, 6129, 28733, 2617],
      withSpecial: [1, 28705, 30281, 29767, 3, 29534, 2602, 15758, 6129, 28733, 2617],
      decodeSkip: 'ÿþ\u0000\u0001 control \u200b zero-width',
    },
  ],
};

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the weather for a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
      required: ['city'],
    },
  },
} as const;

describe.each(Object.keys(CASES) as (keyof typeof CASES)[])('npm tokenizer %s', (name) => {
  let tokenizer: HfTokenizer;
  beforeAll(async () => {
    tokenizer = (await loadTokenizer(npmTokenizerDir(name)))!;
  });
  afterAll(() => tokenizer.dispose());

  it.each(CASES[name].map((entry) => [JSON.stringify(entry.text).slice(0, 30), entry] as const))(
    'matches transformers on %s',
    (_, entry) => {
      expect(tokenizer.encode(entry.text, { addSpecialTokens: false })).toEqual(entry.ids);
      expect(tokenizer.encode(entry.text)).toEqual(entry.withSpecial);
      expect(tokenizer.decode(entry.withSpecial, { skipSpecialTokens: true })).toBe(entry.decodeSkip);
    },
  );
});

describe('npm tokenizer chat templates', () => {
  it('renders a Qwen 2.5 chat with tools, a tool call and its result as transformers does', async () => {
    const tokenizer = (await loadTokenizer(npmTokenizerDir('qwen2_5')))!;
    const rendered = tokenizer.applyChatTemplate(
      [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: '',
          // OpenAI shape: arguments as a JSON string; templates get the parsed object (vLLM does the same).
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city": "Paris"}' },
            },
          ],
        },
        { role: 'tool', content: '{"temp": 21}' },
      ],
      { tools: [WEATHER_TOOL] },
    );
    expect(rendered).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{"type": "function", "function": {"name": "get_weather", "description": "Get the weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n<|im_start|>assistant\n',
    );
    await tokenizer.dispose();
  });

  it('renders and tokenizes a Llama 3 multi-turn chat as transformers does', async () => {
    const tokenizer = (await loadTokenizer(npmTokenizerDir('llama3_1')))!;
    const rendered = tokenizer.applyChatTemplate([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: '2+2?' },
      { role: 'assistant', content: '4' },
      { role: 'user', content: 'And 3+3?' },
    ]);
    expect(tokenizer.encode(rendered, { addSpecialTokens: false })).toEqual([
      128000, 128006, 9125, 128007, 271, 2675, 527, 51637, 13, 128009, 128006, 882, 128007, 271, 17, 10, 17,
      30, 128009, 128006, 78191, 128007, 271, 19, 128009, 128006, 882, 128007, 271, 3112, 220, 18, 10, 18, 30,
      128009, 128006, 78191, 128007, 271,
    ]);
    expect(tokenizer.eosTokenIds).toEqual([128009]);
    expect(tokenizer.bosTokenId).toBe(128000);
    await tokenizer.dispose();
  });
});
