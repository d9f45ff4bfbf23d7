/**
 * Finds where a JSON object ends in text that arrives piece by piece: tracks brace depth outside
 * strings, and string escapes. Feed it from the object's `{` onwards.
 */
export class JsonObjectScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;

  /**
   * Scan `text[from..]`, continuing the state of earlier calls. Returns the index just past the `}` that
   * closes the object, or -1 when it has not closed yet. Reset before the next object.
   */
  scan(text: string, from: number): number {
    for (let i = from; i < text.length; i++) {
      const char = text.charCodeAt(i);
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (char === BACKSLASH) this.escaped = true;
        else if (char === QUOTE) this.inString = false;
      } else if (char === QUOTE) {
        this.inString = true;
      } else if (char === OPEN_BRACE) {
        this.depth++;
      } else if (char === CLOSE_BRACE && --this.depth === 0) {
        return i + 1;
      }
    }
    return -1;
  }

  reset(): void {
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
  }
}

const BACKSLASH = 0x5c;
const QUOTE = 0x22;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
