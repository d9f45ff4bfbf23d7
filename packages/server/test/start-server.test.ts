import { type AddressInfo, createServer } from 'node:net';
import { isFerrumError } from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { startServer } from '../src/index.js';
import { FakeEngine } from './helpers/fake-engine.js';

describe('startServer', () => {
  it('refuses a taken port with a one-line invalid_argument FerrumError', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const error = await startServer(new FakeEngine(), { host: '127.0.0.1', port }).catch((e) => e);
      expect(isFerrumError(error)).toBe(true);
      expect(error.code).toBe('invalid_argument');
      expect(error.message).toBe(`cannot listen on 127.0.0.1:${port}: the address is already in use`);
    } finally {
      taken.close();
    }
  });
});
