import { randomUUID } from 'node:crypto';

/**
 * One complete tool call, in OpenAI's `choices[].delta.tool_calls[]` shape: `id`, `type`, the name and all
 * the arguments (a JSON string). Parsers report each call this way once its text is complete.
 */
export interface ToolCallDelta {
  /** Position of the call among this sequence's calls. */
  readonly index: number;
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

/**
 * A piece of a tool call in progress, in OpenAI's streaming shape (with `streamArguments`). A call's first
 * chunk carries `id`, `type`, the name and the arguments text known so far (maybe ""); later chunks carry
 * only `index` and the next piece of the arguments. A complete {@link ToolCallDelta} is also a valid chunk.
 */
export interface ToolCallChunk {
  /** Position of the call among this sequence's calls. */
  readonly index: number;
  readonly id?: string;
  readonly type?: 'function';
  readonly function: { readonly name?: string; readonly arguments: string };
}

/** What a {@link ToolCallParser} releases for one piece of generated text. */
export interface ToolCallParseStep {
  /** Ordinary text (the assistant's `content`); may be empty. */
  readonly text: string;
  /** Calls completed by this piece, whole. */
  readonly toolCalls: readonly ToolCallDelta[];
  /**
   * Only with `streamArguments`: the calls in progress, at most one chunk per call per step. For every call
   * in `toolCalls`, its chunks came in this step or earlier and their `arguments` joined equal its
   * `arguments` exactly (the model's own text of the arguments, not re-serialized).
   */
  readonly toolCallChunks?: readonly ToolCallChunk[];
}

/**
 * Splits one sequence's streamed output into content text and tool calls. Text that may still turn out
 * to be part of a call is held back until it is decided.
 */
export interface ToolCallParser {
  /** Feed the next piece of decoded text. */
  push(text: string): ToolCallParseStep;
  /** The sequence ended: release what was held (an unfinished call is parsed if it can be, else text). */
  finish(): ToolCallParseStep;
}

/** Options shared by the tool-call parsers. */
export interface ToolCallParserOptions {
  /** Makes the `id` of each call. Default: `call_` and 24 random hex digits (Mistral: 9 letters and digits). */
  readonly generateId?: () => string;
  /**
   * Also report each call while it streams, as {@link ToolCallParseStep.toolCallChunks}: its name once
   * known, then its arguments text as it arrives (vLLM's streaming tool calls). A call is committed once its
   * name has gone out: if the output stops inside it or its text turns out malformed, it still ends as a
   * call, with the arguments text streamed so far, instead of being given back as content. Default false:
   * calls are only reported whole, and malformed ones come back as content.
   */
  readonly streamArguments?: boolean;
}

/** The default tool call id. */
export function defaultToolCallId(): string {
  return `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`;
}

/**
 * Reads `{"name": ..., "arguments" | "parameters": {...}}` (Hermes and Llama 3 write either key) into a
 * name and a JSON arguments string, or null when `text` is not such an object.
 */
export function parseToolCallJson(text: string): { name: string; arguments: string } | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const { name, arguments: args, parameters } = value as Record<string, unknown>;
  if (typeof name !== 'string' || name.length === 0) return null;
  const given = args ?? parameters ?? {};
  if (typeof given === 'string') return { name, arguments: given };
  if (typeof given !== 'object' || given === null || Array.isArray(given)) return null;
  return { name, arguments: JSON.stringify(given) };
}

/** Length of the longest suffix of `text` that `tag` starts with: a tag that may still be arriving. */
export function partialTagLength(text: string, tag: string): number {
  for (let length = Math.min(tag.length - 1, text.length); length > 0; length--) {
    if (tag.startsWith(text.slice(text.length - length))) return length;
  }
  return 0;
}
