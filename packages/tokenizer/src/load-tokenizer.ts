import path from 'node:path';
import { parseJsonObject } from '@ferrum/models';
import { AddedTokenSplitter } from './added-token-splitter.js';
import { ChatTemplateRenderer } from './chat-template.js';
import { EncodeWorker } from './encode-worker.js';
import { parseGenerationConfig } from './generation-config.js';
import { HfTokenizer } from './hf-tokenizer.js';
import { readChatTemplates } from './read-chat-templates.js';
import { readOptionalJsonObject, readOptionalText } from './read-model-file.js';
import { parseTokenizerConfig, type TokenizerConfig } from './tokenizer-config.js';
import {
  applyTransformersPipeline,
  hasByteFallbackDecoder,
  mayRewritePipeline,
  type TokenizerJson,
} from './transformers-pipeline.js';
import { loadDecoder, readVocabulary } from './vocabulary.js';

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
 * Returns null when the directory has no `tokenizer.json` (token-id prompts only). The native tokenizer
 * loads on a worker thread while this thread reads the vocabulary.
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

  // Files transformers uses as they are start loading at once; the others after their rewrite.
  let encoder = mayRewritePipeline(config)
    ? null
    : EncodeWorker.start({ file: tokenizerFile }, tokenizerFile);
  encoder?.catch(() => {});
  try {
    const json = parseJsonObject(tokenizerText, tokenizerFile) as TokenizerJson;
    if (encoder === null) {
      const source = applyTransformersPipeline(json, config)
        ? { json: JSON.stringify(json) }
        : { file: tokenizerFile };
      encoder = EncodeWorker.start(source, tokenizerFile);
    }
    const vocabulary = readVocabulary(json, tokenizerFile);
    const decoder = loadDecoder(json.decoder, tokenizerFile);
    const generationFile = path.join(modelDir, 'generation_config.json');
    const generation = parseGenerationConfig(
      (await readOptionalJsonObject(generationFile)) ?? {},
      generationFile,
    );
    const templates = await readChatTemplates(modelDir, config.chatTemplates);
    if (options.chatTemplate !== undefined) templates.set('default', options.chatTemplate);

    const idOf = (token: string | undefined) => (token ? vocabulary.pieces.indexOf(token) : -1);
    const eosTokenIds: number[] = [];
    for (const id of [idOf(config.specialTokens.eos_token), ...generation.eosTokenIds]) {
      if (id >= 0 && !eosTokenIds.includes(id)) eosTokenIds.push(id);
    }
    const bosTokenId = idOf(config.specialTokens.bos_token);
    return new HfTokenizer({
      encoder: await encoder,
      // `json` as the worker loaded it: rewritten in place when the worker got the rewrite.
      addedTokenSplitter: AddedTokenSplitter.of(json),
      decoder,
      vocabulary,
      eosTokenIds,
      bosTokenId: bosTokenId >= 0 ? bosTokenId : null,
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
  } catch (error) {
    await encoder?.then((worker) => worker.dispose()).catch(() => {});
    throw error;
  }
}

/** transformers' `special_tokens_map` as template variables: set tokens only, plus the additional list. */
function templateVariables(config: TokenizerConfig): Record<string, string | readonly string[]> {
  const variables: Record<string, string | readonly string[]> = { ...config.specialTokens };
  if (config.additionalSpecialTokens.length > 0) {
    variables.additional_special_tokens = config.additionalSpecialTokens;
  }
  return variables;
}
