import { FerrumError } from '@ferrum/types';

/** Options of {@link createStopMatcher}. */
export interface StopMatcherOptions {
  /** Append the matched stop string to the released text (vLLM's `include_stop_str_in_output`). Default false. */
  readonly includeStop?: boolean;
}

/** What one {@link StopMatcher.push} releases. */
export interface StopMatchResult {
  /** Text safe to show now: it can no longer become part of a stop string. */
  readonly text: string;
  /** True once a stop string matched; the sequence should finish and later text is dropped. */
  readonly stopped: boolean;
  /** The stop string that matched (set with `stopped`). */
  readonly matched?: string;
}

/**
 * Per-sequence stop-string filter over streamed text. It holds back the longest tail that is still a
 * prefix of some stop string, so no part of a stop string that later completes is ever released.
 */
export interface StopMatcher {
  /** True once a stop string matched. */
  readonly stopped: boolean;
  /** Feed newly decoded text; returns what may be released. After a match, returns `{ text: '', stopped: true }`. */
  push(text: string): StopMatchResult;
  /** The held-back tail, when the sequence ends for another reason (EOS, length). Empty after a match. */
  flush(): string;
}

/**
 * Create a {@link StopMatcher}. When several stop strings occur in the text seen so far, the one that
 * starts first wins (the longest on a tie), and the released text ends right before it.
 *
 * @throws FerrumError `invalid_argument` when a stop string is empty.
 */
export function createStopMatcher(stops: readonly string[], options: StopMatcherOptions = {}): StopMatcher {
  for (const stop of stops) {
    if (typeof stop !== 'string' || stop.length === 0) {
      throw new FerrumError('invalid_argument', 'stop strings must be non-empty strings', {
        details: { stop },
      });
    }
  }
  return new StringStopMatcher([...stops], options.includeStop ?? false);
}

class StringStopMatcher implements StopMatcher {
  /** Tail of the text seen so far that is a proper prefix of a stop string (never a whole one). */
  private held = '';
  private matched: string | null = null;
  private readonly maxHeld: number;

  constructor(
    private readonly stops: readonly string[],
    private readonly includeStop: boolean,
  ) {
    this.maxHeld = stops.reduce((max, stop) => Math.max(max, stop.length - 1), 0);
  }

  get stopped(): boolean {
    return this.matched !== null;
  }

  push(text: string): StopMatchResult {
    if (this.matched !== null) return { text: '', stopped: true, matched: this.matched };
    if (text.length === 0) return { text: '', stopped: false };
    // A match can only start inside `held` or the new text: anything released earlier was no stop prefix.
    const buffer = this.held + text;
    let matchIndex = -1;
    let matched = '';
    for (const stop of this.stops) {
      const index = buffer.indexOf(stop);
      if (index === -1) continue;
      if (matchIndex === -1 || index < matchIndex || (index === matchIndex && stop.length > matched.length)) {
        matchIndex = index;
        matched = stop;
      }
    }
    if (matchIndex !== -1) {
      this.held = '';
      this.matched = matched;
      const released = buffer.slice(0, matchIndex) + (this.includeStop ? matched : '');
      return { text: released, stopped: true, matched };
    }
    const keep = this.partialStopLength(buffer);
    this.held = buffer.slice(buffer.length - keep);
    return { text: buffer.slice(0, buffer.length - keep), stopped: false };
  }

  flush(): string {
    const tail = this.held;
    this.held = '';
    return tail;
  }

  /** Length of the longest suffix of `buffer` that some stop string starts with. */
  private partialStopLength(buffer: string): number {
    for (let length = Math.min(this.maxHeld, buffer.length); length > 0; length--) {
      const start = buffer.length - length;
      for (const stop of this.stops) {
        if (stop.length > length && regionMatches(buffer, start, stop, length)) return length;
      }
    }
    return 0;
  }
}

/** `a.slice(aStart, aStart + length) === b.slice(0, length)` without allocating. */
function regionMatches(a: string, aStart: number, b: string, length: number): boolean {
  for (let i = 0; i < length; i++) if (a.charCodeAt(aStart + i) !== b.charCodeAt(i)) return false;
  return true;
}
