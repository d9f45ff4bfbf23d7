import type { ScheduledStep } from '@ferrum/interfaces';
import type { ForwardBatch } from '@ferrum/types';

/** Vocabulary of the fake model; token 0 is its EOS. */
export const FAKE_VOCAB_SIZE = 40;
export const FAKE_EOS = 0;

/**
 * The fake model: the next token is a hash of the whole context and the row's seed, so outputs are
 * deterministic and any wrong KV content (a wrong slot, a lost prefix, a bad swap) changes them.
 */
export function nextToken(context: ArrayLike<number>, length: number, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < length; i++) h = Math.imul(h ^ context[i], 0x01000193) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d) >>> 0;
  return ((h ^ (h >>> 12)) >>> 0) % FAKE_VOCAB_SIZE;
}

/**
 * A runtime over a real slot store: each device slot keeps the (token, position) written to it, swaps
 * copy between device and host slots, and sampled rows read their context only through `kvIndices`.
 * Every context slot must hold the position it is used for, else the KV bookkeeping is corrupt.
 */
export class FakeRuntime {
  private readonly deviceTokens: Int32Array;
  private readonly devicePositions: Int32Array;
  private readonly hostTokens: Int32Array;
  private readonly hostPositions: Int32Array;
  private context = new Int32Array(64);

  constructor(numSlots: number, numHostSlots = 0) {
    this.deviceTokens = new Int32Array(numSlots).fill(-1);
    this.devicePositions = new Int32Array(numSlots).fill(-1);
    this.hostTokens = new Int32Array(numHostSlots).fill(-1);
    this.hostPositions = new Int32Array(numHostSlots).fill(-1);
  }

  /** Swaps, then the forward; returns one token per sampled row. */
  run(step: ScheduledStep): Int32Array {
    for (const { deviceSlots, hostSlots } of step.swapOut) {
      for (let i = 0; i < deviceSlots.length; i++) {
        this.hostTokens[hostSlots[i]] = this.deviceTokens[deviceSlots[i]];
        this.hostPositions[hostSlots[i]] = this.devicePositions[deviceSlots[i]];
      }
    }
    for (const { deviceSlots, hostSlots } of step.swapIn) {
      for (let i = 0; i < deviceSlots.length; i++) {
        this.deviceTokens[deviceSlots[i]] = this.hostTokens[hostSlots[i]];
        this.devicePositions[deviceSlots[i]] = this.hostPositions[hostSlots[i]];
      }
    }
    return this.forward(step.batch);
  }

  private forward(batch: ForwardBatch): Int32Array {
    for (let t = 0; t < batch.numTokens; t++) {
      this.deviceTokens[batch.slotMapping[t]] = batch.tokenIds[t];
      this.devicePositions[batch.slotMapping[t]] = batch.positions[t];
    }
    const rowToSeq = new Int32Array(batch.numTokens);
    for (let b = 0; b < batch.numSeqs; b++) {
      this.gatherContext(batch, b);
      rowToSeq.fill(b, batch.qIndptr[b], batch.qIndptr[b + 1]);
    }
    const tokens = new Int32Array(batch.sampleRows.length);
    for (let i = 0; i < tokens.length; i++) {
      const row = batch.sampleRows[i];
      const length = this.gatherContext(batch, rowToSeq[row], batch.positions[row] + 1);
      tokens[i] = nextToken(this.context, length, batch.sampling?.[i].seed ?? 0);
    }
    return tokens;
  }

  /** Read sequence b's context (its first `length` positions) into `this.context`, checking positions. */
  private gatherContext(
    batch: ForwardBatch,
    b: number,
    length = batch.kvIndptr[b + 1] - batch.kvIndptr[b],
  ): number {
    if (this.context.length < length) this.context = new Int32Array(length * 2);
    const start = batch.kvIndptr[b];
    for (let p = 0; p < length; p++) {
      const slot = batch.kvIndices[start + p];
      if (this.devicePositions[slot] !== p) {
        throw new Error(
          `KV corrupt: sequence ${b} position ${p} reads slot ${slot} holding position ${this.devicePositions[slot]}`,
        );
      }
      this.context[p] = this.deviceTokens[slot];
    }
    return length;
  }
}

/** What an engine over the fake model must output for one sequence (greedy on the fake model). */
export function referenceOutput(
  prompt: ArrayLike<number>,
  seed: number,
  limits: { maxTokens: number; minTokens: number; maxModelLen: number; stopTokenIds: readonly number[] },
): { tokens: number[]; finishReason: 'stop' | 'length' } {
  const all = Array.from(prompt);
  const tokens: number[] = [];
  for (;;) {
    const token = nextToken(all, all.length, seed >>> 0);
    all.push(token);
    tokens.push(token);
    if (tokens.length >= limits.minTokens && limits.stopTokenIds.includes(token))
      return { tokens, finishReason: 'stop' };
    if (tokens.length >= limits.maxTokens || all.length >= limits.maxModelLen)
      return { tokens, finishReason: 'length' };
  }
}
