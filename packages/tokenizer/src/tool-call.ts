import { randomUUID } from 'node:crypto';

/**
 * One tool call as it streams out, in OpenAI's `choices[].delta.tool_calls[]` shape. Ferrum's parsers
 * emit each call whole, once its text is complete: one delta with `id`, `type`, the name and all the
 * arguments (a JSON string).
 */
export interface ToolCallDelta {
  /** Position of the call among this sequence's calls. */
  readonly index: number;
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

/** What a {@link ToolCallParser} releases for one piece of generated text. */
export interface ToolCallParseStep {
  /** Ordinary text (the assistant's `content`); may be empty. */
  readonly text: string;
  readonly toolCalls: readonly ToolCallDelta[];
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
  /** Makes the `id` of each call. Default: `call_` and 24 random hex digits. */
  readonly generateId?: () => string;
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
