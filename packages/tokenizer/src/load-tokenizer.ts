import path from 'node:path';
import { FerrumError } from '@ferrum/types';
import { Tokenizer as NativeTokenizer } from 'tokenizers';
import { ChatTemplateRenderer } from './chat-template.js';
import { parseGenerationConfig } from './generation-config.js';
import { HfTokenizer } from './hf-tokenizer.js';
import { readChatTemplates } from './read-chat-templates.js';
import { parseJsonObject, readOptionalJsonObject, readOptionalText } from './read-model-file.js';
import { parseTokenizerConfig, type TokenizerConfig } from './tokenizer-config.js';
import {
  applyTransformersPipeline,
  hasByteFallbackDecoder,
  type TokenizerJson,
} from './transformers-pipeline.js';

/** Options of {@link loadTokenizer}. */
export interface LoadTokenizerOptions {
  /** A Jinja chat template replacing the model's default one (vLLM's `--chat-template`). */
  readonly chatTemplate?: string;
  /** Clock of the templates' `strftime_now` (tests pin it). Default: the current time. */
  readonly now?: () => Date;
}

/**
 * Load the tokenizer of a model directory in Hugging Face layout: `tokenizer.json`, and when present
 * `tokenizer_config.json`, `special_tokens_map.json`, `generation_config.json` and chat template files.
 * Returns null when the directory has no `tokenizer.json` (token-id prompts only).
 *
 * @throws FerrumError `invalid_checkpoint` when a file is unreadable or malformed.
 */
export async function loadTokenizer(
  modelDir: string,
  options: LoadTokenizerOptions = {},
): Promise<HfTokenizer | null> {
  const tokenizerFile = path.join(modelDir, 'tokenizer.json');
  const tokenizerText = await readOptionalText(tokenizerFile);
  if (tokenizerText === undefined) return null;
  const configFile = path.join(modelDir, 'tokenizer_config.json');
  const config = parseTokenizerConfig(
    (await readOptionalJsonObject(configFile)) ?? {},
    (await readOptionalJsonObject(path.join(modelDir, 'special_tokens_map.json'))) ?? {},
    configFile,
  );
  const generationFile = path.join(modelDir, 'generation_config.json');
  const generation = parseGenerationConfig(
    (await readOptionalJsonObject(generationFile)) ?? {},
    generationFile,
  );
  const templates = await readChatTemplates(modelDir, config.chatTemplates);
  if (options.chatTemplate !== undefined) templates.set('default', options.chatTemplate);

  const json = parseJsonObject(tokenizerText, tokenizerFile) as TokenizerJson;
  const rewritten = applyTransformersPipeline(json, config) ? JSON.stringify(json) : null;
  const native = loadNative(rewritten ?? tokenizerText, tokenizerFile);
  const idOf = (token: string | null | undefined) => (token ? (native.tokenToId(token) ?? null) : null);

  const eosTokenIds: number[] = [];
  for (const id of [idOf(config.specialTokens.eos_token), ...generation.eosTokenIds]) {
    if (id !== null && !eosTokenIds.includes(id)) eosTokenIds.push(id);
  }
  return new HfTokenizer({
    native,
    encoderSource: rewritten === null ? { file: tokenizerFile } : { json: rewritten },
    specialIds: new Set((json.added_tokens ?? []).filter((token) => token.special).map((token) => token.id)),
    eosTokenIds,
    bosTokenId: idOf(config.specialTokens.bos_token),
    modelMaxLength: config.modelMaxLength,
    cleanUpTokenizationSpaces: config.cleanUpTokenizationSpaces,
    byteFallback: hasByteFallbackDecoder(json.decoder),
    samplingDefaults: generation.samplingDefaults,
    chatTemplates: new ChatTemplateRenderer(
      templates,
      templateVariables(config),
      options.now ?? (() => new Date()),
    ),
  });
}

function loadNative(json: string, file: string): NativeTokenizer {
  try {
    return NativeTokenizer.fromString(json);
  } catch (error) {
    throw new FerrumError('invalid_checkpoint', `${file} cannot be loaded: ${(error as Error).message}`, {
      cause: error,
      details: { file },
    });
  }
}

/** transformers' `special_tokens_map` as template variables: set tokens only, plus the additional list. */
function templateVariables(config: TokenizerConfig): Record<string, string | readonly string[]> {
  const variables: Record<string, string | readonly string[]> = {};
  for (const [key, value] of Object.entries(config.specialTokens)) if (value) variables[key] = value;
  if (config.additionalSpecialTokens.length > 0) {
    variables.additional_special_tokens = config.additionalSpecialTokens;
  }
  return variables;
}
