import { JsonObjectScanner } from './json-object-scanner.js';
import {
  defaultToolCallId,
  parseToolCallJson,
  type ToolCallDelta,
  type ToolCallParser,
  type ToolCallParserOptions,
  type ToolCallParseStep,
} from './tool-call.js';

const PYTHON_TAG = '<|python_tag|>';

/**
 * Parser of Llama 3.1+'s JSON tool calls: an output that starts (after whitespace) with `{` or
 * `<|python_tag|>` is one or more `{"name": ..., "parameters": {...}}` objects, separated by `;` or
 * whitespace (vLLM's `llama3_json`). Any other output is content. When an object is no valid call, the
 * text from there on is released as content.
 */
export function createLlama3JsonToolCallParser(options: ToolCallParserOptions = {}): ToolCallParser {
  return new Llama3JsonToolCallParser(options.generateId ?? defaultToolCallId);
}

type Mode = 'undecided' | 'text' | 'calls';

class Llama3JsonToolCallParser implements ToolCallParser {
  private mode: Mode = 'undecided';
  /** Text since the start (undecided) or since the end of the last call (calls mode). */
  private buffer = '';
  /** Calls mode: start of the object being scanned in `buffer`, or -1 between objects. */
  private objectStart = -1;
  /** Calls mode: how far `buffer` has been scanned. */
  private scanned = 0;
  private readonly scanner = new JsonObjectScanner();
  private numCalls = 0;
  /** Leading whitespace and `<|python_tag|>` dropped on entering calls mode; content again if no call follows. */
  private skipped = '';

  constructor(private readonly generateId: () => string) {}

  push(text: string): ToolCallParseStep {
    if (this.mode === 'text') return { text, toolCalls: [] };
    this.buffer += text;
    if (this.mode === 'undecided') {
      const mode = this.decide();
      if (mode === 'undecided') return { text: '', toolCalls: [] };
      if (mode === 'text') return this.releaseAll();
    }
    return this.scanCalls();
  }

  finish(): ToolCallParseStep {
    if (this.mode !== 'calls') return this.releaseAll();
    // Scanning is up to date: what is left is an unfinished object or trailing text, i.e. content.
    const rest = this.releaseAll();
    return rest.text.trim().length === 0 ? { text: '', toolCalls: [] } : rest;
  }

  /** Picks the mode once the first non-space text is known. */
  private decide(): Mode {
    const start = this.buffer.trimStart();
    if (start.length === 0 || (start.length < PYTHON_TAG.length && PYTHON_TAG.startsWith(start))) {
      return 'undecided';
    }
    if (start.startsWith('{') || start.startsWith(PYTHON_TAG)) {
      this.mode = 'calls';
      const callsText = start.startsWith(PYTHON_TAG) ? start.slice(PYTHON_TAG.length) : start;
      this.skipped = this.buffer.slice(0, this.buffer.length - callsText.length);
      this.buffer = callsText;
    } else {
      this.mode = 'text';
    }
    return this.mode;
  }

  private scanCalls(): ToolCallParseStep {
    const calls: ToolCallDelta[] = [];
    for (;;) {
      if (this.objectStart === -1) {
        const next = this.buffer.search(/[^\s;]/);
        if (next === -1) break;
        if (this.buffer[next] !== '{') return this.fallBack(calls);
        this.objectStart = next;
        this.scanned = next;
        this.scanner.reset();
      }
      const end = this.scanner.scan(this.buffer, this.scanned);
      if (end === -1) {
        this.scanned = this.buffer.length;
        break;
      }
      const call = parseToolCallJson(this.buffer.slice(this.objectStart, end));
      if (call === null) return this.fallBack(calls);
      calls.push({ index: this.numCalls++, id: this.generateId(), type: 'function', function: call });
      this.buffer = this.buffer.slice(end);
      this.objectStart = -1;
    }
    return { text: '', toolCalls: calls };
  }

  /** The output is not (or no longer) tool calls: everything from here on is content. */
  private fallBack(calls: ToolCallDelta[]): ToolCallParseStep {
    return { text: this.releaseAll().text, toolCalls: calls };
  }

  private releaseAll(): ToolCallParseStep {
    const text = this.numCalls === 0 ? this.skipped + this.buffer : this.buffer;
    this.buffer = '';
    this.skipped = '';
    this.mode = 'text';
    return { text, toolCalls: [] };
  }
}
