import { open, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rejection } from '../test/helpers/rejection.js';
import { makeTempDir, writeRawSafetensors, writeSafetensors } from '../test/helpers/write-safetensors.js';
import { readSafetensorsHeader } from './read-safetensors-header.js';

async function bytesAt(file: string, offset: number, length: number): Promise<number[]> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, offset);
    return [...buffer];
  } finally {
    await handle.close();
  }
}

describe('readSafetensorsHeader', () => {
  it('lists tensors with absolute byte ranges that point at their data', async () => {
    const dir = await makeTempDir();
    const file = path.join(dir, 'w.safetensors');
    await writeSafetensors(file, [
      { name: 'a', dtype: 'F32', shape: [2, 3], fill: 10 },
      { name: 'b', dtype: 'F16', shape: [5], fill: 100 },
      { name: 'c', dtype: 'BF16', shape: [1, 1, 4], fill: 200 },
      { name: 'scalar', dtype: 'F32', shape: [], fill: 7 },
    ]);
    const entries = await readSafetensorsHeader(file);
    expect(entries.map((e) => [e.name, e.dtype, e.shape, e.byteLength])).toEqual([
      ['a', 'f32', [2, 3], 24],
      ['b', 'f16', [5], 10],
      ['c', 'bf16', [1, 1, 4], 8],
      ['scalar', 'f32', [], 4],
    ]);
    for (const [entry, fill] of entries.map((e, i) => [e, [10, 100, 200, 7][i]!] as const)) {
      expect(entry.file).toBe(file);
      const bytes = await bytesAt(file, entry.byteOffset, entry.byteLength);
      expect(bytes).toEqual(Array.from({ length: entry.byteLength }, (_, i) => (fill + i) % 256));
    }
  });

  it('rejects corrupt headers and ranges outside the file', async () => {
    const dir = await makeTempDir();
    const hugeLength = Buffer.alloc(10);
    hugeLength.writeBigUInt64LE(1n << 40n);
    // Either the whole file's bytes, or a header text and data written in the format's layout.
    const cases: [string, Buffer | [string, number], RegExp][] = [
      ['short', Buffer.from([1, 2, 3]), /too short/],
      ['huge-length', hugeLength, /header length/],
      ['not-json', ['{"a": ', 4], /not JSON/],
      ['array', ['[1,2]', 0], /not a JSON object/],
      ['outside', ['{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 4], /outside/],
      ['reversed', ['{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}', 4], /outside/],
      ['size', ['{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', 8], /needs 12/],
      ['shape', ['{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}', 4], /invalid shape/],
      ['offsets', ['{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}', 4], /data_offsets/],
    ];
    for (const [name, content, pattern] of cases) {
      const file = path.join(dir, `${name}.safetensors`);
      if (Buffer.isBuffer(content)) await writeFile(file, content);
      else await writeRawSafetensors(file, content[0], Buffer.alloc(content[1]));
      const error = await rejection(readSafetensorsHeader(file));
      expect(error.code, name).toBe('invalid_checkpoint');
      expect(error.message, name).toMatch(pattern);
      expect(error.message, name).toContain(file);
    }
  });

  it('names tensor and file for unsupported dtypes', async () => {
    const dir = await makeTempDir();
    const file = path.join(dir, 'ints.safetensors');
    await writeSafetensors(file, [
      { name: 'ok', dtype: 'F32', shape: [1] },
      { name: 'positions', dtype: 'I64', shape: [4] },
    ]);
    const error = await rejection(readSafetensorsHeader(file));
    expect(error.code).toBe('unsupported_dtype');
    expect(error.message).toContain('positions');
    expect(error.message).toContain(file);
    expect(error.message).toContain('I64');
  });

  it('reports a missing file as not_found', async () => {
    const error = await rejection(readSafetensorsHeader(path.join(await makeTempDir(), 'nope.safetensors')));
    expect(error.code).toBe('not_found');
  });
});
