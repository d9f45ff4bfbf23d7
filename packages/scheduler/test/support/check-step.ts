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
  /** The step in flight when this one was planned (overlap): its samples fill this one's placeholders. */
  readonly previous: ScheduledStep | null;
}

/**
 * Assert that a freshly scheduled step is a consistent ForwardBatch (call before anything mutates the
 * KV manager). A placeholder row stands for the one token the step in flight samples for its sequence.
 * Throws an Error naming the first violation.
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
  const placeholderRows = checkPlaceholders(step, ctx);
  const newSlotOwner = new Map<number, number>();
  const completes: boolean[] = [];
  let seenPrefill = false;
  for (let b = 0; b < B; b++) {
    const seqId = step.seqIds[b];
    const q = batch.qIndptr[b + 1] - batch.qIndptr[b];
    const ctxLen = batch.kvIndptr[b + 1] - batch.kvIndptr[b];
    expect(q >= 1 && ctxLen >= q, `${seqId}: ${q} rows, context ${ctxLen}`);
    const pending = placeholderRows.has(batch.qIndptr[b + 1] - 1) ? 1 : 0;
    const state = ctx.scheduler.stateOf(seqId);
    if (state === 'decoding' || pending > 0) {
      expect(!seenPrefill && q === 1, `${seqId}: decodes come first, one token each`);
    } else {
      expect(state === 'prefilling', `${seqId}: state ${state} in a batch`);
      seenPrefill = true;
    }
    const slots = ctx.kv.slotsOf(seqId);
    const tokens = ctx.tokensOf(seqId);
    expect(slots.length === ctxLen, `${seqId}: holds ${slots.length} slots, context ${ctxLen}`);
    expect(ctxLen <= tokens.length + pending, `${seqId}: context ${ctxLen} past its ${tokens.length} tokens`);
    for (let p = 0; p < ctxLen; p++) {
      expect(batch.kvIndices[batch.kvIndptr[b] + p] === slots[p], `${seqId}: kvIndices[${p}]`);
    }
    for (let j = 0; j < q; j++) {
      const row = batch.qIndptr[b] + j;
      const position = ctxLen - q + j;
      expect(batch.positions[row] === position, `${seqId}: position of row ${row}`);
      expect(batch.slotMapping[row] === slots[position], `${seqId}: slotMapping of row ${row}`);
      const token = placeholderRows.has(row) ? 0 : tokens[position];
      expect(batch.tokenIds[row] === token, `${seqId}: token of row ${row}`);
      expect(!newSlotOwner.has(slots[position]), `slot ${slots[position]} written twice`);
      newSlotOwner.set(slots[position], b);
    }
    completes.push(ctxLen === tokens.length + pending);
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
  checkSamples(step, ctx, completes, (b) => placeholderRows.has(batch.qIndptr[b + 1] - 1));
}

/**
 * Placeholder rows are the last rows of distinct sequences and each takes a token the step in flight
 * samples for the same sequence. Returns the set of placeholder rows.
 */
function checkPlaceholders(step: ScheduledStep, ctx: StepCheckContext): Set<number> {
  const rows = step.placeholders?.rows ?? new Int32Array(0);
  const sources = step.placeholders?.sampleIndices ?? new Int32Array(0);
  const set = new Set(rows);
  expect(set.size === rows.length && sources.length === rows.length, 'placeholder rows distinct');
  const previous = ctx.previous;
  expect(rows.length === 0 || previous !== null, 'placeholders without a step in flight');
  for (let k = 0; k < rows.length; k++) {
    const b = ownerOf(step, rows[k]);
    expect(rows[k] === step.batch.qIndptr[b + 1] - 1, `placeholder row ${rows[k]} is not a last row`);
    const source = previous!.batch.sampleRows[sources[k]];
    expect(
      source !== undefined,
      `placeholder ${k} takes sample ${sources[k]} of ${previous!.batch.sampleRows.length}`,
    );
    expect(
      previous!.seqIds[ownerOf(previous!, source)] === step.seqIds[b],
      `placeholder row ${rows[k]} takes another sequence's token`,
    );
  }
  return set;
}

/**
 * After `complete()` of the step in flight: the placeholder rows of sequences still live hold the tokens
 * now known, and their sampling records see them. Rows of sequences that ended are discarded.
 */
export function checkResolved(
  step: ScheduledStep,
  ctx: StepCheckContext,
  isLive: (seqId: string) => boolean,
): void {
  const { batch } = step;
  const rows = new Set(step.placeholders?.rows ?? []);
  for (const row of rows) {
    const seqId = step.seqIds[ownerOf(step, row)];
    if (!isLive(seqId)) continue;
    const tokens = ctx.tokensOf(seqId);
    expect(batch.tokenIds[row] === tokens[batch.positions[row]], `${seqId}: placeholder row ${row} filled`);
  }
  for (let i = 0; i < batch.sampleRows.length; i++) {
    const seqId = step.seqIds[ownerOf(step, batch.sampleRows[i])];
    if (!rows.has(batch.sampleRows[i]) || !isLive(seqId)) continue;
    const outputs = ctx.tokensOf(seqId).slice(ctx.promptOf(seqId).length);
    expect(sameTokens(batch.sampling![i].outputTokenIds, outputs), `${seqId}: outputs after the fill`);
  }
}

/** The sequence owning `row`. */
function ownerOf(step: ScheduledStep, row: number): number {
  let b = 0;
  while (step.batch.qIndptr[b + 1] <= row) b++;
  return b;
}

/**
 * Sampled rows are exactly the last rows of the sequences that complete, with matching sampling records.
 * The record of a row after a placeholder (`pending(b)`) already counts it among the outputs (a runtime
 * reading placeholders on the device may read the record before it is filled, and seeded draws depend on
 * the count); it sees its value once filled (checkResolved).
 */
function checkSamples(
  step: ScheduledStep,
  ctx: StepCheckContext,
  completes: readonly boolean[],
  pending: (b: number) => boolean,
): void {
  const { batch } = step;
  const S = batch.sampleRows.length;
  expect(batch.sampling?.length === S, 'one sampling record per sampled row');
  const sampledSeqs = new Set<number>();
  for (let i = 0; i < S; i++) {
    const row = batch.sampleRows[i];
    const b = ownerOf(step, row);
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
    const outputs = ctx.tokensOf(seqId).slice(ctx.promptOf(seqId).length);
    const known = pending(b) ? record.outputTokenIds.subarray(0, outputs.length) : record.outputTokenIds;
    expect(sameTokens(known, outputs), `${seqId}: outputs`);
    expect(record.outputTokenIds.length === outputs.length + (pending(b) ? 1 : 0), `${seqId}: output count`);
    // Consumers that need only the count read it without making the outputs view.
    expect(record.numOutputTokens === record.outputTokenIds.length, `${seqId}: numOutputTokens`);
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
