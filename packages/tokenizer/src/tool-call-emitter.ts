import type { ToolCallChunk, ToolCallDelta, ToolCallParseStep } from './tool-call.js';

/**
 * What a tool-call parser has found in one sequence, collected for the step being built: calls read
 * whole, calls streamed piece by piece (with `streamArguments`), and the rule for content between calls.
 * Call indexes count up from 0 across the sequence.
 */
export class ToolCallEmitter {
  /** Calls begun or made so far. */
  numCalls = 0;
  private calls: ToolCallDelta[] = [];
  private chunks: ToolCallChunk[] = [];
  /** The call being streamed, or null. */
  private current: { index: number; id: string; name: string; arguments: string } | null = null;
  /** Whitespace after a call, dropped unless content follows. */
  private pendingSpace = '';

  constructor(
    private readonly generateId: () => string,
    /** Report calls in progress as chunks (the parser's `streamArguments`). */
    readonly streamsArguments: boolean,
  ) {}

  /** Whether a streamed call is open (begun and not ended). */
  get inCall(): boolean {
    return this.current !== null;
  }

  /** A call read whole; with `streamsArguments` it is also its own single chunk. */
  add(name: string, args: string, id: string = this.generateId()): void {
    const call: ToolCallDelta = {
      index: this.numCalls++,
      id,
      type: 'function',
      function: { name, arguments: args },
    };
    this.calls.push(call);
    if (this.streamsArguments) this.chunks.push(call);
  }

  /** Start streaming a call whose name is known; its arguments follow through {@link append}. */
  begin(name: string, id: string = this.generateId()): void {
    this.current = { index: this.numCalls++, id, name, arguments: '' };
    this.chunks.push({ index: this.current.index, id, type: 'function', function: { name, arguments: '' } });
  }

  /** The next piece of the streamed call's arguments (merged into this step's chunk for the call). */
  append(piece: string): void {
    const current = this.current!;
    if (piece.length === 0) return;
    current.arguments += piece;
    const last = this.chunks.length - 1;
    const chunk = this.chunks[last];
    if (chunk?.index === current.index) {
      this.chunks[last] = {
        ...chunk,
        function: { ...chunk.function, arguments: chunk.function.arguments + piece },
      };
    } else {
      this.chunks.push({ index: current.index, function: { arguments: piece } });
    }
  }

  /** The streamed call is complete: it becomes a whole call (`{}` when no arguments were streamed). */
  end(): void {
    const current = this.current!;
    if (current.arguments.length === 0) this.append('{}');
    this.calls.push({
      index: current.index,
      id: current.id,
      type: 'function',
      function: { name: current.name, arguments: current.arguments },
    });
    this.current = null;
  }

  /**
   * Content text as released: unchanged before the first call; after a call, whitespace-only text is held
   * (and dropped if only calls or the end follow) and released in front of the next real content.
   */
  content(text: string): string {
    if (this.numCalls === 0) return text;
    if (text.trim().length === 0) {
      this.pendingSpace += text;
      return '';
    }
    const out = this.pendingSpace + text;
    this.pendingSpace = '';
    return out;
  }

  /** A call follows: whitespace held since the last one is dropped. */
  dropPendingSpace(): void {
    this.pendingSpace = '';
  }

  /** The step to return with `text` as its content; starts collecting the next one. */
  step(text: string): ToolCallParseStep {
    const toolCalls = this.calls.length === 0 ? NO_CALLS : this.calls;
    this.calls = [];
    if (!this.streamsArguments) return { text, toolCalls };
    const toolCallChunks = this.chunks.length === 0 ? NO_CHUNKS : this.chunks;
    this.chunks = [];
    return { text, toolCalls, toolCallChunks };
  }
}

const NO_CALLS: readonly ToolCallDelta[] = Object.freeze([]);
const NO_CHUNKS: readonly ToolCallChunk[] = Object.freeze([]);
