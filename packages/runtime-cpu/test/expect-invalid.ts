import { FerrumError } from '@ferrum/types';
import { expect } from 'vitest';

/** `promise` rejects with a FerrumError `invalid_argument` whose message matches `message`. */
export async function expectInvalid(promise: Promise<unknown>, message: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(FerrumError);
  expect((error as FerrumError).code).toBe('invalid_argument');
  expect((error as FerrumError).message).toMatch(message);
}
