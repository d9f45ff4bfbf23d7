import { describe, expect, it } from 'vitest';
import { ChatTemplateRenderer } from './chat-template.js';

const NOW = () => new Date(2024, 6, 26, 9, 5, 7);

function renderer(templates: Record<string, string>, specialTokens: Record<string, string> = {}) {
  return new ChatTemplateRenderer(new Map(Object.entries(templates)), specialTokens, NOW);
}

const user = [{ role: 'user', content: 'hi' }] as const;

describe('ChatTemplateRenderer', () => {
  it('trims blocks and passes special tokens, generation prompt and kwargs as transformers does', () => {
    const template = `{{ bos_token }}{% for m in messages %}
  [{{ m.role }}] {{ m.content }}
{% endfor %}{% if add_generation_prompt %}>{% endif %}{% if enable_thinking is defined %}{{ enable_thinking }}{% endif %}`;
    const chat = renderer({ default: template }, { bos_token: '<s>' });
    expect(chat.render(user)).toBe('<s>  [user] hi\n>');
    expect(chat.render(user, { addGenerationPrompt: false, kwargs: { enable_thinking: false } })).toBe(
      '<s>  [user] hi\nfalse',
    );
  });

  it('gives None for absent tools and documents, and leaves unset special tokens undefined', () => {
    const chat = renderer({
      default:
        '{{ tools is none }} {{ documents is none }} {{ bos_token is defined }} {{ tools | length if tools else 0 }}',
    });
    expect(chat.render(user)).toBe('true true false 0');
    expect(chat.render(user, { tools: [{ type: 'function', function: { name: 'f' } }] })).toBe(
      'false true false 1',
    );
  });

  it('writes tojson like Python json.dumps, with indent', () => {
    const chat = renderer({ default: '{{ messages[0] | tojson }}|{{ {"a": [1, 2]} | tojson(indent=2) }}' });
    expect(chat.render([{ role: 'user', content: 'é "q"\n' }])).toBe(
      '{"role": "user", "content": "é \\"q\\"\\n"}|{\n  "a": [\n    1,\n    2\n  ]\n}',
    );
  });

  it('parses OpenAI-style tool call arguments for the template and joins text parts', () => {
    const chat = renderer({
      default:
        '{% for m in messages %}{{ m.content }}{% for c in m.tool_calls or [] %}{{ c.function.arguments.city }}{% endfor %}{% endfor %}',
    });
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'x', type: 'function' as const, function: { name: 'f', arguments: '{"city": "Oslo"}' } },
        ],
      },
    ];
    expect(chat.render(messages)).toBe('a\nbOslo');
    // The caller's messages are left as they were.
    expect(messages[1].tool_calls?.[0].function.arguments).toBe('{"city": "Oslo"}');
  });

  it('has strftime_now with Python formats', () => {
    const chat = renderer({
      default: '{{ strftime_now("%d %b %Y") }}|{{ strftime_now("%A %B %-d, %H:%M:%S %j %%") }}',
    });
    expect(chat.render(user)).toBe('26 Jul 2024|Friday July 26, 09:05:07 208 %');
  });

  it('raises the template message with raise_exception', () => {
    const chat = renderer({ default: "{{ raise_exception('Roles must alternate') }}" });
    expect(() => chat.render(user)).toThrow(
      expect.objectContaining({ code: 'invalid_argument', message: 'Roles must alternate' }),
    );
  });

  it('picks named templates as transformers does', () => {
    const chat = renderer({ default: 'D', tool_use: 'T', rag: 'R' });
    expect(chat.render(user)).toBe('D');
    expect(chat.render(user, { tools: [] })).toBe('T');
    expect(chat.render(user, { templateName: 'rag' })).toBe('R');
    expect(() => chat.render(user, { templateName: 'nope' })).toThrow(
      expect.objectContaining({ code: 'not_found' }),
    );
    expect(() => renderer({}).render(user)).toThrow(expect.objectContaining({ code: 'not_found' }));
  });

  it('reports templates that do not parse or fail', () => {
    expect(() => renderer({ default: '{% for %}' }).render(user)).toThrow(
      expect.objectContaining({ code: 'invalid_checkpoint' }),
    );
    expect(() => renderer({ default: '{{ messages[0].content.nope() }}' }).render(user)).toThrow(
      expect.objectContaining({ code: 'invalid_argument' }),
    );
  });

  describe("continueFinalMessage (transformers' continue_final_message)", () => {
    const chatml =
      '{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}' +
      '{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}';
    const trimming = '{% for m in messages %}[{{ m.role }}] {{ m.content | trim }}</s>{% endfor %}';
    const prefill = (content: string) => [
      { role: 'user', content: 'Say hi' },
      { role: 'assistant', content },
    ];

    it('cuts the end of turn after the final message, keeping spacing the template kept', () => {
      const chat = renderer({ default: chatml });
      expect(chat.render(prefill('Hi there, '), { continueFinalMessage: true })).toBe(
        '<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\nHi there, ',
      );
      expect(chat.render(prefill('hi'), { continueFinalMessage: true, addGenerationPrompt: false })).toBe(
        '<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\nhi',
      );
      // The last text part is the one continued.
      const parts = [
        { role: 'user', content: 'Say hi' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Hello' },
            { type: 'text', text: 'wor' },
          ],
        },
      ];
      expect(chat.render(parts, { continueFinalMessage: true })).toBe(
        '<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\nHello\nwor',
      );
    });

    it('cuts after the trimmed message when the template trimmed its spacing', () => {
      const chat = renderer({ default: trimming });
      expect(chat.render(prefill(' Hi there, '), { continueFinalMessage: true })).toBe(
        '[user] Say hi</s>[assistant] Hi there,',
      );
    });

    it('refuses a generation prompt, a final message without text, and a template that drops it', () => {
      const chat = renderer({ default: chatml });
      expect(() =>
        chat.render(prefill('Hi'), { continueFinalMessage: true, addGenerationPrompt: true }),
      ).toThrow(expect.objectContaining({ code: 'invalid_argument' }));
      expect(() => chat.render(prefill('  '), { continueFinalMessage: true })).toThrow(
        expect.objectContaining({ code: 'invalid_argument' }),
      );
      const assistantBlind = renderer({
        default: "{% for m in messages %}{% if m.role == 'user' %}{{ m.content }}{% endif %}{% endfor %}",
      });
      expect(() => assistantBlind.render(prefill('Hi'), { continueFinalMessage: true })).toThrow(
        expect.objectContaining({
          code: 'invalid_argument',
          message: expect.stringContaining('final message'),
        }),
      );
    });
  });
});
