import { randomBytes } from 'node:crypto';

/** A tool call as the chat API returns it (`index` is its position among the choice's calls). */
export interface ToolCallBody {
  index: number;
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** How a model family writes tool calls in its output (Hermes `<tool_call>` tags, Llama 3 JSON, ...). */
export interface ToolCallSyntax {
  /**
   * Where a tool call starts in `text`: the index of its start marker, or of a prefix of the marker that
   * ends `text` (it may still become one); -1 when `text` holds neither.
   */
  startIndex(text: string): number;
  /** Split a finished output into plain content and the calls it makes (none when it makes no call). */
  parse(text: string): { content: string; calls: readonly { name: string; arguments: string }[] };
}

/** What a finished choice adds: the content not sent yet and its tool calls. */
export interface ChoiceEnd {
  readonly content: string;
  readonly toolCalls: ToolCallBody[];
}

/**
 * Text state of one chat choice. Without tools, text passes through. With tools, text from a (possible)
 * tool-call marker on is held back, and the calls are parsed once the choice finishes.
 */
export class ChatChoiceOutput {
  private raw = '';
  /** raw[0 .. sent) went out as content. */
  private sent = 0;

  constructor(private readonly syntax: ToolCallSyntax | null) {}

  /** Feed a text delta; returns the content that may be sent now. */
  push(text: string): string {
    if (!this.syntax) return text;
    this.raw += text;
    const start = this.syntax.startIndex(this.raw.slice(this.sent));
    const end = start < 0 ? this.raw.length : this.sent + start;
    const content = this.raw.slice(this.sent, end);
    this.sent = end;
    return content;
  }

  /** The choice finished: the held-back content, or the tool calls it made. */
  finish(): ChoiceEnd {
    if (!this.syntax) return { content: '', toolCalls: [] };
    const { content, calls } = this.syntax.parse(this.raw);
    const sentText = this.raw.slice(0, this.sent);
    if (calls.length === 0) {
      this.sent = this.raw.length;
      return { content: this.raw.slice(sentText.length), toolCalls: [] };
    }
    return {
      content: content.startsWith(sentText) ? content.slice(sentText.length) : '',
      toolCalls: calls.map((call, index) => ({
        index,
        id: `call_${randomBytes(12).toString('hex')}`,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      })),
    };
  }
}
