import type { ChatToolCall } from '@ferrum/types';
import { FerrumError } from '@ferrum/types';
import { createHermesToolCallParser } from './hermes-tool-call-parser.js';
import { createLlama3JsonToolCallParser } from './llama3-json-tool-call-parser.js';
import { createMistralToolCallParser } from './mistral-tool-call-parser.js';
import type { ToolCallParser, ToolCallParserOptions } from './tool-call.js';

/**
 * Tool-call formats, named as vLLM's `--tool-call-parser`: Hermes/Qwen tags, Llama 3 JSON, or Mistral's
 * `[TOOL_CALLS]`.
 */
export type ToolCallFormat = 'hermes' | 'llama3_json' | 'mistral';

const FACTORIES: Record<ToolCallFormat, (options: ToolCallParserOptions) => ToolCallParser> = {
  hermes: createHermesToolCallParser,
  llama3_json: createLlama3JsonToolCallParser,
  mistral: createMistralToolCallParser,
};

/** Every known format (for option lists). */
export const toolCallFormats: readonly ToolCallFormat[] = Object.freeze(
  Object.keys(FACTORIES) as ToolCallFormat[],
);

/**
 * Whether the format's calls start with a special token, so the output must be decoded with special tokens
 * kept (`skipSpecialTokens: false`) for the parser to see them, as vLLM's Mistral parser arranges. Hermes'
 * `<tool_call>` is an ordinary added token and Llama 3 calls need no `<|python_tag|>`.
 */
export function toolCallFormatNeedsSpecialTokens(format: ToolCallFormat): boolean {
  return format === 'mistral';
}

/**
 * A streaming tool-call parser for one sequence.
 *
 * @throws FerrumError `invalid_argument` for an unknown format.
 */
export function createToolCallParser(
  format: ToolCallFormat,
  options: ToolCallParserOptions = {},
): ToolCallParser {
  const factory = FACTORIES[format];
  if (factory === undefined) {
    throw new FerrumError(
      'invalid_argument',
      `unknown tool call format "${format}" (known: ${Object.keys(FACTORIES).join(', ')})`,
    );
  }
  return factory(options);
}

/** A whole output split into content and tool calls (the non-streaming response). */
export interface ExtractedToolCalls {
  /** The content text; empty when the output was only tool calls. */
  readonly content: string;
  readonly toolCalls: readonly ChatToolCall[];
}

/** Split a complete output into content and tool calls, as the streaming parser would. */
export function extractToolCalls(
  text: string,
  format: ToolCallFormat,
  options: ToolCallParserOptions = {},
): ExtractedToolCalls {
  const parser = createToolCallParser(format, options);
  const steps = [parser.push(text), parser.finish()];
  return {
    content: steps.map((step) => step.text).join(''),
    toolCalls: steps.flatMap((step) =>
      step.toolCalls.map((call) => ({ id: call.id, type: call.type, function: call.function })),
    ),
  };
}
