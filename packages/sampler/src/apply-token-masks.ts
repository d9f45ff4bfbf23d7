import type { LogitsContext } from '@ferrum/interfaces';
import { FerrumError, numOutputTokensOf } from '@ferrum/types';

function checkId(id: number, vocabSize: number, field: string): void {
  if (!(id >= 0 && id < vocabSize && Number.isInteger(id))) {
    throw new FerrumError('invalid_argument', `${field}: token id ${id} is outside [0, ${vocabSize})`, {
      details: { field, tokenId: id, vocabSize },
    });
  }
}

/**
 * Keep only `allowed` ids: every other logit of `row` becomes -Infinity. In place.
 * `saved` is caller-owned scratch of at least `allowed.length` entries (reused across calls, so the
 * O(vocab) fill is the only full pass).
 */
export function applyAllowedTokenIds(
  row: Float32Array,
  allowed: readonly number[],
  saved: Float32Array,
): void {
  for (let j = 0; j < allowed.length; j++) {
    checkId(allowed[j], row.length, 'allowedTokenIds');
    saved[j] = row[allowed[j]];
  }
  row.fill(Number.NEGATIVE_INFINITY);
  for (let j = 0; j < allowed.length; j++) row[allowed[j]] = saved[j];
}

/** Set the logits of `ids` to -Infinity. In place. */
export function applyBannedTokenIds(
  row: Float32Array,
  ids: readonly number[],
  field = 'bannedTokenIds',
): void {
  for (let j = 0; j < ids.length; j++) {
    checkId(ids[j], row.length, field);
    row[ids[j]] = Number.NEGATIVE_INFINITY;
  }
}

/**
 * `minTokens`: while the sequence has generated fewer than `params.minTokens` tokens, mask its stop ids
 * (`params.stopTokenIds`) and, unless `params.ignoreEos` (then EOS ends nothing), the model's EOS ids
 * (`context.eosTokenIds`). In place. vLLM masks the same set.
 */
export function applyMinTokens(row: Float32Array, context: LogitsContext): void {
  const { params } = context;
  if (numOutputTokensOf(context) >= params.minTokens) return;
  applyBannedTokenIds(row, params.stopTokenIds, 'stopTokenIds');
  if (!params.ignoreEos && context.eosTokenIds !== undefined) {
    applyBannedTokenIds(row, context.eosTokenIds, 'eosTokenIds');
  }
}

/** Add `bias[id]` to the logit of each listed id (OpenAI's `logit_bias`). In place. */
export function applyLogitBias(row: Float32Array, bias: Readonly<Record<number, number>>): void {
  // for-in walks the keys without building an array of them.
  for (const key in bias) {
    const id = Number(key);
    checkId(id, row.length, 'logitBias');
    row[id] += bias[id];
  }
}
