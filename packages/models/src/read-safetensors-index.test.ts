import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { rejection } from '../test/helpers/rejection.js';
import { makeTempDir, writeSafetensors } from '../test/helpers/write-safetensors.js';
import { readSafetensorsIndex } from './read-safetensors-index.js';

async function writeIndex(dir: string, weightMap: Record<string, string>): Promise<void> {
  await writeFile(
    path.join(dir, 'model.safetensors.index.json'),
    JSON.stringify({ metadata: {}, weight_map: weightMap }),
  );
}

describe('readSafetensorsIndex', () => {
  it('reads model.safetensors and ignores other safetensors files', async () => {
    const dir = await makeTempDir();
    await writeSafetensors(path.join(dir, 'model.safetensors'), [
      { name: 'w', dtype: 'BF16', shape: [2, 2] },
    ]);
    await writeSafetensors(path.join(dir, 'golden.safetensors'), [
      { name: 'logits.0', dtype: 'F32', shape: [3] },
    ]);
    const tensors = await readSafetensorsIndex(dir);
    expect([...tensors.keys()]).toEqual(['w']);
    expect(tensors.get('w')?.file).toBe(path.join(dir, 'model.safetensors'));
  });

  it('merges the shards named by model.safetensors.index.json', async () => {
    const dir = await makeTempDir();
    await writeSafetensors(path.join(dir, 'model-00001-of-00002.safetensors'), [
      { name: 'a', dtype: 'F16', shape: [4] },
      { name: 'b', dtype: 'F16', shape: [2, 2] },
    ]);
    await writeSafetensors(path.join(dir, 'model-00002-of-00002.safetensors'), [
      { name: 'c', dtype: 'F32', shape: [3] },
    ]);
    await writeIndex(dir, {
      a: 'model-00001-of-00002.safetensors',
      b: 'model-00001-of-00002.safetensors',
      c: 'model-00002-of-00002.safetensors',
    });
    const tensors = await readSafetensorsIndex(dir);
    expect([...tensors.keys()].sort()).toEqual(['a', 'b', 'c']);
    expect(tensors.get('c')).toMatchObject({
      dtype: 'f32',
      file: path.join(dir, 'model-00002-of-00002.safetensors'),
    });
  });

  it('rejects an index naming a tensor its shard lacks, or a tensor in two shards', async () => {
    const dir = await makeTempDir();
    await writeSafetensors(path.join(dir, 's1.safetensors'), [{ name: 'a', dtype: 'F32', shape: [1] }]);
    await writeSafetensors(path.join(dir, 's2.safetensors'), [{ name: 'a', dtype: 'F32', shape: [1] }]);
    await writeIndex(dir, { a: 's1.safetensors', ghost: 's1.safetensors' });
    const missing = await rejection(readSafetensorsIndex(dir));
    expect(missing.code).toBe('missing_tensor');
    expect(missing.message).toContain('ghost');
    expect(missing.message).toContain(path.join(dir, 's1.safetensors'));

    await writeIndex(dir, { a: 's1.safetensors', b: 's2.safetensors' });
    const duplicate = await rejection(readSafetensorsIndex(dir));
    expect(duplicate.code).toBe('invalid_checkpoint');
    expect(duplicate.message).toMatch(/tensor a appears in both/);
  });

  it('reports folders without weights and malformed indexes', async () => {
    const dir = await makeTempDir();
    const none = await rejection(readSafetensorsIndex(dir));
    expect(none.code).toBe('not_found');
    expect(none.message).toContain(dir);

    await writeFile(path.join(dir, 'model.safetensors.index.json'), '{"weight_map": {"a": 3}}');
    const bad = await rejection(readSafetensorsIndex(dir));
    expect(bad.code).toBe('invalid_checkpoint');
    expect(bad.message).toContain('weight_map');
  });
});
