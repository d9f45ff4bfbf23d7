import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createToolCallParser, extractToolCalls, type ToolCallFormat } from './create-tool-call-parser.js';

/** Deterministic ids for comparisons. */
function counterIds() {
  let next = 0;
  return () => `call_${next++}`;
}

/** Feed `text` in the given pieces; returns the joined content and the calls. */
function streamed(format: ToolCallFormat, pieces: readonly string[]) {
  const parser = createToolCallParser(format, { generateId: counterIds() });
  let content = '';
  const calls: unknown[] = [];
  for (const step of [...pieces.map((piece) => parser.push(piece)), parser.finish()]) {
    content += step.text;
    calls.push(...step.toolCalls);
  }
  return { content, calls };
}

/** `text` cut at random places. */
function piecesOf(text: string, cuts: readonly number[]): string[] {
  const points = [...new Set(cuts.map((cut) => cut % (text.length + 1)))].sort((a, b) => a - b);
  return [...points, text.length].map((end, i) => text.slice(i === 0 ? 0 : points[i - 1], end));
}

const HERMES_OUTPUT =
  'Let me check both.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n</tool_call>\n' +
  '<tool_call>\n{"name": "get_time", "arguments": {"tz": "Europe/Paris \\"CET\\" {x}"}}\n</tool_call>\n';

const LLAMA_OUTPUT =
  '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_time", "parameters": {}}';

const MISTRAL_OUTPUT =
  'One [moment].[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris [FR]"}}, {"name": "now", "arguments": {}}]\n' +
  '[TOOL_CALLS]add[ARGS]{"a": {"b": "}"}}[TOOL_CALLS]get weather{"x": 1}[TOOL_CALLS] [{"oops": 1}] done';

describe('hermes tool calls', () => {
  it('splits content and calls, dropping whitespace between calls', () => {
    const result = extractToolCalls(HERMES_OUTPUT, 'hermes', { generateId: counterIds() });
    expect(result.content).toBe('Let me check both.\n');
    expect(result.toolCalls).toEqual([
      {
        id: 'call_0',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' },
      },
      {
        id: 'call_1',
        type: 'function',
        function: { name: 'get_time', arguments: '{"tz":"Europe/Paris \\"CET\\" {x}"}' },
      },
    ]);
  });

  it('streams each call as one delta with its index once the closing tag arrives', () => {
    const parser = createToolCallParser('hermes', { generateId: counterIds() });
    expect(parser.push('Sure. <tool')).toEqual({ text: 'Sure. ', toolCalls: [] });
    expect(parser.push('_call>{"name": "f", "arguments": {"a": 1}}')).toEqual({ text: '', toolCalls: [] });
    expect(parser.push('</tool_call> Done.')).toEqual({
      text: ' Done.',
      toolCalls: [
        { index: 0, id: 'call_0', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
      ],
    });
  });

  it('gives back malformed calls and lone tag prefixes as text', () => {
    expect(extractToolCalls('<tool_call>{"name": oops}</tool_call>', 'hermes')).toEqual({
      content: '<tool_call>{"name": oops}</tool_call>',
      toolCalls: [],
    });
    expect(extractToolCalls('a < b <tool', 'hermes')).toEqual({ content: 'a < b <tool', toolCalls: [] });
  });

  it('parses a call cut off before its closing tag', () => {
    const result = extractToolCalls('<tool_call>\n{"name": "f", "arguments": "{}"}\n', 'hermes');
    expect(result.toolCalls.map((call) => call.function)).toEqual([{ name: 'f', arguments: '{}' }]);
  });
});

describe('llama3_json tool calls', () => {
  it('reads several calls after <|python_tag|>', () => {
    const result = extractToolCalls(LLAMA_OUTPUT, 'llama3_json', { generateId: counterIds() });
    expect(result).toEqual({
      content: '',
      toolCalls: [
        { id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{}' } },
      ],
    });
  });

  it('leaves text that does not start with a call alone, and falls back to text on a bad object', () => {
    expect(extractToolCalls('Hello {"name": "f"}', 'llama3_json').content).toBe('Hello {"name": "f"}');
    expect(extractToolCalls(' {"oops": 1}', 'llama3_json')).toEqual({
      content: ' {"oops": 1}',
      toolCalls: [],
    });
    expect(extractToolCalls('<|python_tag|>search.call(q="x")', 'llama3_json').content).toBe(
      '<|python_tag|>search.call(q="x")',
    );
  });
});

describe.each([
  ['hermes', HERMES_OUTPUT],
  ['llama3_json', LLAMA_OUTPUT],
  ['mistral', MISTRAL_OUTPUT],
] as const)('%s streaming', (format, output) => {
  it('gives the same content and calls however the text is cut', () => {
    const whole = streamed(format, [output]);
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 12 }), (cuts) => {
        expect(streamed(format, piecesOf(output, cuts))).toEqual(whole);
      }),
      { numRuns: 300 },
    );
  });
});

it('refuses unknown formats', () => {
  expect(() => createToolCallParser('xml' as ToolCallFormat)).toThrow(
    expect.objectContaining({ code: 'invalid_argument' }),
  );
});
