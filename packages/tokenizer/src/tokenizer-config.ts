import { FerrumError } from '@ferrum/types';

/** The parts of `tokenizer_config.json` (merged with `special_tokens_map.json`) that shape behaviour. */
export interface TokenizerConfig {
  /** `tokenizer_class`, e.g. `LlamaTokenizer`, `Qwen2Tokenizer`, `PreTrainedTokenizerFast`. */
  readonly tokenizerClass: string | null;
  /** Special token strings by their transformers name (`bos_token`, `eos_token`, `unk_token`, `pad_token`, ...). */
  readonly specialTokens: Readonly<Record<string, string>>;
  readonly additionalSpecialTokens: readonly string[];
  /** `add_bos_token` / `add_eos_token` when the file sets them. */
  readonly addBosToken: boolean | undefined;
  readonly addEosToken: boolean | undefined;
  readonly addPrefixSpace: boolean | undefined;
  readonly legacy: boolean | undefined;
  /** transformers' `clean_up_tokenization_spaces` (default false, as in transformers 5). */
  readonly cleanUpTokenizationSpaces: boolean;
  /** `model_max_length`, or null when absent or transformers' "very large" sentinel. */
  readonly modelMaxLength: number | null;
  /** Chat templates by name; a single unnamed template is `default`. */
  readonly chatTemplates: ReadonlyMap<string, string>;
}

const SPECIAL_TOKEN_KEYS = [
  'bos_token',
  'eos_token',
  'unk_token',
  'sep_token',
  'pad_token',
  'cls_token',
  'mask_token',
] as const;

/** transformers writes `int(1e30)` for "no limit". */
const NO_LENGTH_LIMIT = 1e20;

/**
 * Normalize the raw JSON of `tokenizer_config.json` and `special_tokens_map.json` (either may be empty).
 * Special tokens may be strings or `AddedToken` objects (`{ "content": ... }`); the config wins over the map.
 *
 * @throws FerrumError `invalid_checkpoint` when a field has the wrong type.
 */
export function parseTokenizerConfig(
  config: Readonly<Record<string, unknown>>,
  specialTokensMap: Readonly<Record<string, unknown>>,
  file: string,
): TokenizerConfig {
  const specialTokens: Record<string, string> = {};
  for (const key of SPECIAL_TOKEN_KEYS) {
    const raw = key in config ? config[key] : specialTokensMap[key];
    const value = tokenContent(raw, `${file}: ${key}`);
    if (value !== undefined && value !== null) specialTokens[key] = value;
  }
  const additional = config.additional_special_tokens ?? specialTokensMap.additional_special_tokens ?? [];
  if (!Array.isArray(additional)) invalid(file, 'additional_special_tokens must be a list');
  const maxLength = config.model_max_length;
  return {
    tokenizerClass: optionalString(config.tokenizer_class, file, 'tokenizer_class') ?? null,
    specialTokens,
    additionalSpecialTokens: additional
      .map((token) => tokenContent(token, `${file}: additional_special_tokens`))
      .filter((token): token is string => typeof token === 'string'),
    addBosToken: optionalBoolean(config.add_bos_token, file, 'add_bos_token'),
    addEosToken: optionalBoolean(config.add_eos_token, file, 'add_eos_token'),
    addPrefixSpace: optionalBoolean(config.add_prefix_space, file, 'add_prefix_space'),
    legacy: optionalBoolean(config.legacy, file, 'legacy'),
    cleanUpTokenizationSpaces:
      optionalBoolean(config.clean_up_tokenization_spaces, file, 'clean_up_tokenization_spaces') ?? false,
    modelMaxLength:
      typeof maxLength === 'number' &&
      Number.isFinite(maxLength) &&
      maxLength > 0 &&
      maxLength < NO_LENGTH_LIMIT
        ? maxLength
        : null,
    chatTemplates: parseChatTemplates(config.chat_template, file),
  };
}

/**
 * `chat_template` as transformers stores it: a string, or a list of `{ name, template }` (named templates
 * such as `default`, `tool_use`, `rag`). Absent gives an empty map.
 */
export function parseChatTemplates(value: unknown, file: string): Map<string, string> {
  const templates = new Map<string, string>();
  if (value === undefined || value === null) return templates;
  if (typeof value === 'string') return templates.set('default', value);
  if (!Array.isArray(value)) invalid(file, 'chat_template must be a string or a list of named templates');
  for (const entry of value) {
    const { name, template } = (entry ?? {}) as { name?: unknown; template?: unknown };
    if (typeof name !== 'string' || typeof template !== 'string') {
      invalid(file, 'each named chat_template needs a string "name" and "template"');
    }
    templates.set(name, template);
  }
  return templates;
}

/** The text of a special token given as a string, an `AddedToken` object, or null. */
function tokenContent(value: unknown, where: string): string | null | undefined {
  if (value === undefined || value === null || typeof value === 'string') return value;
  if (typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
    return (value as { content: string }).content;
  }
  throw new FerrumError('invalid_checkpoint', `${where} must be a string or an object with "content"`);
}

function optionalBoolean(value: unknown, file: string, key: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'boolean') invalid(file, `${key} must be a boolean`);
  return value;
}

function optionalString(value: unknown, file: string, key: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') invalid(file, `${key} must be a string`);
  return value;
}

function invalid(file: string, message: string): never {
  throw new FerrumError('invalid_checkpoint', `${file}: ${message}`, { details: { file } });
}
