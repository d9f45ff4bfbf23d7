import type { TestRequest } from './harness.js';
import { prompt } from './setup.js';

/** A request and the step at which it arrives. */
export interface TimedRequest extends TestRequest {
  readonly arrivalStep: number;
}

/** Shape of a random workload. */
export interface WorkloadShape {
  readonly numRequests: number;
  readonly maxPromptTokens: number;
  readonly maxOutputTokens: number;
  /** Requests arrive over steps [0, arrivalSteps). */
  readonly arrivalSteps: number;
  readonly maxPriority: number;
  /** Fraction of requests with n = 2 or 3. */
  readonly forkFraction: number;
}

/** Random requests: lengths, priorities, seeds (half explicit, half drawn by the scheduler), n and arrival. */
export function randomWorkload(random: () => number, shape: WorkloadShape): TimedRequest[] {
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const requests: TimedRequest[] = [];
  for (let i = 0; i < shape.numRequests; i++) {
    // Some requests share a prefix with an earlier one, so the prefix cache gets hits.
    const own = prompt(int(1, shape.maxPromptTokens), 1000 + i);
    const base = i > 0 && random() < 0.3 ? requests[int(0, i - 1)].prompt : [];
    const tokens = [...base.slice(0, int(0, base.length)), ...own].slice(0, shape.maxPromptTokens);
    requests.push({
      requestId: `q${i}`,
      prompt: tokens,
      priority: int(0, shape.maxPriority),
      arrivalStep: int(0, shape.arrivalSteps - 1),
      sampling: {
        maxTokens: int(1, shape.maxOutputTokens),
        minTokens: random() < 0.2 ? int(0, 4) : 0,
        seed: random() < 0.5 ? int(0, 2 ** 32 - 1) : null,
        n: random() < shape.forkFraction ? int(2, 3) : 1,
      },
    });
  }
  requests.sort((a, b) => a.arrivalStep - b.arrivalStep);
  return requests.map((request, i) => ({ ...request, arrivalTimeMs: i }));
}
