import { JsonObjectScanner } from './json-object-scanner.js';
import { StreamedCallObject } from './streamed-call-object.js';
import { parseToolCallJson } from './tool-call.js';
import type { ToolCallEmitter } from './tool-call-emitter.js';

/** Where a {@link ToolCallObjectSequence} stands. */
export type SequenceStatus = 'open' | 'closed' | 'invalid';

/**
 * Reads `{"name", "arguments" | "parameters"}` call objects one after another out of text that grows:
 * objects separated by any of the separator characters, optionally ended by a closing character (Mistral's
 * `[...]` array; Llama 3's objects run to the end of the output). Each valid object becomes a call of the
 * emitter as soon as it closes (with `streamArguments`, while it streams).
 */
export class ToolCallObjectSequence {
  /** Just past the last complete call (or the start): text before it has been used. */
  consumed: number;
  private objectStart = -1;
  private scanned = 0;
  private readonly scanner = new JsonObjectScanner();
  private streamed: StreamedCallObject | null = null;
  /** Finds the next character that is not a separator. */
  private readonly nextItem: RegExp;

  /**
   * @param separators - characters allowed between objects, as a regex character class body
   * @param closer - the character that ends the sequence, or null
   * @param from - where the sequence starts in the texts that will be given
   */
  constructor(
    private readonly emitter: ToolCallEmitter,
    separators: string,
    private readonly closer: string | null,
    from = 0,
  ) {
    this.nextItem = new RegExp(`[^${separators}]`, 'g');
    this.consumed = from;
  }

  /**
   * Read `text` (the same text as before, grown). `closed`: the closer was read and `consumed` is just
   * past it. `invalid`: something other than a call object follows `consumed`.
   */
  scan(text: string): SequenceStatus {
    for (;;) {
      if (this.objectStart === -1) {
        this.nextItem.lastIndex = this.consumed;
        const next = this.nextItem.exec(text)?.index ?? -1;
        if (next === -1) return 'open';
        if (text[next] === this.closer) {
          this.consumed = next + 1;
          return 'closed';
        }
        if (text[next] !== '{') return 'invalid';
        this.objectStart = next;
        this.scanned = next;
        this.scanner.reset();
        if (this.emitter.streamsArguments) this.streamed = new StreamedCallObject(this.emitter, next);
      }
      const end = this.scanner.scan(text, this.scanned);
      if (end === -1) {
        this.scanned = text.length;
        this.streamed?.update(text, text.length);
        return 'open';
      }
      if (!this.complete(text, end)) return 'invalid';
    }
  }

  /** The output ended: a call that began streaming is completed with what it has. */
  finish(text: string): void {
    if (this.streamed?.close(text, text.length)) this.consumed = text.length;
    this.streamed = null;
  }

  /** The object `[objectStart, end)` closed: a call, or false when it is none. */
  private complete(text: string, end: number): boolean {
    const streamed = this.streamed;
    this.streamed = null;
    if (!streamed?.close(text, end)) {
      const call = parseToolCallJson(text.slice(this.objectStart, end));
      if (call === null) return false;
      this.emitter.add(call.name, call.arguments);
    }
    this.consumed = end;
    this.objectStart = -1;
    return true;
  }
}
