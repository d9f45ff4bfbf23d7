import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createStopMatcher } from './stop-matcher.js';

/** Reference: after each chunk, look for stop strings in the whole text so far; the earliest start wins. */
function referenceOutput(chunks: readonly string[], stops: readonly string[], includeStop: boolean) {
  let full = '';
  for (const chunk of chunks) {
    full += chunk;
    let best: { index: number; stop: string } | null = null;
    for (const stop of stops) {
      const index = full.indexOf(stop);
      if (index === -1) continue;
      if (!best || index < best.index || (index === best.index && stop.length > best.stop.length)) {
        best = { index, stop };
      }
    }
    if (best) return { text: full.slice(0, best.index) + (includeStop ? best.stop : ''), matched: best.stop };
  }
  return { text: full, matched: undefined };
}

describe('createStopMatcher', () => {
  it('holds back a stop string split across pushes and never releases it', () => {
    const matcher = createStopMatcher(['</answer>']);
    expect(matcher.push('The answer is 4</ans')).toEqual({ text: 'The answer is 4', stopped: false });
    expect(matcher.push('wer> and more')).toEqual({ text: '', stopped: true, matched: '</answer>' });
    expect(matcher.push('ignored')).toEqual({ text: '', stopped: true, matched: '</answer>' });
    expect(matcher.flush()).toBe('');
  });

  it('releases held text once it can no longer become a stop string', () => {
    const matcher = createStopMatcher(['STOP']);
    expect(matcher.push('abc ST').text).toBe('abc ');
    expect(matcher.push('AR').text).toBe('STAR');
    expect(matcher.push(' ST').text).toBe(' ');
    expect(matcher.flush()).toBe('ST');
  });

  it('appends the stop string when asked', () => {
    const matcher = createStopMatcher(['\n\n'], { includeStop: true });
    expect(matcher.push('line\n')).toEqual({ text: 'line', stopped: false });
    expect(matcher.push('\nnext')).toEqual({ text: '\n\n', stopped: true, matched: '\n\n' });
  });

  it('refuses empty stop strings', () => {
    expect(() => createStopMatcher(['ok', ''])).toThrow(
      expect.objectContaining({ code: 'invalid_argument' }),
    );
  });

  it('equals the whole-text reference and never releases what a later stop string claims', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', 'c', '😀'), maxLength: 40 });
    const stop = fc.string({ unit: fc.constantFrom('a', 'b', '😀'), minLength: 1, maxLength: 5 });
    fc.assert(
      fc.property(
        text,
        fc.array(fc.nat(40), { maxLength: 8 }),
        fc.array(stop, { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        (full, cuts, stops, includeStop) => {
          const points = [...new Set(cuts.map((cut) => Math.min(cut, full.length)))].sort((x, y) => x - y);
          const chunks = [...points, full.length].map((end, i) =>
            full.slice(i === 0 ? 0 : points[i - 1], end),
          );
          const expected = referenceOutput(chunks, stops, includeStop);
          const matcher = createStopMatcher(stops, { includeStop });
          let released = '';
          let matched: string | undefined;
          for (const chunk of chunks) {
            const result = matcher.push(chunk);
            released += result.text;
            // Whatever was released must survive: it is a prefix of the final output.
            expect(expected.text.startsWith(released)).toBe(true);
            if (result.stopped) {
              matched = result.matched;
              break;
            }
          }
          if (matched === undefined) released += matcher.flush();
          expect(released).toBe(expected.text);
          expect(matched).toBe(expected.matched);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
