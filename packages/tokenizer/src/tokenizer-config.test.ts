import { describe, expect, it } from 'vitest';
import { parseGenerationConfig } from './generation-config.js';
import { parseTokenizerConfig } from './tokenizer-config.js';

describe('parseTokenizerConfig', () => {
  it('reads special tokens given as strings or AddedToken objects, the config winning over the map', () => {
    const config = parseTokenizerConfig(
      {
        bos_token: { __type: 'AddedToken', content: '<s>', lstrip: false },
        eos_token: '</s>',
        pad_token: null,
        add_bos_token: true,
        legacy: false,
        model_max_length: 1e30,
        chat_template: [
          { name: 'default', template: 'D' },
          { name: 'tool_use', template: 'T' },
        ],
      },
      {
        eos_token: '<eos>',
        unk_token: { content: '<unk>' },
        additional_special_tokens: ['<a>', { content: '<b>' }],
      },
      'tokenizer_config.json',
    );
    expect(config.specialTokens).toEqual({
      bos_token: '<s>',
      eos_token: '</s>',
      unk_token: '<unk>',
    });
    expect(config.additionalSpecialTokens).toEqual(['<a>', '<b>']);
    expect(config.addBosToken).toBe(true);
    expect(config.addEosToken).toBeUndefined();
    expect(config.legacy).toBe(false);
    expect(config.modelMaxLength).toBeNull();
    expect(config.cleanUpTokenizationSpaces).toBe(false);
    expect([...config.chatTemplates]).toEqual([
      ['default', 'D'],
      ['tool_use', 'T'],
    ]);
  });

  it('refuses fields of the wrong type', () => {
    expect(() => parseTokenizerConfig({ add_bos_token: 'yes' }, {}, 'f')).toThrow(
      expect.objectContaining({ code: 'invalid_checkpoint' }),
    );
    expect(() => parseTokenizerConfig({ chat_template: [{ name: 'x' }] }, {}, 'f')).toThrow(
      expect.objectContaining({ code: 'invalid_checkpoint' }),
    );
  });
});

describe('parseGenerationConfig', () => {
  it('reads one or several EOS ids and the sampling defaults it sets', () => {
    const config = parseGenerationConfig(
      { eos_token_id: [151645, 151643], temperature: 0.6, top_k: 20, top_p: 0.95, do_sample: true },
      'generation_config.json',
    );
    expect(config.eosTokenIds).toEqual([151645, 151643]);
    expect(config.samplingDefaults).toEqual({ temperature: 0.6, topK: 20, topP: 0.95 });
    expect(parseGenerationConfig({ eos_token_id: 2, max_new_tokens: 64 }, 'g').eosTokenIds).toEqual([2]);
    expect(parseGenerationConfig({ max_new_tokens: 64 }, 'g').samplingDefaults).toEqual({ maxTokens: 64 });
  });

  it('refuses malformed EOS ids', () => {
    expect(() => parseGenerationConfig({ eos_token_id: ['2'] }, 'g')).toThrow(
      expect.objectContaining({ code: 'invalid_checkpoint' }),
    );
  });
});
