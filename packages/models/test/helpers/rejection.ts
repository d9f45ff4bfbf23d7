import { FerrumError } from '@ferrum/types';
import { expect } from 'vitest';

/** Awaits a promise that must reject with a FerrumError, and returns the error. */
export async function rejection(promise: Promise<unknown>): Promise<FerrumError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FerrumError);
  return error as FerrumError;
}
