/**
 * Index of the largest logit; ties go to the lowest token id. NaN entries are skipped.
 * @returns -1 when no entry is above -Infinity (every token masked).
 */
export function argmax(row: Float32Array): number {
  let best = -1;
  let bestValue = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < row.length; i++) {
    const value = row[i];
    if (value > bestValue) {
      bestValue = value;
      best = i;
    }
  }
  return best;
}

/**
 * Largest entry, NaN entries skipped (-Infinity when every entry is -Infinity or NaN).
 */
export function maxOf(row: Float32Array): number {
  // Math.max compiles to branch-free code and runs ~2x faster than a compare-and-branch loop here, but a
  // single NaN poisons it: redo those rare rows with comparisons, which skip NaN.
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < row.length; i++) max = Math.max(max, row[i]);
  if (!Number.isNaN(max)) return max;
  max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < row.length; i++) if (row[i] > max) max = row[i];
  return max;
}

/**
 * `log Σ exp(row[i])` over the entries above -Infinity (NaN skipped), computed stably around the maximum in
 * double precision; `log_softmax(row)[i] = row[i] - logSumExp(row)`.
 * @returns -Infinity when every entry is -Infinity.
 */
export function logSumExp(row: Float32Array): number {
  const max = maxOf(row);
  if (max === Number.NEGATIVE_INFINITY) return max;
  let sum = 0;
  for (let i = 0; i < row.length; i++) {
    const value = row[i];
    if (value > Number.NEGATIVE_INFINITY) sum += Math.exp(value - max);
  }
  return max + Math.log(sum);
}
