import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadModelConfig } from '@ferrum/models';
import type { ModelLoadSpec } from '@ferrum/types';
import { afterEach, describe, expect, it, vi } from 'vitest';
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
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('polls by default and sleeps where the environment says FERRUM_CUDA_SPIN_WAIT=0', async () => {
    vi.stubEnv('FERRUM_CUDA_SPIN_WAIT', undefined);
    expect((await nativeLoadSpec(await spec(), 0)).spinWait).toBe(true);
    vi.stubEnv('FERRUM_CUDA_SPIN_WAIT', '0');
    expect((await nativeLoadSpec(await spec(), 0)).spinWait).toBe(false);
  });

  it('takes backendOptions.spinWait over the environment, and refuses a non-boolean', async () => {
    vi.stubEnv('FERRUM_CUDA_SPIN_WAIT', '0');
    expect((await nativeLoadSpec(await spec({ spinWait: true }), 0)).spinWait).toBe(true);
    vi.stubEnv('FERRUM_CUDA_SPIN_WAIT', undefined);
    expect((await nativeLoadSpec(await spec({ spinWait: false }), 0)).spinWait).toBe(false);
    await expect(nativeLoadSpec(await spec({ spinWait: 'no' }), 0)).rejects.toThrow(
      'backendOptions.spinWait must be true or false',
    );
  });
});
