import type { Tokenizer } from '@ferrum/interfaces';
import { type ChatMessage, type ChatTool, isFerrumError } from '@ferrum/types';
import { encodeText } from './encode-text.js';
import { invalidRequest } from './openai-error.js';
import type { ChatRequestMessage, ChatRequestTool } from './schemas/chat-request.js';

/** What renders a chat: the messages and, when tools are offered, the tools and template options. */
export interface ChatPromptInput {
  readonly messages: readonly ChatRequestMessage[];
  readonly tools?: readonly ChatRequestTool[] | null;
  /** Default true, or false when continuing the final message. */
  readonly addGenerationPrompt?: boolean | null;
  /** vLLM's `continue_final_message`: the prompt ends inside the final message, which the model continues. */
  readonly continueFinalMessage?: boolean | null;
  readonly chatTemplateKwargs?: Readonly<Record<string, unknown>> | null;
}

/** A rendered chat prompt and its token ids. */
export interface ChatPrompt {
  readonly text: string;
  readonly tokenIds: number[];
}

/**
 * Render messages with the model's chat template and tokenize the result (without special tokens: the
 * template writes them, as vLLM does). Template errors, and a final message that cannot be continued, are
 * the request's fault (400).
 */
export async function renderChatPrompt(
  tokenizer: Tokenizer | null,
  input: ChatPromptInput,
): Promise<ChatPrompt> {
  if (!tokenizer) throw invalidRequest('this model has no tokenizer, so it has no chat template', 'messages');
  const continueFinalMessage = input.continueFinalMessage ?? false;
  if (continueFinalMessage && input.addGenerationPrompt === true) {
    throw invalidRequest(
      'continue_final_message and add_generation_prompt cannot both be true',
      'continue_final_message',
    );
  }
  const messages = input.messages.map(toChatMessage);
  let text: string;
  try {
    text = tokenizer.applyChatTemplate(messages, {
      tools: input.tools && input.tools.length > 0 ? (input.tools as readonly ChatTool[]) : undefined,
      addGenerationPrompt: input.addGenerationPrompt ?? !continueFinalMessage,
      continueFinalMessage,
      kwargs: input.chatTemplateKwargs ?? undefined,
    });
  } catch (error) {
    const reason = isFerrumError(error) || error instanceof Error ? error.message : String(error);
    throw invalidRequest(`the chat template failed: ${reason}`, 'messages', 'chat_template_error');
  }
  return { text, tokenIds: await encodeText(tokenizer, text, false) };
}

/** Content parts become one string (text parts joined by newlines); other part types are refused. */
function toChatMessage(message: ChatRequestMessage, index: number): ChatMessage {
  if (!Array.isArray(message.content)) return { ...message, content: message.content ?? null } as ChatMessage;
  const texts = message.content.map((part, p) => {
    if (part.type !== 'text' || typeof part.text !== 'string') {
      throw invalidRequest(
        `content part of type "${part.type}" is not supported (text only)`,
        `messages[${index}].content[${p}]`,
      );
    }
    return part.text;
  });
  return { ...message, content: texts.join('\n') } as ChatMessage;
}
