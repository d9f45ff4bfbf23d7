import type { SequenceRequest } from '@ferrum/interfaces';
import { FerrumError } from '@ferrum/types';
import type { ResolvedSchedulerOptions } from './scheduler-options.js';
import { type SeedStream, sequenceSeed } from './seed-stream.js';
import { type RequestGroup, Sequence } from './sequence.js';

/**
 * Build the sequences of a request: with `n = 1` one sequence `requestId`; with `n > 1` a prompt sequence
 * `requestId` that prefills the prompt once, plus `n` dormant children `${requestId}#${i}` it forks into
 * when it samples. The prompt sequence comes first. Throws `invalid_argument` for an unusable request.
 */
export function createRequestSequences(
  request: SequenceRequest,
  order: number,
  options: ResolvedSchedulerOptions,
  seeds: SeedStream,
): RequestGroup {
  const { sampling, promptTokenIds, requestId } = request;
  const numPrompt = promptTokenIds.length;
  if (numPrompt < 1) invalid(`request ${requestId} has an empty prompt`);
  if (!Number.isSafeInteger(sampling.n) || sampling.n < 1 || sampling.n > options.maxNumSeqs) {
    invalid(`n must be an integer in [1, ${options.maxNumSeqs}], got ${sampling.n}`);
  }
  if (!Number.isSafeInteger(sampling.maxTokens) || sampling.maxTokens < 1) {
    invalid(`maxTokens must be a positive integer, got ${sampling.maxTokens}`);
  }
  if (!Number.isFinite(request.priority) || !Number.isFinite(request.arrivalTimeMs)) {
    invalid(`request ${requestId} needs a finite priority and arrival time`);
  }
  const seed = sampling.seed === null ? seeds.next() : sampling.seed >>> 0;
  // Longest the sequence can get: generation stops at maxTokens outputs or maxModelLen tokens in all
  // (a prompt of exactly maxModelLen still yields one token).
  const capacity = numPrompt + Math.max(1, Math.min(sampling.maxTokens, options.maxModelLen - numPrompt));
  const sequences: Sequence[] = [];
  const group: RequestGroup = {
    request,
    order,
    stopTokenIds: sampling.ignoreEos
      ? [...sampling.stopTokenIds]
      : [...request.eosTokenIds, ...sampling.stopTokenIds],
    sequences,
    numCachedPromptTokens: -1,
  };
  if (sampling.n === 1) {
    sequences.push(new Sequence(requestId, group, 0, capacity, seed));
    return group;
  }
  const prompt = new Sequence(requestId, group, -1, numPrompt, seed);
  prompt.children = [];
  sequences.push(prompt);
  for (let i = 0; i < sampling.n; i++) {
    const child = new Sequence(`${requestId}#${i}`, group, i, capacity, sequenceSeed(seed, i));
    child.parent = prompt;
    prompt.children.push(child);
    sequences.push(child);
  }
  return group;
}

function invalid(message: string): never {
  throw new FerrumError('invalid_argument', message);
}
