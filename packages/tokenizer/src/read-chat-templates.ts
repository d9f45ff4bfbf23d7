import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { readOptionalJsonObject, readOptionalText } from './read-model-file.js';
import { parseChatTemplates } from './tokenizer-config.js';

const ADDITIONAL_DIR = 'additional_chat_templates';

/**
 * Chat templates of a model directory, in transformers' order, later sources winning: `chat_template` of
 * `tokenizer_config.json` (given), `chat_template.json`, `chat_template.jinja` (the default template),
 * then `additional_chat_templates/<name>.jinja`.
 */
export async function readChatTemplates(
  modelDir: string,
  fromConfig: ReadonlyMap<string, string>,
): Promise<Map<string, string>> {
  const templates = new Map(fromConfig);
  const jsonFile = path.join(modelDir, 'chat_template.json');
  const json = await readOptionalJsonObject(jsonFile);
  if (json !== undefined) {
    for (const [name, template] of parseChatTemplates(json.chat_template, jsonFile))
      templates.set(name, template);
  }
  const jinja = await readOptionalText(path.join(modelDir, 'chat_template.jinja'));
  if (jinja !== undefined) templates.set('default', jinja);
  for (const file of await listJinjaFiles(path.join(modelDir, ADDITIONAL_DIR))) {
    const template = await readOptionalText(path.join(modelDir, ADDITIONAL_DIR, file));
    if (template !== undefined) templates.set(file.slice(0, -'.jinja'.length), template);
  }
  return templates;
}

async function listJinjaFiles(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((file) => file.endsWith('.jinja')).sort();
  } catch {
    return [];
  }
}
