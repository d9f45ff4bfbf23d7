import { describe, expect, it } from 'vitest';
import { createCudaBackend } from '../src/index.js';

describe('cuda probe', () => {
  it('never throws and explains itself when unavailable', async () => {
    const capabilities = await createCudaBackend().probe();
    if (capabilities.available) {
      expect(capabilities.score).toBeGreaterThan(0);
      expect(capabilities.features.some((feature) => feature.startsWith('sm_'))).toBe(true);
      expect(capabilities.deviceSampling).toContain('top_p');
    } else {
      expect(capabilities.score).toBe(0);
      expect(capabilities.reason).toMatch(/^unavailable: \S/);
    }
  });
});
