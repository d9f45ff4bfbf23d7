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
 * `log Σ exp(row[i])` over the entries above -Infinity (NaN skipped), computed stably around the maximum in
 * double precision; `log_softmax(row)[i] = row[i] - logSumExp(row)`.
 * @returns -Infinity when every entry is -Infinity.
 */
export function logSumExp(row: Float32Array): number {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < row.length; i++) if (row[i] > max) max = row[i];
  if (max === Number.NEGATIVE_INFINITY) return max;
  let sum = 0;
  for (let i = 0; i < row.length; i++) {
    const value = row[i];
    if (value > Number.NEGATIVE_INFINITY) sum += Math.exp(value - max);
  }
  return max + Math.log(sum);
}
