import {
  defaultToolCallId,
  parseToolCallJson,
  type ToolCallDelta,
  type ToolCallParser,
  type ToolCallParserOptions,
  type ToolCallParseStep,
} from './tool-call.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';

/**
 * Parser of the Hermes / Qwen format: `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`, any
 * number of times. Text before the first call is content; after a call, whitespace-only text between or
 * after calls is dropped (vLLM's `hermes` parser keeps none of it). A call whose JSON does not parse is
 * released as text, tags included.
 */
export function createHermesToolCallParser(options: ToolCallParserOptions = {}): ToolCallParser {
  return new HermesToolCallParser(options.generateId ?? defaultToolCallId);
}

class HermesToolCallParser implements ToolCallParser {
  /** Outside a call: a held tail that may start `<tool_call>`. Inside: the call's text so far. */
  private buffer = '';
  private inCall = false;
  private numCalls = 0;
  /** Whitespace after a call, dropped unless content follows. */
  private pendingSpace = '';

  constructor(private readonly generateId: () => string) {}

  push(text: string): ToolCallParseStep {
    this.buffer += text;
    let out = '';
    const calls: ToolCallDelta[] = [];
    for (;;) {
      if (this.inCall) {
        const end = this.buffer.indexOf(CLOSE);
        if (end === -1) break;
        out += this.closeCall(this.buffer.slice(0, end), calls);
        this.buffer = this.buffer.slice(end + CLOSE.length);
        continue;
      }
      const start = this.buffer.indexOf(OPEN);
      if (start !== -1) {
        out += this.content(this.buffer.slice(0, start));
        this.pendingSpace = '';
        this.buffer = this.buffer.slice(start + OPEN.length);
        this.inCall = true;
        continue;
      }
      const keep = partialTagLength(this.buffer);
      out += this.content(this.buffer.slice(0, this.buffer.length - keep));
      this.buffer = this.buffer.slice(this.buffer.length - keep);
      break;
    }
    return { text: out, toolCalls: calls };
  }

  finish(): ToolCallParseStep {
    const calls: ToolCallDelta[] = [];
    const out = this.inCall ? this.closeCall(this.buffer, calls) : this.content(this.buffer);
    this.buffer = '';
    this.inCall = false;
    this.pendingSpace = '';
    return { text: out, toolCalls: calls };
  }

  /** Ends the current call; returns text to release when it is no valid call. */
  private closeCall(body: string, calls: ToolCallDelta[]): string {
    this.inCall = false;
    const call = parseToolCallJson(body.trim());
    if (call === null) return this.content(OPEN + body + CLOSE);
    calls.push({ index: this.numCalls++, id: this.generateId(), type: 'function', function: call });
    return '';
  }

  private content(text: string): string {
    if (this.numCalls === 0) return text;
    if (text.trim().length === 0) {
      this.pendingSpace += text;
      return '';
    }
    const out = this.pendingSpace + text;
    this.pendingSpace = '';
    return out;
  }
}

/** Length of the longest suffix of `text` that `<tool_call>` starts with. */
function partialTagLength(text: string): number {
  for (let length = Math.min(OPEN.length - 1, text.length); length > 0; length--) {
    if (OPEN.startsWith(text.slice(text.length - length))) return length;
  }
  return 0;
}
