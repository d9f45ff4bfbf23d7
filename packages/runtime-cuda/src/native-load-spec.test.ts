import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadModelConfig } from '@ferrum/models';
import type { ModelLoadSpec } from '@ferrum/types';
import { afterEach, describe, expect, it } from 'vitest';
import { nativeLoadSpec } from './native-load-spec.js';

const model = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../fixtures/tiny-models/qwen3-qknorm',
);

async function spec(backendOptions: Record<string, unknown> = {}): Promise<ModelLoadSpec> {
  return {
    modelDir: model,
    config: await loadModelConfig(model),
    loadFormat: 'dummy',
    maxBatchTokens: 64,
    maxBatchSeqs: 4,
    backendOptions,
  };
}

describe('nativeLoadSpec: spinWait', () => {
  const saved = process.env.FERRUM_CUDA_SPIN_WAIT;
  afterEach(() => {
    if (saved === undefined) delete process.env.FERRUM_CUDA_SPIN_WAIT;
    else process.env.FERRUM_CUDA_SPIN_WAIT = saved;
  });

  it('polls by default and sleeps where the environment says FERRUM_CUDA_SPIN_WAIT=0', async () => {
    delete process.env.FERRUM_CUDA_SPIN_WAIT;
    expect((await nativeLoadSpec(await spec(), 0)).spinWait).toBe(true);
    process.env.FERRUM_CUDA_SPIN_WAIT = '0';
    expect((await nativeLoadSpec(await spec(), 0)).spinWait).toBe(false);
  });

  it('takes backendOptions.spinWait over the environment, and refuses a non-boolean', async () => {
    process.env.FERRUM_CUDA_SPIN_WAIT = '0';
    expect((await nativeLoadSpec(await spec({ spinWait: true }), 0)).spinWait).toBe(true);
    delete process.env.FERRUM_CUDA_SPIN_WAIT;
    expect((await nativeLoadSpec(await spec({ spinWait: false }), 0)).spinWait).toBe(false);
    await expect(nativeLoadSpec(await spec({ spinWait: 'no' }), 0)).rejects.toThrow(
      'backendOptions.spinWait must be true or false',
    );
  });
});
