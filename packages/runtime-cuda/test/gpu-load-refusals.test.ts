// Shapes the CUDA runtime has no kernels for are refused at load with unsupported_architecture and a message that
// says what it does support, not met later inside a step.
import { loadModelConfig } from '@ferrum/models';
import { describe, expect, it } from 'vitest';
import { cudaAvailability, dummyQwen3Dir, loadCuda } from './support.js';

const { available, reason } = await cudaAvailability();

describe.skipIf(!available)(`runtime-cuda load refusals${available ? '' : ` (skipped: ${reason})`}`, () => {
  it('refuses a head dim no attention kernel is built for, naming the built ones', async () => {
    const dir = dummyQwen3Dir(48, 4, 2);
    const config = await loadModelConfig(dir);
    await expect(loadCuda(dir, config, {}, 'dummy')).rejects.toMatchObject({
      code: 'unsupported_architecture',
      message: expect.stringMatching(/head dims 16, 32, 64, 128, 256, not 48/),
    });
  });
});
