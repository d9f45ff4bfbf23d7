import { seededRandom } from '@ferrum/types';

/** Pieces of the benchmark text: prose, code, CJK, emoji and whitespace, as chat traffic mixes them. */
const PIECES = [
  'The quick brown fox jumps over the lazy dog.',
  'Inference engines batch requests to keep the accelerator busy,',
  'while the scheduler decides which sequences run in each step.',
  'function add(a, b) {\n  return a + b;\n}\n',
  'for (let i = 0; i < n; i++) sum += values[i];\n',
  '数学是科学的皇后，算术是数学的女王。',
  '日本語のテキストとカタカナ、ひらがな。',
  '한국어 문장입니다.',
  'emoji 🦀🚀👩‍👩‍👧‍👦',
  'naïve café — “quotes” and résumé',
  '    \n\t\n',
  '3.14159 2.71828 1e-9 0x7fff',
];

/**
 * A deterministic text of exactly `bytes` UTF-8 bytes (padded with spaces), drawn from {@link PIECES}
 * with a fixed seed.
 */
export function benchText(bytes: number, seed = 12345): string {
  const encoder = new TextEncoder();
  const parts: string[] = [];
  let length = 0;
  const random = seededRandom(seed);
  for (;;) {
    const piece = `${PIECES[Math.floor(random() * PIECES.length)]} `;
    const size = encoder.encode(piece).length;
    if (length + size > bytes) break;
    parts.push(piece);
    length += size;
  }
  return parts.join('') + ' '.repeat(bytes - length);
}
