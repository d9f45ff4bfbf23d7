/** A tool call made by the assistant (OpenAI shape; `arguments` is a JSON string). */
export interface ChatToolCall {
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

/** One message of a chat (OpenAI shape). */
export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
  /** Text, or null for an assistant message that only calls tools. */
  readonly content: string | null | readonly { readonly type: string; readonly text?: string }[];
  readonly name?: string;
  readonly tool_calls?: readonly ChatToolCall[];
  readonly tool_call_id?: string;
  /** Extra keys some templates read (e.g. `reasoning_content`). */
  readonly [key: string]: unknown;
}

/** A tool offered to the model (OpenAI shape; `parameters` is a JSON schema). */
export interface ChatTool {
  readonly type: 'function';
  readonly function: {
    readonly name: string;
    readonly description?: string;
    readonly parameters?: Readonly<Record<string, unknown>>;
  };
}
