import { describe, expect, it } from 'vitest';
import { createMetalBackend, metalUnavailableReason } from './metal-backend.js';

describe('metal backend', () => {
  it('reports itself unavailable with a reason instead of pretending', async () => {
    const backend = createMetalBackend();
    const caps = await backend.probe();
    expect(caps.available).toBe(false);
    expect(caps.score).toBe(0);
    expect(caps.reason).toBe(metalUnavailableReason());
  });
  it('names macOS as the requirement on other platforms', () => {
    expect(metalUnavailableReason('linux')).toBe('Metal needs macOS (this is linux)');
  });
  it('refuses to load a model with backend_unavailable', async () => {
    await expect(createMetalBackend().loadModel({} as never)).rejects.toMatchObject({
      code: 'backend_unavailable',
    });
  });
});
