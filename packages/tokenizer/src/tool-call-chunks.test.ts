import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createToolCallParser, extractToolCalls, type ToolCallFormat } from './create-tool-call-parser.js';
import type { ToolCallChunk, ToolCallDelta } from './tool-call.js';

/** Deterministic ids for comparisons. */
function counterIds() {
  let next = 0;
  return () => `id${next++}`;
}

/** `text` cut at random places. */
function piecesOf(text: string, cuts: readonly number[]): string[] {
  const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
  return [...points, text.length].map((end, i) => text.slice(i === 0 ? 0 : points[i - 1], end));
}

/** Feed the pieces to a parser that streams arguments; returns what it released, step by step. */
function streamChunks(format: ToolCallFormat, pieces: readonly string[]) {
  const parser = createToolCallParser(format, { generateId: counterIds(), streamArguments: true });
  const steps = [...pieces.map((piece) => parser.push(piece)), parser.finish()];
  return {
    content: steps.map((step) => step.text).join(''),
    calls: steps.flatMap((step) => step.toolCalls),
    chunks: steps.map((step) => step.toolCallChunks ?? []),
  };
}

/** The finished call both parsers' step-by-step tests end with. */
const PARIS_CALL: ToolCallDelta = {
  index: 0,
  id: 'id0',
  type: 'function',
  function: { name: 'get_weather', arguments: '{"city": "Paris"}' },
};

const OUTPUTS: readonly [ToolCallFormat, string][] = [
  [
    'hermes',
    'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}\n</tool_call>\n' +
      '<tool_call>\n{"arguments": {"q": "a \\"quoted\\" }"}, "name": "search"}\n</tool_call>',
  ],
  [
    'hermes',
    '<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call><tool_call>{"name": "g"}</tool_call>',
  ],
  [
    'llama3_json',
    '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "now", "parameters": {}}',
  ],
  [
    'mistral',
    'Sure.[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1, "b": [2, {"c": "]"}]}}, {"name": "now", "arguments": null}]',
  ],
  [
    'mistral',
    '[TOOL_CALLS]add[ARGS]{"a": 3.5, "b": 4}[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "}"}',
  ],
];

describe.each(OUTPUTS)('%s argument streaming', (format, output) => {
  const plain = extractToolCalls(output, format, { generateId: counterIds() });

  it('reports the same calls and content as whole-call parsing, however the text is cut', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 16 }), (cuts) => {
        const { content, calls, chunks } = streamChunks(format, piecesOf(output, cuts));
        expect(content).toBe(plain.content);
        expect(calls.map((call) => [call.id, call.function.name])).toEqual(
          plain.toolCalls.map((call) => [call.id, call.function.name]),
        );
        // Raw argument text may differ in spacing from the normalized JSON, never in value.
        expect(calls.map((call) => JSON.parse(call.function.arguments))).toEqual(
          plain.toolCalls.map((call) => JSON.parse(call.function.arguments)),
        );
        expectChunksAddUp(calls, chunks);
      }),
      { numRuns: 300 },
    );
  });
});

/**
 * The chunks of each call: the first carries id, type and name; the rest only arguments; within a step a
 * call has at most one chunk; their arguments joined are the whole call's arguments, complete by the
 * step that reports the whole call.
 */
function expectChunksAddUp(
  calls: readonly ToolCallDelta[],
  stepChunks: readonly (readonly ToolCallChunk[])[],
) {
  const joined = new Map<number, string>();
  for (const chunks of stepChunks) {
    const indexes = chunks.map((chunk) => chunk.index);
    expect(new Set(indexes).size).toBe(indexes.length);
    for (const chunk of chunks) {
      const first = !joined.has(chunk.index);
      const call = calls[chunk.index];
      if (first) {
        expect(chunk).toMatchObject({
          id: call.id,
          type: 'function',
          function: { name: call.function.name },
        });
      } else {
        expect(Object.keys(chunk).sort()).toEqual(['function', 'index']);
        expect(Object.keys(chunk.function)).toEqual(['arguments']);
      }
      joined.set(chunk.index, (joined.get(chunk.index) ?? '') + chunk.function.arguments);
    }
  }
  expect([...joined.keys()]).toEqual(calls.map((call) => call.index));
  for (const call of calls) expect(joined.get(call.index)).toBe(call.function.arguments);
}

describe('argument streaming, step by step', () => {
  it('hermes: the name once known, then the arguments as they arrive', () => {
    const parser = createToolCallParser('hermes', { generateId: counterIds(), streamArguments: true });
    expect(parser.push('Hi <tool_call>\n{"name": "get_weather", ')).toEqual({
      text: 'Hi ',
      toolCalls: [],
      toolCallChunks: [
        { index: 0, id: 'id0', type: 'function', function: { name: 'get_weather', arguments: '' } },
      ],
    });
    expect(parser.push('"arguments": {"city": "Pa')).toEqual({
      text: '',
      toolCalls: [],
      toolCallChunks: [{ index: 0, function: { arguments: '{"city": "Pa' } }],
    });
    expect(parser.push('ris"}}\n</tool_call>')).toEqual({
      text: '',
      toolCalls: [PARIS_CALL],
      toolCallChunks: [{ index: 0, function: { arguments: 'ris"}' } }],
    });
    expect(parser.finish()).toEqual({ text: '', toolCalls: [], toolCallChunks: [] });
  });

  it('mistral v11: the name at the arguments brace, the arguments raw', () => {
    const parser = createToolCallParser('mistral', { generateId: counterIds(), streamArguments: true });
    expect(parser.push('[TOOL_CALLS]get_we')).toEqual({ text: '', toolCalls: [], toolCallChunks: [] });
    expect(parser.push('ather[ARGS]{"city":')).toEqual({
      text: '',
      toolCalls: [],
      toolCallChunks: [
        { index: 0, id: 'id0', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } },
      ],
    });
    expect(parser.push(' "Paris"}')).toEqual({
      text: '',
      toolCalls: [PARIS_CALL],
      toolCallChunks: [{ index: 0, function: { arguments: ' "Paris"}' } }],
    });
  });

  it('a call whose name went out stays a call when the output stops inside it', () => {
    for (const [format, output] of [
      ['hermes', '<tool_call>{"name": "f", "arguments": {"a": '],
      ['llama3_json', '{"name": "f", "parameters": {"a": '],
      ['mistral', '[TOOL_CALLS] [{"name": "f", "arguments": {"a": '],
      ['mistral', '[TOOL_CALLS]f{"a": '],
    ] as const) {
      const { content, calls } = streamChunks(format, [output]);
      expect(content).toBe('');
      expect(calls.map((call) => call.function)).toEqual([{ name: 'f', arguments: '{"a": ' }]);
    }
  });

  it('an object without arguments gets {}', () => {
    const { calls } = streamChunks('llama3_json', ['{"name": "now"}']);
    expect(calls.map((call) => call.function)).toEqual([{ name: 'now', arguments: '{}' }]);
  });
});
