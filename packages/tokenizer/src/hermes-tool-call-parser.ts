import { StreamedCallObject } from './streamed-call-object.js';
import {
  defaultToolCallId,
  parseToolCallJson,
  partialTagLength,
  type ToolCallParser,
  type ToolCallParserOptions,
  type ToolCallParseStep,
} from './tool-call.js';
import { ToolCallEmitter } from './tool-call-emitter.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';

/**
 * Parser of the Hermes / Qwen format: `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`, any
 * number of times. Text before the first call is content; after a call, whitespace-only text between or
 * after calls is dropped (vLLM's `hermes` parser keeps none of it). A call whose JSON does not parse is
 * released as text, tags included.
 */
export function createHermesToolCallParser(options: ToolCallParserOptions = {}): ToolCallParser {
  return new HermesToolCallParser(options.generateId ?? defaultToolCallId, options.streamArguments ?? false);
}

class HermesToolCallParser implements ToolCallParser {
  /** Outside a call: a held tail that may start `<tool_call>`. Inside: the call's text so far. */
  private buffer = '';
  private inCall = false;
  private readonly emitter: ToolCallEmitter;
  /** Inside a call, with `streamArguments`: its object as it streams. */
  private streamed: StreamedCallObject | null = null;

  constructor(generateId: () => string, streamArguments: boolean) {
    this.emitter = new ToolCallEmitter(generateId, streamArguments);
  }

  push(text: string): ToolCallParseStep {
    this.buffer += text;
    let out = '';
    for (;;) {
      if (this.inCall) {
        const end = this.buffer.indexOf(CLOSE);
        if (end === -1) {
          this.streamed?.update(this.buffer, this.buffer.length - partialTagLength(this.buffer, CLOSE));
          break;
        }
        out += this.closeCall(this.buffer.slice(0, end));
        this.buffer = this.buffer.slice(end + CLOSE.length);
        continue;
      }
      const start = this.buffer.indexOf(OPEN);
      if (start !== -1) {
        out += this.emitter.content(this.buffer.slice(0, start));
        this.emitter.dropPendingSpace();
        this.buffer = this.buffer.slice(start + OPEN.length);
        this.inCall = true;
        if (this.emitter.streamsArguments) this.streamed = new StreamedCallObject(this.emitter, 0);
        continue;
      }
      const keep = partialTagLength(this.buffer, OPEN);
      out += this.emitter.content(this.buffer.slice(0, this.buffer.length - keep));
      this.buffer = this.buffer.slice(this.buffer.length - keep);
      break;
    }
    return this.emitter.step(out);
  }

  finish(): ToolCallParseStep {
    const out = this.inCall ? this.closeCall(this.buffer) : this.emitter.content(this.buffer);
    this.buffer = '';
    this.emitter.dropPendingSpace();
    return this.emitter.step(out);
  }

  /** Ends the current call; returns text to release when it is no valid call. */
  private closeCall(body: string): string {
    this.inCall = false;
    const streamed = this.streamed;
    this.streamed = null;
    if (streamed?.close(body, body.length)) return '';
    const call = parseToolCallJson(body.trim());
    if (call === null) return this.emitter.content(OPEN + body + CLOSE);
    this.emitter.add(call.name, call.arguments);
    return '';
  }
}
