import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ToolCallObjectReader } from './tool-call-object-reader.js';

/** What a reader made of `text`, read at once or in the given growing prefixes. */
function readAll(text: string, stops: readonly number[] = [text.length]) {
  const reader = new ToolCallObjectReader();
  for (const stop of [...stops, text.length]) reader.read(text, stop);
  const { name, argumentsStart, argumentsEnd, end, invalid } = reader;
  const args =
    argumentsStart === -1 ? null : text.slice(argumentsStart, argumentsEnd === -1 ? undefined : argumentsEnd);
  return { name, args, end, invalid };
}

describe('ToolCallObjectReader', () => {
  it('finds the name and the arguments value, whatever the key order', () => {
    const text = '  {"name": "f", "arguments": {"a": [1, "}]"], "b": {}}, "id": 7} tail';
    expect(readAll(text)).toEqual({
      name: 'f',
      args: '{"a": [1, "}]"], "b": {}}',
      end: text.indexOf('} tail') + 1,
      invalid: false,
    });
    expect(readAll('{"parameters":{"x":"\\"{"},"name":"g\\u0021"}')).toMatchObject({
      name: 'g!',
      args: '{"x":"\\"{"}',
    });
    expect(readAll('{"\\u006eame": "h", "arguments": null}')).toMatchObject({ name: 'h', args: 'null' });
    expect(readAll('{"name": "f", "arguments": 12 }')).toMatchObject({ args: '12', end: 31 });
  });

  it('knows no name that is not a non-empty string, and stops at text that is no object', () => {
    expect(readAll('{"name": 3, "arguments": {}}')).toMatchObject({ name: null, invalid: false });
    expect(readAll('{"name": "", "arguments": {}}').name).toBeNull();
    for (const text of ['[{"name": "f"}]', '{"name" "f"}', '{"name": "f",, }', '{"name": , "a": 1}', 'x{}']) {
      expect(readAll(text)).toMatchObject({ invalid: true, end: -1 });
    }
  });

  it('leaves an unfinished object open', () => {
    expect(readAll('{"name": "f", "arguments": {"a": "x')).toEqual({
      name: 'f',
      args: '{"a": "x',
      end: -1,
      invalid: false,
    });
  });

  it('reads the same however the text arrives', () => {
    const text = '{"arguments": {"q": "a \\"b\\" {c}", "n": [1, {"d": null}]}, "name": "search", "x": true}';
    const whole = readAll(text);
    fc.assert(
      fc.property(fc.array(fc.nat(text.length), { maxLength: 12 }), (stops) => {
        expect(
          readAll(
            text,
            [...stops].sort((a, b) => a - b),
          ),
        ).toEqual(whole);
      }),
    );
  });
});
