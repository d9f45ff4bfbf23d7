/**
 * Reads a tool call object, `{"name": "...", "arguments": {...}}` (or `"parameters"`), as its text arrives
 * and says where its parts are, so that the arguments can be streamed before the object closes. It is a
 * strict JSON reader of the top level (keys, colons, commas) that skips over the values; any other text
 * makes it stop with {@link ToolCallObjectReader.invalid} set. Positions are indexes into the text given to
 * {@link ToolCallObjectReader.read}, which must only grow between calls.
 */
export class ToolCallObjectReader {
  /** The `name` value once read (the first `name` key; null while unknown or when not a non-empty string). */
  name: string | null = null;
  /** Where the arguments value starts (the first `arguments` or `parameters` key), or -1. */
  argumentsStart = -1;
  /** Just past the arguments value, or -1 while it is open. */
  argumentsEnd = -1;
  /** Just past the object's `}`, or -1 while it is open. */
  end = -1;
  /** The text is not a call object. */
  invalid = false;
  /** How far the text has been read. */
  position: number;

  private state: State = 'start';
  private key = '';
  private keyStart = 0;
  private valueStart = 0;
  /** Inside a value: nesting of `{`/`[`, 0 for a scalar. */
  private depth = 0;
  private inString = false;
  private escaped = false;

  /** @param from - where the object's text starts (whitespace before the `{` is skipped) */
  constructor(from = 0) {
    this.position = from;
  }

  /** Read `text` up to `to` (exclusive), continuing from where the last call stopped. */
  read(text: string, to = text.length): void {
    while (this.position < to && this.state !== 'done' && this.state !== 'invalid') {
      if (this.step(text, this.position)) this.position++;
    }
  }

  /** Handle the character at `i`; false when it must be handled again in the new state. */
  private step(text: string, i: number): boolean {
    const char = text.charCodeAt(i);
    switch (this.state) {
      case 'start':
        if (isSpace(char)) return true;
        return this.expect(char === OPEN_BRACE, 'key');
      case 'key':
        if (isSpace(char)) return true;
        if (char === CLOSE_BRACE) return this.close(i);
        this.keyStart = i + 1;
        return this.expect(char === QUOTE, 'in-key');
      case 'in-key':
        if (this.skipString(char)) return true;
        this.key = decodeKey(text.slice(this.keyStart, i));
        this.state = 'colon';
        return true;
      case 'colon':
        if (isSpace(char)) return true;
        return this.expect(char === COLON, 'value');
      case 'value':
        if (isSpace(char)) return true;
        return this.startValue(char, i);
      case 'in-value':
        return this.readValue(text, char, i);
      case 'after-value':
        if (isSpace(char)) return true;
        if (char === CLOSE_BRACE) return this.close(i);
        return this.expect(char === COMMA, 'key');
      default:
        return true;
    }
  }

  private startValue(char: number, i: number): boolean {
    if (char === COMMA || char === CLOSE_BRACE || char === CLOSE_BRACKET || char === COLON) {
      return this.expect(false, 'invalid');
    }
    this.valueStart = i;
    if ((this.key === 'arguments' || this.key === 'parameters') && this.argumentsStart === -1) {
      this.argumentsStart = i;
    }
    this.state = 'in-value';
    this.inString = char === QUOTE;
    this.depth = char === OPEN_BRACE || char === OPEN_BRACKET ? 1 : 0;
    return true;
  }

  private readValue(text: string, char: number, i: number): boolean {
    if (this.inString) {
      if (this.skipString(char)) return true;
      this.inString = false;
      if (this.depth === 0) this.endValue(text, i + 1);
      return true;
    }
    if (this.depth > 0) {
      if (char === QUOTE) this.inString = true;
      else if (char === OPEN_BRACE || char === OPEN_BRACKET) this.depth++;
      else if ((char === CLOSE_BRACE || char === CLOSE_BRACKET) && --this.depth === 0)
        this.endValue(text, i + 1);
      return true;
    }
    // A scalar (number, true, false, null) ends before the next space, comma or brace.
    if (!isSpace(char) && char !== COMMA && char !== CLOSE_BRACE) return true;
    this.endValue(text, i);
    return false;
  }

  private endValue(text: string, end: number): void {
    this.state = 'after-value';
    if (this.valueStart === this.argumentsStart) this.argumentsEnd = end;
    if (this.key === 'name' && this.name === null) {
      const name = parseJson(text.slice(this.valueStart, end));
      if (typeof name === 'string' && name.length > 0) this.name = name;
    }
  }

  /** Inside a string: true while `char` does not close it. */
  private skipString(char: number): boolean {
    if (this.escaped) this.escaped = false;
    else if (char === BACKSLASH) this.escaped = true;
    else return char !== QUOTE;
    return true;
  }

  private expect(ok: boolean, next: State): boolean {
    this.state = ok ? next : 'invalid';
    this.invalid = !ok;
    return true;
  }

  private close(i: number): boolean {
    this.end = i + 1;
    this.state = 'done';
    return true;
  }
}

type State = 'start' | 'key' | 'in-key' | 'colon' | 'value' | 'in-value' | 'after-value' | 'done' | 'invalid';

function decodeKey(raw: string): string {
  const key = parseJson(`"${raw}"`);
  return typeof key === 'string' ? key : raw;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isSpace(char: number): boolean {
  return char === 0x20 || char === 0x0a || char === 0x0d || char === 0x09;
}

const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
