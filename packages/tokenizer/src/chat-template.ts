import type { ChatTemplateOptions } from '@ferrum/interfaces';
import { type ChatMessage, FerrumError } from '@ferrum/types';
import { Environment, Interpreter, Template } from '@huggingface/jinja';
import { continueFinalMessage } from './continue-final-message.js';
import { strftime } from './strftime.js';

/** Variables the caller may not override through `kwargs`: the renderer sets them from the options. */
const RESERVED = new Set(['messages', 'tools', 'documents', 'add_generation_prompt']);

/**
 * Renders chats with a model's Jinja chat templates the way transformers' `apply_chat_template` does:
 * trim_blocks and lstrip_blocks, `raise_exception`, `strftime_now`, transformers' `tojson`, the special
 * tokens (`bos_token`, `eos_token`, ...) as variables, and `tools` / `documents` passed as `None` when
 * absent. Templates compile once, on first use.
 */
export class ChatTemplateRenderer {
  private readonly compiled = new Map<string, Template>();

  /**
   * @param templates - templates by name (`default` for a single one)
   * @param specialTokens - template variables for the tokenizer's special tokens (unset ones left out)
   * @param now - clock of `strftime_now`
   */
  constructor(
    private readonly templates: ReadonlyMap<string, string>,
    private readonly specialTokens: Readonly<Record<string, string | readonly string[]>>,
    private readonly now: () => Date,
  ) {}

  /** Names of the available templates. */
  get names(): string[] {
    return [...this.templates.keys()];
  }

  /**
   * Render `messages` to the prompt string. Does not modify `messages`. With `continueFinalMessage`, the
   * prompt ends right after the final message's text (see {@link continueFinalMessage}).
   *
   * @throws FerrumError `not_found` when the model has no (such) template; `invalid_argument` when the
   *   template refuses the chat (`raise_exception`) or fails, or the final message cannot be continued
   *   (also when a generation prompt is asked for too); `invalid_checkpoint` when it does not parse.
   */
  render(messages: readonly ChatMessage[], options: ChatTemplateOptions = {}): string {
    const continuing = options.continueFinalMessage ?? false;
    if (continuing && options.addGenerationPrompt === true) {
      throw new FerrumError(
        'invalid_argument',
        'continueFinalMessage continues the final message; it cannot be combined with addGenerationPrompt',
      );
    }
    const rendered = this.renderTemplate(
      messages,
      options,
      !continuing && (options.addGenerationPrompt ?? true),
    );
    return continuing ? continueFinalMessage(rendered, messages) : rendered;
  }

  private renderTemplate(
    messages: readonly ChatMessage[],
    options: ChatTemplateOptions,
    addGenerationPrompt: boolean,
  ): string {
    const [name, template] = this.select(options.templateName, options.tools !== undefined);
    const env = new Environment();
    const variables: Record<string, unknown> = {
      true: true,
      false: false,
      none: null,
      True: true,
      False: false,
      None: null,
      range: pythonRange,
      raise_exception: (message: unknown) => {
        throw new FerrumError('invalid_argument', String(message), { details: { chatTemplate: name } });
      },
      strftime_now: (format: unknown) => strftime(this.now(), String(format)),
      ...this.specialTokens,
    };
    for (const [key, value] of Object.entries(options.kwargs ?? {})) {
      if (!RESERVED.has(key)) variables[key] = value;
    }
    variables.messages = messages.map(templateMessage);
    variables.tools = options.tools ?? null;
    variables.documents = null;
    variables.add_generation_prompt = addGenerationPrompt;
    for (const [key, value] of Object.entries(variables)) env.set(key, value);
    try {
      return new Interpreter(env).run(template.parsed).value as string;
    } catch (error) {
      if (error instanceof FerrumError) throw error;
      throw new FerrumError(
        'invalid_argument',
        `chat template "${name}" failed: ${(error as Error).message}`,
        {
          cause: error,
          details: { chatTemplate: name },
        },
      );
    }
  }

  /** transformers' choice: the named template, else `tool_use` when tools are given, else `default`. */
  private select(requested: string | undefined, hasTools: boolean): [string, Template] {
    let name = requested;
    if (name === undefined) name = hasTools && this.templates.has('tool_use') ? 'tool_use' : 'default';
    const source = this.templates.get(name);
    if (source === undefined) {
      const message =
        this.templates.size === 0
          ? 'this model has no chat template'
          : `this model has no chat template named "${name}" (it has: ${this.names.join(', ')})`;
      throw new FerrumError('not_found', message, { details: { chatTemplate: name } });
    }
    let template = this.compiled.get(name);
    if (template === undefined) {
      try {
        template = new Template(source);
      } catch (error) {
        throw new FerrumError(
          'invalid_checkpoint',
          `chat template "${name}" cannot be parsed: ${(error as Error).message}`,
          { cause: error, details: { chatTemplate: name } },
        );
      }
      this.compiled.set(name, template);
    }
    return [name, template];
  }
}

/**
 * The message as templates expect it (vLLM's preparation): text parts joined into one string, and tool
 * call `arguments` given as a JSON string parsed to an object, since templates write them with `tojson`.
 */
function templateMessage(message: ChatMessage): ChatMessage {
  let out = message;
  const content = message.content;
  if (Array.isArray(content) && content.every((part) => part.type === 'text')) {
    out = { ...out, content: content.map((part) => part.text ?? '').join('\n') };
  }
  if (message.tool_calls?.some((call) => typeof call.function?.arguments === 'string')) {
    const toolCalls = message.tool_calls.map((call) => ({
      ...call,
      function: { ...call.function, arguments: parseArguments(call.function.arguments) },
    }));
    out = { ...out, tool_calls: toolCalls as unknown as ChatMessage['tool_calls'] };
  }
  return out;
}

function parseArguments(text: unknown): unknown {
  if (typeof text !== 'string') return text;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? value : text;
  } catch {
    return text;
  }
}

/** Python's `range(stop)` / `range(start, stop[, step])`. */
function pythonRange(start: number, stop?: number, step = 1): number[] {
  const [from, to] = stop === undefined ? [0, start] : [start, stop];
  if (step === 0) throw new Error('range() arg 3 must not be zero');
  const out: number[] = [];
  for (let i = from; step > 0 ? i < to : i > to; i += step) out.push(i);
  return out;
}
