import {
  defaultToolCallId,
  type ToolCallParser,
  type ToolCallParserOptions,
  type ToolCallParseStep,
} from './tool-call.js';
import { ToolCallEmitter } from './tool-call-emitter.js';
import { ToolCallObjectSequence } from './tool-call-object-sequence.js';

const PYTHON_TAG = '<|python_tag|>';

/**
 * Parser of Llama 3.1+'s JSON tool calls: an output that starts (after whitespace) with `{` or
 * `<|python_tag|>` is one or more `{"name": ..., "parameters": {...}}` objects, separated by `;` or
 * whitespace (vLLM's `llama3_json`). Any other output is content. When an object is no valid call, the
 * text from there on is released as content.
 */
export function createLlama3JsonToolCallParser(options: ToolCallParserOptions = {}): ToolCallParser {
  return new Llama3JsonToolCallParser(
    options.generateId ?? defaultToolCallId,
    options.streamArguments ?? false,
  );
}

type Mode = 'undecided' | 'text' | 'calls';

class Llama3JsonToolCallParser implements ToolCallParser {
  private mode: Mode = 'undecided';
  /** All text (undecided), or all text after the skipped prefix (calls mode). */
  private buffer = '';
  private readonly emitter: ToolCallEmitter;
  private readonly sequence: ToolCallObjectSequence;
  /** Leading whitespace and `<|python_tag|>` dropped on entering calls mode; content again if no call follows. */
  private skipped = '';

  constructor(generateId: () => string, streamArguments: boolean) {
    this.emitter = new ToolCallEmitter(generateId, streamArguments);
    this.sequence = new ToolCallObjectSequence(this.emitter, '\\s;', null);
  }

  push(text: string): ToolCallParseStep {
    if (this.mode === 'text') return this.emitter.step(text);
    this.buffer += text;
    if (this.mode === 'undecided') {
      const mode = this.decide();
      if (mode === 'undecided') return this.emitter.step('');
      if (mode === 'text') return this.releaseAll();
    }
    return this.sequence.scan(this.buffer) === 'invalid' ? this.releaseAll() : this.emitter.step('');
  }

  finish(): ToolCallParseStep {
    if (this.mode !== 'calls') return this.releaseAll();
    // Scanning is up to date: what is left is an unfinished object or trailing text, i.e. content.
    this.sequence.finish(this.buffer);
    const rest = this.releaseAll();
    return rest.text.trim().length === 0 ? { ...rest, text: '' } : rest;
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

  /** The output is not (or no longer) tool calls: everything not used by a call is content from here on. */
  private releaseAll(): ToolCallParseStep {
    const rest = this.buffer.slice(this.mode === 'calls' ? this.sequence.consumed : 0);
    const text = this.emitter.numCalls === 0 ? this.skipped + rest : rest;
    this.buffer = '';
    this.skipped = '';
    this.mode = 'text';
    return this.emitter.step(text);
  }
}
