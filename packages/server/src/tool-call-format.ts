import type { Tokenizer } from '@ferrum/interfaces';
import type { ToolCallFormat } from '@ferrum/tokenizer';

const PROBE_NAME = 'ferrum_format_probe';
/** Mistral's templates refuse tool call ids that are not 9 letters and digits. */
const PROBE_ID = 'call00000';

/**
 * Find how the served model writes tool calls by letting its chat template write one: a template that
 * renders an assistant tool call inside `<tool_call>` tags expects Hermes-style calls (Qwen, Hermes);
 * one that writes it after `[TOOL_CALLS]` expects Mistral's calls; one that writes the bare
 * `{"name": ...}` object expects Llama 3 JSON. Null when the template renders no tool calls (or fails), so
 * tool calls are not parsed.
 */
export function detectToolCallFormat(tokenizer: Tokenizer | null): ToolCallFormat | null {
  if (!tokenizer) return null;
  let rendered: string;
  try {
    rendered = tokenizer.applyChatTemplate(
      [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: PROBE_ID, type: 'function', function: { name: PROBE_NAME, arguments: '{}' } }],
        },
      ],
      { addGenerationPrompt: false },
    );
  } catch {
    return null;
  }
  if (!rendered.includes(PROBE_NAME)) return null;
  if (/<tool_call>\s*\{/.test(rendered)) return 'hermes';
  if (rendered.includes('[TOOL_CALLS]')) return 'mistral';
  if (/\{\s*"name"\s*:\s*"ferrum_format_probe"/.test(rendered)) return 'llama3_json';
  return null;
}
