import type { KvCacheManager, ScheduledStep, Scheduler } from '@ferrum/interfaces';

/** What the checker needs besides the step: the parts and an independent record of every sequence's tokens. */
export interface StepCheckContext {
  readonly scheduler: Scheduler;
  readonly kv: KvCacheManager;
  readonly maxNumBatchedTokens: number;
  readonly maxNumSeqs: number;
  /** Prompt plus outputs so far of a live sequence, as the test has seen them. */
  readonly tokensOf: (seqId: string) => readonly number[];
  readonly promptOf: (seqId: string) => readonly number[];
}

/**
 * Assert that a freshly scheduled step is a consistent ForwardBatch (call before anything mutates the
 * KV manager). Throws an Error naming the first violation.
 */
export function checkStep(step: ScheduledStep, ctx: StepCheckContext): void {
  const { batch } = step;
  const B = batch.numSeqs;
  const T = batch.numTokens;
  expect(step.seqIds.length === B && new Set(step.seqIds).size === B, 'seqIds: one distinct id per sequence');
  expect(B <= ctx.maxNumSeqs, `${B} sequences > maxNumSeqs`);
  expect(T <= ctx.maxNumBatchedTokens, `${T} tokens > maxNumBatchedTokens`);
  expect(batch.qIndptr.length === B + 1 && batch.kvIndptr.length === B + 1, 'indptr lengths');
  expect(batch.qIndptr[0] === 0 && batch.kvIndptr[0] === 0, 'indptr start at 0');
  expect(batch.qIndptr[B] === T, 'qIndptr ends at numTokens');
  expect(batch.kvIndices.length === batch.kvIndptr[B], 'kvIndices length');
  for (const a of [batch.tokenIds, batch.positions, batch.slotMapping])
    expect(a.length === T, 'row arrays length');
  const newSlotOwner = new Map<number, number>();
  const completes: boolean[] = [];
  let seenPrefill = false;
  for (let b = 0; b < B; b++) {
    const seqId = step.seqIds[b];
    const q = batch.qIndptr[b + 1] - batch.qIndptr[b];
    const ctxLen = batch.kvIndptr[b + 1] - batch.kvIndptr[b];
    expect(q >= 1 && ctxLen >= q, `${seqId}: ${q} rows, context ${ctxLen}`);
    const state = ctx.scheduler.stateOf(seqId);
    if (state === 'decoding') {
      expect(!seenPrefill && q === 1, `${seqId}: decodes come first, one token each`);
    } else {
      expect(state === 'prefilling', `${seqId}: state ${state} in a batch`);
      seenPrefill = true;
    }
    const slots = ctx.kv.slotsOf(seqId);
    const tokens = ctx.tokensOf(seqId);
    expect(slots.length === ctxLen, `${seqId}: holds ${slots.length} slots, context ${ctxLen}`);
    expect(ctxLen <= tokens.length, `${seqId}: context ${ctxLen} past its ${tokens.length} tokens`);
    for (let p = 0; p < ctxLen; p++) {
      expect(batch.kvIndices[batch.kvIndptr[b] + p] === slots[p], `${seqId}: kvIndices[${p}]`);
    }
    for (let j = 0; j < q; j++) {
      const row = batch.qIndptr[b] + j;
      const position = ctxLen - q + j;
      expect(batch.positions[row] === position, `${seqId}: position of row ${row}`);
      expect(batch.slotMapping[row] === slots[position], `${seqId}: slotMapping of row ${row}`);
      expect(batch.tokenIds[row] === tokens[position], `${seqId}: token of row ${row}`);
      expect(!newSlotOwner.has(slots[position]), `slot ${slots[position]} written twice`);
      newSlotOwner.set(slots[position], b);
    }
    completes.push(ctxLen === tokens.length);
  }
  // A slot written this step must not be part of another sequence's context.
  for (let b = 0; b < B; b++) {
    for (let k = batch.kvIndptr[b]; k < batch.kvIndptr[b + 1]; k++) {
      const owner = newSlotOwner.get(batch.kvIndices[k]);
      expect(
        owner === undefined || owner === b,
        `slot ${batch.kvIndices[k]} written by ${owner}, read by ${b}`,
      );
    }
  }
  checkSamples(step, ctx, completes);
}

/** Sampled rows are exactly the last rows of the sequences that complete, with matching sampling records. */
function checkSamples(step: ScheduledStep, ctx: StepCheckContext, completes: readonly boolean[]): void {
  const { batch } = step;
  const S = batch.sampleRows.length;
  expect(batch.sampling?.length === S, 'one sampling record per sampled row');
  const sampledSeqs = new Set<number>();
  for (let i = 0; i < S; i++) {
    const row = batch.sampleRows[i];
    let b = 0;
    while (batch.qIndptr[b + 1] <= row) b++;
    expect(
      row === batch.qIndptr[b + 1] - 1 && completes[b],
      `sample row ${row} is not a completing last row`,
    );
    expect(i === 0 || batch.sampleRows[i - 1] <= row, 'sample rows in batch order');
    sampledSeqs.add(b);
    const record = batch.sampling![i];
    const seqId = step.seqIds[b];
    expect(Number.isInteger(record.seed) && record.seed >= 0 && record.seed < 2 ** 32, 'seed is a u32');
    expect(sameTokens(record.promptTokenIds, ctx.promptOf(seqId)), `${seqId}: sampling prompt`);
    const tokens = ctx.tokensOf(seqId);
    expect(sameTokens(record.outputTokenIds, tokens.slice(ctx.promptOf(seqId).length)), `${seqId}: outputs`);
  }
  for (let b = 0; b < completes.length; b++) {
    expect(!completes[b] || sampledSeqs.has(b), `${step.seqIds[b]} completes without a sampled row`);
  }
}

function sameTokens(a: Int32Array, b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function expect(condition: boolean, message: string): void {
  if (!condition) throw new Error(`bad ForwardBatch: ${message}`);
}
