import { describe, expect, it } from 'vitest';
import { SAMPLER } from './index.js';
import { defineToken } from './injection-token.js';

describe('defineToken', () => {
  it('returns the registered symbol, equal across calls and copies', () => {
    expect(defineToken('SamplerV1')).toBe(SAMPLER);
    expect(SAMPLER.description).toBe('@ferrum/interfaces:SamplerV1');
  });
});
