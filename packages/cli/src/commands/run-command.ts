import { createEngine, type FerrumEngine } from '@ferrum/engine';
import {
  FerrumError,
  type FinishReason,
  type PromptInput,
  type SamplingParams,
  type Usage,
} from '@ferrum/types';
import type { CliContext } from '../cli-context.js';
import { ENGINE_FLAGS, ENGINE_FLAGS_HELP, engineOptionsFrom } from '../engine-flags.js';
import { numberOption, type ParsedOptions, parseOptions, stringOption } from '../parse-options.js';
import { checkPromptIdsInVocabulary, parsePromptIds } from '../prompt-ids.js';
import { chatSession } from './chat-session.js';

export const RUN_USAGE = `Usage: ferrum run [--prompt TEXT | --prompt-ids 1,2,3] [options]

Generate from one prompt, streaming the text to stdout. Without a prompt, on a terminal (or with
--interactive), start a streaming chat; with piped input, the input is the prompt.

  --prompt TEXT          the prompt
  --prompt-ids IDS       the prompt as comma-separated token ids
  --chat                 render the prompt as a user message with the chat template
  --system TEXT          system message (chat)
  --interactive          chat in the terminal
  --max-tokens N         tokens to generate (default 256)
  --temperature T        0 is greedy (default 1)
  --top-p P, --top-k K, --min-p P, --repetition-penalty R
  --seed S               seed of the sampler (same seed, same output)
  --ignore-eos           keep going past end-of-sequence
  --json                 print one JSON object (tokenIds, finishReason, text, usage) instead of text
  --verbose              log engine start-up to stderr
${ENGINE_FLAGS_HELP}`;

/** `ferrum run`: one-shot generation or an interactive chat. */
export async function runCommand(args: readonly string[], context: CliContext): Promise<number> {
  const parsed = parseOptions('run', args, {
    ...ENGINE_FLAGS,
    prompt: { type: 'string' },
    'prompt-ids': { type: 'string' },
    chat: { type: 'boolean' },
    system: { type: 'string' },
    interactive: { type: 'boolean' },
    'max-tokens': { type: 'string' },
    temperature: { type: 'string' },
    'top-p': { type: 'string' },
    'top-k': { type: 'string' },
    'min-p': { type: 'string' },
    'repetition-penalty': { type: 'string' },
    seed: { type: 'string' },
    'ignore-eos': { type: 'boolean' },
    json: { type: 'boolean' },
    verbose: { type: 'boolean' },
  });
  if (parsed.positionals.length > 0) {
    throw new FerrumError(
      'invalid_argument',
      `run: unexpected argument "${parsed.positionals[0]}" (use --prompt)`,
    );
  }
  if (parsed.values.prompt !== undefined && parsed.values['prompt-ids'] !== undefined) {
    throw new FerrumError('invalid_argument', 'run: give --prompt or --prompt-ids, not both');
  }
  const sampling = samplingFrom(parsed);
  const interactive =
    parsed.values.interactive === true ||
    (parsed.values.prompt === undefined &&
      parsed.values['prompt-ids'] === undefined &&
      context.stdin.isTTY === true);
  // Everything about the prompt that can be checked without the weights is checked before they load.
  const idsText = stringOption(parsed, 'prompt-ids');
  const promptIds = idsText === undefined ? undefined : parsePromptIds(idsText);
  const text = interactive || promptIds ? undefined : await promptText(parsed, context);
  const options = engineOptionsFrom(parsed, context.env);
  if (promptIds && !interactive) await checkPromptIdsInVocabulary(promptIds, options.model);
  const log = parsed.values.verbose ? (line: string) => context.stderr.write(`${line}\n`) : undefined;
  const engine = await createEngine({ ...options, log });
  try {
    if (interactive) {
      await chatSession(engine, context, { system: stringOption(parsed, 'system'), sampling });
      return 0;
    }
    const prompt = promptIds ? { tokenIds: promptIds } : textPrompt(text ?? '', parsed, engine);
    return await generateOnce(engine, prompt, sampling, parsed.values.json === true, context);
  } finally {
    await engine.shutdown();
  }
}

function samplingFrom(parsed: ParsedOptions): Partial<SamplingParams> {
  return {
    maxTokens: numberOption(parsed, 'max-tokens', { min: 1, integer: true }) ?? 256,
    temperature: numberOption(parsed, 'temperature', { min: 0 }),
    topP: numberOption(parsed, 'top-p', { min: 0.000001, max: 1 }),
    topK: numberOption(parsed, 'top-k', { min: -1, integer: true }),
    minP: numberOption(parsed, 'min-p', { min: 0, max: 1 }),
    repetitionPenalty: numberOption(parsed, 'repetition-penalty', { min: 0.000001 }),
    seed: numberOption(parsed, 'seed', { integer: true }),
    ignoreEos: parsed.values['ignore-eos'] === true ? true : undefined,
  };
}

/** The text of --prompt, or piped stdin. */
async function promptText(parsed: ParsedOptions, context: CliContext): Promise<string> {
  const text = stringOption(parsed, 'prompt') ?? (await readAll(context.stdin));
  if (text.length === 0)
    throw new FerrumError('invalid_argument', 'run: the prompt is empty (give --prompt TEXT)');
  return text;
}

/** A text prompt, rendered as a user message by the chat template with --chat. */
function textPrompt(text: string, parsed: ParsedOptions, engine: FerrumEngine): PromptInput {
  if (!parsed.values.chat) return { text };
  if (!engine.tokenizer) throw new FerrumError('invalid_argument', '--chat needs a model with a tokenizer');
  const system = stringOption(parsed, 'system');
  const messages = [
    ...(system ? [{ role: 'system', content: system }] : []),
    { role: 'user', content: text },
  ];
  return { text: engine.tokenizer.applyChatTemplate(messages), addSpecialTokens: false };
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += chunk.toString();
  return text.replace(/\n$/, '');
}

/** Stream one generation; with `json`, print one object at the end instead of the text. */
async function generateOnce(
  engine: FerrumEngine,
  prompt: PromptInput,
  sampling: Partial<SamplingParams>,
  json: boolean,
  context: CliContext,
): Promise<number> {
  let text = '';
  const tokenIds: number[] = [];
  let finishReason: FinishReason | undefined;
  let usage: Usage | undefined;
  for await (const chunk of engine.generate({ prompt, sampling }, { signal: context.signal })) {
    text += chunk.text;
    tokenIds.push(...chunk.tokenIds);
    finishReason = chunk.finishReason ?? finishReason;
    usage = chunk.usage ?? usage;
    if (!json) context.stdout.write(chunk.text);
  }
  context.stdout.write(json ? `${JSON.stringify({ text, tokenIds, finishReason, usage })}\n` : '\n');
  return finishReason === 'abort' ? 130 : 0;
}
