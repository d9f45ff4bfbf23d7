import { type ChatMessage, FerrumError } from '@ferrum/types';

/**
 * Cut a rendered chat right after the final message's text, so the model continues that message instead
 * of starting a new turn (transformers' `continue_final_message`, which vLLM uses): the text is found at
 * its last place in the render, and what the template wrote after it (the end of turn) is dropped.
 * Trailing spacing of the message is kept when the template kept it.
 *
 * @throws FerrumError `invalid_argument` when the final message has no text, or the render does not
 *   contain it (a template that rewrites or drops it).
 */
export function continueFinalMessage(rendered: string, messages: readonly ChatMessage[]): string {
  const text = finalText(messages.at(-1));
  const trimmed = text.trim();
  if (trimmed.length === 0) {
    throw new FerrumError(
      'invalid_argument',
      'continue_final_message needs a final message with text to continue',
    );
  }
  const at = rendered.lastIndexOf(trimmed);
  if (at === -1) {
    throw new FerrumError(
      'invalid_argument',
      'continue_final_message: the chat template does not write the final message as given, so it cannot be continued',
    );
  }
  // Trailing spacing stays when the template wrote the message exactly as given (transformers' test: a
  // message with leading spacing is always cut after its trimmed text).
  const end = rendered.startsWith(text, at) ? at + text.length : at + trimmed.length;
  return rendered.slice(0, end);
}

/** The text of a message: its string content, or its last text part (as transformers picks it). */
function finalText(message: ChatMessage | undefined): string {
  const content = message?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    for (let i = content.length - 1; i >= 0; i--) {
      const part = content[i];
      if (part.type === 'text' && typeof part.text === 'string') return part.text;
    }
  }
  return '';
}
