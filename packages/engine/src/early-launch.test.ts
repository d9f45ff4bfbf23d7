import type { ScheduledStep } from '@ferrum/interfaces';
import {
  type BackendCapabilities,
  DEVICE_SAMPLING_OPS,
  type DeviceSamplingOp,
  MAX_DEVICE_TOP_LOGPROBS,
  type RowSampling,
  resolveSamplingParams,
  type SamplingParams,
  unavailableCapabilities,
} from '@ferrum/types';
import { describe, expect, it } from 'vitest';
import { EarlyLaunchRule } from './early-launch.js';

/** A runtime that takes placeholders and samples `ops` on its device. */
function capabilities(ops: readonly DeviceSamplingOp[]): BackendCapabilities {
  return { ...unavailableCapabilities('test'), available: true, deviceSampling: ops, previousTokens: true };
}

/** A one-row decode step without placeholders or swaps, sampled with `params`. */
function step(params: Partial<SamplingParams>): ScheduledStep {
  const sampling: RowSampling = {
    requestId: 'r',
    params: resolveSamplingParams(params),
    seed: 1,
    promptTokenIds: Int32Array.of(5),
    outputTokenIds: Int32Array.of(6),
    needsHostLogits: false,
  };
  return {
    batch: {
      tokenIds: Int32Array.of(6),
      positions: Int32Array.of(1),
      qIndptr: Int32Array.of(0, 1),
      kvIndptr: Int32Array.of(0, 2),
      kvIndices: Int32Array.of(0, 1),
      slotMapping: Int32Array.of(1),
      sampleRows: Int32Array.of(0),
      sampling: [sampling],
      numSeqs: 1,
      numTokens: 1,
    },
    swapIn: [],
    swapOut: [],
    preempted: [],
    seqIds: ['r'],
  };
}

describe('EarlyLaunchRule: logprobs', () => {
  const inFlight = step({ temperature: 0 });

  it('counts rows asking for alternatives as the runtime’s only where it lists top_logprobs, up to its limit', () => {
    const all = EarlyLaunchRule.of(capabilities(DEVICE_SAMPLING_OPS))!;
    const chosenOnly = EarlyLaunchRule.of(
      capabilities(DEVICE_SAMPLING_OPS.filter((op) => op !== 'top_logprobs')),
    )!;
    for (const rule of [all, chosenOnly]) {
      expect(rule.allows(step({ temperature: 0, logprobs: null }), inFlight)).toBe(true);
      expect(rule.allows(step({ temperature: 0, logprobs: 0 }), inFlight)).toBe(true);
    }
    expect(all.allows(step({ temperature: 0, logprobs: 1 }), inFlight)).toBe(true);
    expect(all.allows(step({ temperature: 0, logprobs: MAX_DEVICE_TOP_LOGPROBS }), inFlight)).toBe(true);
    expect(all.allows(step({ temperature: 0, logprobs: MAX_DEVICE_TOP_LOGPROBS + 1 }), inFlight)).toBe(false);
    expect(chosenOnly.allows(step({ temperature: 0, logprobs: 1 }), inFlight)).toBe(false);
  });

  it('needs the logprobs op for the chosen token’s logprob', () => {
    const rule = EarlyLaunchRule.of(capabilities(['greedy']))!;
    expect(rule.allows(step({ temperature: 0 }), inFlight)).toBe(true);
    expect(rule.allows(step({ temperature: 0, logprobs: 0 }), inFlight)).toBe(false);
  });
});
