import type { ToolCallChunk, ToolCallDelta, ToolCallParser } from '@ferrum/tokenizer';
import type { TokenLogprob } from '@ferrum/types';
import type { ChatLogprob, ChatLogprobsBuilder } from '../logprobs-format.js';

/** One entry of a streamed chunk's `delta.tool_calls`, in OpenAI's shape. */
export interface ToolCallStreamDelta {
  readonly index: number;
  readonly id?: string;
  readonly type?: 'function';
  readonly function: { readonly name?: string; readonly arguments: string };
}

/** What one piece of a choice's text became. */
export interface ChoiceStep {
  /** Text for `content` (text that may be part of a call is held back until decided). */
  readonly content: string;
  /** Calls completed by this piece, whole (the non-streamed `tool_calls`). */
  readonly toolCalls: readonly ToolCallDelta[];
  /**
   * The same calls as they stream (`delta.tool_calls`): per call, first its index, id, type and name
   * with empty arguments, then the arguments text in pieces as the model writes it.
   */
  readonly toolCallDeltas: readonly ToolCallStreamDelta[];
}

const NONE: readonly never[] = Object.freeze([]);

/**
 * State of one choice: its tool-call parser (null when tools are off; it must stream arguments, so a
 * streamed and a whole response report the same calls), how many calls it made, and its logprobs
 * builder (null when logprobs were not asked for).
 */
export class ChoiceOutput {
  numToolCalls = 0;
  /** Whether the choice's first chunk (the one with `role`) went out. */
  started = false;

  constructor(
    private readonly parser: ToolCallParser | null,
    private readonly logprobs: ChatLogprobsBuilder | null,
  ) {}

  /** The logprobs of a chunk's tokens; null when none were asked for or the chunk has no token (OpenAI's shape). */
  logprobsOf(entries: readonly TokenLogprob[] | undefined): { content: ChatLogprob[] } | null {
    if (!this.logprobs || !entries?.length) return null;
    return { content: this.logprobs.build(entries) };
  }

  /** Split a text delta (and, at the end, whatever the parser held back) into content and tool calls. */
  push(text: string, finished: boolean): ChoiceStep {
    if (!this.parser) return { content: text, toolCalls: NONE, toolCallDeltas: NONE };
    const step = this.parser.push(text);
    const end = finished ? this.parser.finish() : null;
    const toolCalls = end ? [...step.toolCalls, ...end.toolCalls] : step.toolCalls;
    this.numToolCalls += toolCalls.length;
    const chunks = [...(step.toolCallChunks ?? NONE), ...(end?.toolCallChunks ?? NONE)];
    return {
      content: end ? step.text + end.text : step.text,
      toolCalls,
      toolCallDeltas: chunks.length === 0 ? NONE : chunks.flatMap(streamDeltas),
    };
  }
}

/** A call's first chunk names it with empty arguments (as OpenAI streams); its arguments text follows. */
function streamDeltas(chunk: ToolCallChunk): ToolCallStreamDelta[] {
  const { index, id, type, function: fn } = chunk;
  if (fn.name === undefined) return [{ index, function: { arguments: fn.arguments } }];
  const first = { index, id, type, function: { name: fn.name, arguments: '' } };
  return fn.arguments === '' ? [first] : [first, { index, function: { arguments: fn.arguments } }];
}
