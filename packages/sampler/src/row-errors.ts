import { FerrumError } from '@ferrum/types';

/** The error for a row whose every logit is -Infinity (allowed, banned and min-tokens masks left nothing). */
export function maskedRowError(): FerrumError {
  return new FerrumError('invalid_argument', 'every token is masked: nothing is left to sample');
}

/** The error for a row holding +Infinity, which has no softmax. */
export function positiveInfinityError(): FerrumError {
  return new FerrumError(
    'invalid_argument',
    'logits hold +Infinity (to force a token, set the other logits to -Infinity instead)',
  );
}
