import { type FerrumErrorCode, isFerrumError } from '@ferrum/types';
import { expect } from 'vitest';

/** Asserts that `fn` throws a FerrumError with `code`. */
export function expectCode(fn: () => unknown, code: FerrumErrorCode): void {
  try {
    fn();
  } catch (error) {
    expect(isFerrumError(error) && error.code).toBe(code);
    return;
  }
  throw new Error(`expected FerrumError ${code}`);
}
