import { randomInt } from 'node:crypto';
import { JsonObjectScanner } from './json-object-scanner.js';
import {
  partialTagLength,
  type ToolCallParser,
  type ToolCallParserOptions,
  type ToolCallParseStep,
} from './tool-call.js';
import { ToolCallEmitter } from './tool-call-emitter.js';
import { ToolCallObjectSequence } from './tool-call-object-sequence.js';

const MARKER = '[TOOL_CALLS]';
/** A v11 head: the name, the id the model chose after `[CALL_ID]`, then `[ARGS]` (absent when skipped). */
const HEAD = /^\s*([\w.-]+)(?:\[CALL_ID\]([A-Za-z0-9]+))?(?:\[ARGS\])?\s*$/;
/** Characters a head may contain; any other one before the `{` means the text is no call. */
const HEAD_CHAR = /[\w.\-[\]\s]/;
/** Longest head read before giving up (names are at most 64 characters in OpenAI's API). */
const MAX_HEAD_LENGTH = 256;
const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * Parser of Mistral's tool calls (vLLM's `mistral`), which follow the `[TOOL_CALLS]` token in both of the
 * shapes Mistral's tokenizers use: v3 (Mistral-7B-Instruct-v0.3, Mixtral 8x22B) writes one JSON array of
 * `{"name", "arguments"}` objects; v11+ writes `name[ARGS]{...}` (v13: `name[CALL_ID]id[ARGS]{...}`) after
 * each `[TOOL_CALLS]`. Text before the first marker is content, as is text after the calls (whitespace
 * between or after calls is dropped, as in the Hermes parser). Malformed calls come back as text, marker
 * included. The marker is a special token: the sequence must be decoded with special tokens kept.
 */
export function createMistralToolCallParser(options: ToolCallParserOptions = {}): ToolCallParser {
  return new MistralToolCallParser(options.generateId ?? mistralToolCallId, options.streamArguments ?? false);
}

/** Mistral's tool call ids: 9 letters and digits (its chat templates refuse any other). */
function mistralToolCallId(): string {
  let id = '';
  for (let i = 0; i < 9; i++) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
  return id;
}

type Mode = 'text' | 'head' | 'array' | 'named';

class MistralToolCallParser implements ToolCallParser {
  private mode: Mode = 'text';
  /** Text mode: a held tail that may start the marker. Otherwise: the text after the last marker. */
  private buffer = '';
  /** Content released by the push being handled. */
  private out = '';
  private readonly emitter: ToolCallEmitter;
  /** The emitter's call count when the current marker was read: whether this group made calls. */
  private callsBeforeGroup = 0;
  private sequence: ToolCallObjectSequence | null = null;
  /** Named form: how far the head has been checked, where the arguments start (-1: not yet) and the name. */
  private headScanned = 0;
  private argumentsStart = -1;
  private name = '';
  private callId: string | undefined;
  private scanned = 0;
  private readonly scanner = new JsonObjectScanner();

  constructor(generateId: () => string, streamArguments: boolean) {
    this.emitter = new ToolCallEmitter(generateId, streamArguments);
  }

  push(text: string): ToolCallParseStep {
    this.buffer += text;
    let more = true;
    while (more) more = this.advance();
    return this.release();
  }

  finish(): ToolCallParseStep {
    if (this.mode === 'named' && this.emitter.inCall) {
      this.emitter.end();
      this.buffer = '';
    } else if (this.mode !== 'text') {
      // An unfinished group: what no call used is content, as for a malformed call.
      if (this.mode === 'array') this.sequence!.finish(this.buffer);
      this.giveBack(this.mode === 'array' ? this.sequence!.consumed : this.buffer.length);
    }
    this.out += this.emitter.content(this.buffer);
    this.buffer = '';
    this.emitter.dropPendingSpace();
    return this.release();
  }

  /** Handle what the buffer allows in the current mode; true when the mode changed and there may be more. */
  private advance(): boolean {
    switch (this.mode) {
      case 'text':
        return this.readText();
      case 'head':
        return this.readHead();
      case 'array':
        return this.readArray();
      case 'named':
        return this.readNamed();
    }
  }

  private readText(): boolean {
    const at = this.buffer.indexOf(MARKER);
    if (at === -1) {
      const keep = this.buffer.length - partialTagLength(this.buffer, MARKER);
      this.out += this.emitter.content(this.buffer.slice(0, keep));
      this.buffer = this.buffer.slice(keep);
      return false;
    }
    this.out += this.emitter.content(this.buffer.slice(0, at));
    this.emitter.dropPendingSpace();
    this.buffer = this.buffer.slice(at + MARKER.length);
    this.callsBeforeGroup = this.emitter.numCalls;
    this.mode = 'head';
    return true;
  }

  /** The first character after the marker picks the form: `[` an array (v3), else a name (v11+). */
  private readHead(): boolean {
    const at = this.buffer.search(/\S/);
    if (at === -1) return false;
    if (this.buffer[at] === '[') {
      this.sequence = new ToolCallObjectSequence(this.emitter, '\\s,', ']', at + 1);
      this.mode = 'array';
    } else {
      this.headScanned = 0;
      this.argumentsStart = -1;
      this.mode = 'named';
    }
    return true;
  }

  private readArray(): boolean {
    const sequence = this.sequence!;
    const status = sequence.scan(this.buffer);
    if (status === 'open') return false;
    if (status === 'invalid') return this.giveBack(sequence.consumed);
    this.buffer = this.buffer.slice(sequence.consumed);
    this.mode = 'text';
    return true;
  }

  private readNamed(): boolean {
    if (this.argumentsStart === -1) {
      for (; this.headScanned < this.buffer.length; this.headScanned++) {
        const char = this.buffer[this.headScanned];
        if (char === '{') break;
        if (!HEAD_CHAR.test(char) || this.headScanned >= MAX_HEAD_LENGTH)
          return this.giveBack(this.headScanned);
      }
      if (this.headScanned === this.buffer.length) return false;
      const head = HEAD.exec(this.buffer.slice(0, this.headScanned));
      if (head === null) return this.giveBack(this.headScanned);
      [, this.name, this.callId] = head;
      this.argumentsStart = this.headScanned;
      this.scanned = this.headScanned;
      this.scanner.reset();
      if (this.emitter.streamsArguments) this.emitter.begin(this.name, this.callId);
    }
    const end = this.scanner.scan(this.buffer, this.scanned);
    const stop = end === -1 ? this.buffer.length : end;
    if (this.emitter.inCall) this.emitter.append(this.buffer.slice(this.scanned, stop));
    this.scanned = stop;
    if (end === -1) return false;
    if (this.emitter.inCall) {
      this.emitter.end();
    } else {
      const args = normalizedArguments(this.buffer.slice(this.argumentsStart, end));
      if (args === null) return this.giveBack(end);
      this.emitter.add(this.name, args, this.callId);
    }
    this.buffer = this.buffer.slice(end);
    this.mode = 'text';
    return true;
  }

  /**
   * The text after the marker is no call from `at` on: what this group did not use up to there is content
   * (with the marker when the group made no call), and the rest is read as text again.
   */
  private giveBack(at: number): boolean {
    if (this.callsBeforeGroup === this.emitter.numCalls) {
      this.out += this.emitter.content(MARKER + this.buffer.slice(0, at));
    }
    this.buffer = this.buffer.slice(at);
    this.mode = 'text';
    return true;
  }

  private release(): ToolCallParseStep {
    const out = this.out;
    this.out = '';
    return this.emitter.step(out);
  }
}

/** The arguments object re-serialized, or null when the text is not a JSON object. */
function normalizedArguments(text: string): string | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? JSON.stringify(value)
      : null;
  } catch {
    return null;
  }
}
