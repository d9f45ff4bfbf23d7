import type { ToolCallEmitter } from './tool-call-emitter.js';
import { ToolCallObjectReader } from './tool-call-object-reader.js';

/**
 * Streams one `{"name": ..., "arguments": ...}` call object through an emitter (`streamArguments` mode):
 * the call begins once its name has been read, and an object or array of arguments goes out as raw text
 * as it arrives. Other argument values go out once complete: a string as its contents (arguments given
 * as a JSON string), `null` as `{}`, anything else as written.
 */
export class StreamedCallObject {
  private readonly reader: ToolCallObjectReader;
  private begun = false;
  /** How many characters of the arguments value have gone out. */
  private sent = 0;

  /** @param from - where the object's text starts in the texts that will be given */
  constructor(
    private readonly emitter: ToolCallEmitter,
    from: number,
  ) {
    this.reader = new ToolCallObjectReader(from);
  }

  /** The object's text is known up to `to` (exclusive); emits what is new. */
  update(text: string, to: number): void {
    this.reader.read(text, to);
    const { name, argumentsStart: start, argumentsEnd: end } = this.reader;
    if (!this.begun) {
      if (name === null) return;
      this.emitter.begin(name);
      this.begun = true;
    }
    if (start === -1) return;
    const first = text.charCodeAt(start);
    if (first === OPEN_BRACE || first === OPEN_BRACKET) {
      const stop = end === -1 ? this.reader.position : end;
      this.emitter.append(text.slice(start + this.sent, stop));
      this.sent = stop - start;
    } else if (end !== -1 && this.sent === 0) {
      this.emitter.append(scalarArguments(text.slice(start, end)));
      this.sent = end - start;
    }
  }

  /**
   * The object's text ended at `to`. Completes the call and returns true when it has begun; false when it
   * never became a call (no name), which the parser then handles as it would without streaming.
   */
  close(text: string, to: number): boolean {
    this.update(text, to);
    if (this.begun) this.emitter.end();
    return this.begun;
  }
}

/** Arguments written as a JSON string are that string; `null` means none. */
function scalarArguments(raw: string): string {
  if (raw === 'null') return '{}';
  if (raw.startsWith('"')) {
    try {
      return JSON.parse(raw) as string;
    } catch {
      return raw;
    }
  }
  return raw;
}

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
