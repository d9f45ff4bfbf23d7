import { describe, expect, it } from 'vitest';
import { createToolCallParser, extractToolCalls } from './create-tool-call-parser.js';

/** Deterministic ids for comparisons. */
function counterIds() {
  let next = 0;
  return () => `call${String(next++).padStart(5, '0')}`;
}

/** The calls of a whole output, without ids. */
function calls(output: string) {
  return extractToolCalls(output, 'mistral', { generateId: counterIds() }).toolCalls.map(
    (call) => call.function,
  );
}

// Model outputs in the two shapes Mistral's tokenizers write: v3 (Mistral-7B-Instruct-v0.3, Mixtral 8x22B)
// writes `[TOOL_CALLS]` and a JSON array of {"name", "arguments"} objects; v11+ (Mistral Small 3.1+) writes
// `[TOOL_CALLS]name[ARGS]{...}` once per call (the text decoded without `[ARGS]` when it is skipped).
describe('mistral tool calls, v3 array form', () => {
  it('reads one call, with or without a space after the marker', () => {
    expect(
      calls('[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "San Francisco", "unit": "c"}}]'),
    ).toEqual([{ name: 'get_weather', arguments: '{"city":"San Francisco","unit":"c"}' }]);
    expect(calls('[TOOL_CALLS][{"name": "add", "arguments":{"a": 3.5, "b": 4}}]')).toEqual([
      { name: 'add', arguments: '{"a":3.5,"b":4}' },
    ]);
  });

  it('reads several calls, arguments before the name, and a name inside the arguments', () => {
    expect(
      calls(
        '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 1, "b": 2}}, ' +
          '{"arguments": {"name": "John Doe"}, "name": "get_age"}]',
      ),
    ).toEqual([
      { name: 'add', arguments: '{"a":1,"b":2}' },
      { name: 'get_age', arguments: '{"name":"John Doe"}' },
    ]);
  });

  it('keeps text before the marker and after the array as content', () => {
    expect(
      extractToolCalls('Let me look.[TOOL_CALLS] [{"name": "f", "arguments": {}}]\nDone.', 'mistral', {
        generateId: counterIds(),
      }),
    ).toEqual({
      content: 'Let me look.\nDone.',
      toolCalls: [{ id: 'call00000', type: 'function', function: { name: 'f', arguments: '{}' } }],
    });
    // Only whitespace after the calls: no content at all.
    expect(extractToolCalls('[TOOL_CALLS] [{"name": "f", "arguments": {}}]\n ', 'mistral').content).toBe('');
  });
});

describe('mistral tool calls, v11 name form', () => {
  it('reads name{args} and name[ARGS]{args}, several in a row', () => {
    expect(calls('[TOOL_CALLS]add_this_and_that{"a": 3.5, "b": 4}')).toEqual([
      { name: 'add_this_and_that', arguments: '{"a":3.5,"b":4}' },
    ]);
    expect(
      calls('[TOOL_CALLS]add[ARGS]{"a": 3.5, "b": 4}[TOOL_CALLS]multiply[ARGS]{"a": 3, "b": {"c": "}"}}'),
    ).toEqual([
      { name: 'add', arguments: '{"a":3.5,"b":4}' },
      { name: 'multiply', arguments: '{"a":3,"b":{"c":"}"}}' },
    ]);
  });

  it('takes the id the model wrote after [CALL_ID]', () => {
    const result = extractToolCalls(
      '[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris"}',
      'mistral',
    );
    expect(result.toolCalls).toEqual([
      { id: 'a1B2c3D4e', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
  });
});

describe('mistral tool calls, what is not a call', () => {
  it('leaves output without the marker alone, even when it looks like calls', () => {
    const text = 'Use [{"name": "f", "arguments": {}}] or f{"a": 1} [TOOL';
    expect(extractToolCalls(text, 'mistral')).toEqual({ content: text, toolCalls: [] });
  });

  it('gives back malformed calls as text, marker included', () => {
    for (const text of [
      '[TOOL_CALLS] not json at all',
      '[TOOL_CALLS] [{"name": "f", "arguments": oops}]',
      '[TOOL_CALLS]get weather{"city": "Paris"}',
      '[TOOL_CALLS]f{"a": 1',
      '[TOOL_CALLS]',
    ]) {
      expect(extractToolCalls(text, 'mistral')).toEqual({ content: text, toolCalls: [] });
    }
  });

  it('reads each marker on its own: good groups are calls, bad ones text', () => {
    const output =
      'One [moment].[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris [FR]"}}, {"name": "now"}]\n' +
      '[TOOL_CALLS]add[ARGS]{"a": {"b": "}"}}[TOOL_CALLS]get weather{"x": 1}[TOOL_CALLS] [{"oops": 1}] done';
    expect(extractToolCalls(output, 'mistral', { generateId: counterIds() })).toEqual({
      content: 'One [moment].[TOOL_CALLS]get weather{"x": 1}[TOOL_CALLS] [{"oops": 1}] done',
      toolCalls: [
        {
          id: 'call00000',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Paris [FR]"}' },
        },
        { id: 'call00001', type: 'function', function: { name: 'now', arguments: '{}' } },
        { id: 'call00002', type: 'function', function: { name: 'add', arguments: '{"a":{"b":"}"}}' } },
      ],
    });
  });

  it('keeps the calls read before a malformed one', () => {
    const result = extractToolCalls('[TOOL_CALLS] [{"name": "f", "arguments": {}}, {"oops": 1}]', 'mistral');
    expect(result.toolCalls.map((call) => call.function.name)).toEqual(['f']);
    expect(result.content).toBe(', {"oops": 1}]');
  });
});

describe('mistral tool call streaming', () => {
  it('holds a possible marker back and emits each call once complete', () => {
    const parser = createToolCallParser('mistral', { generateId: counterIds() });
    expect(parser.push('Sure. [TOOL')).toEqual({ text: 'Sure. ', toolCalls: [] });
    expect(parser.push('_CALLS] [{"name": "f", "arguments": {"a": 1}')).toEqual({ text: '', toolCalls: [] });
    // Calls are emitted object by object, before the array closes.
    expect(parser.push('}, {"name": "g"')).toEqual({
      text: '',
      toolCalls: [
        { index: 0, id: 'call00000', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
      ],
    });
    expect(parser.push(', "arguments": {}}]')).toEqual({
      text: '',
      toolCalls: [{ index: 1, id: 'call00001', type: 'function', function: { name: 'g', arguments: '{}' } }],
    });
    expect(parser.finish()).toEqual({ text: '', toolCalls: [] });
  });

  it('makes Mistral-style ids (9 letters and digits) by default', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const [call] = extractToolCalls('[TOOL_CALLS]f{}', 'mistral').toolCalls;
      expect(call.id).toMatch(/^[A-Za-z0-9]{9}$/);
      ids.add(call.id);
    }
    expect(ids.size).toBe(20);
  });
});
