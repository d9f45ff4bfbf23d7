import { type ParseArgsConfig, parseArgs } from 'node:util';
import { FerrumError } from '@ferrum/types';

type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

/** Parsed flags (values are strings, booleans, or arrays of strings for `multiple`) and positionals. */
export interface ParsedOptions {
  readonly values: Readonly<Record<string, string | boolean | string[] | undefined>>;
  readonly positionals: readonly string[];
}

/**
 * `util.parseArgs` in strict mode, with its errors turned into one-line usage errors
 * (FerrumError `invalid_argument`) that name the command.
 */
export function parseOptions(command: string, args: readonly string[], options: OptionSpecs): ParsedOptions {
  try {
    const { values, positionals } = parseArgs({
      args: [...args],
      options,
      allowPositionals: true,
      strict: true,
    });
    return { values: values as ParsedOptions['values'], positionals };
  } catch (error) {
    // parseArgs explains over several lines; one line suits a terminal. Its hint about positionals that
    // start with a dash only confuses a mistyped flag.
    const message = (error as Error).message
      .split('\n')
      .join(' ')
      .replace(/\. To specify a positional argument.*$/, '');
    throw new FerrumError('invalid_argument', `${command}: ${message} (see \`ferrum ${command} --help\`)`);
  }
}

/** A string flag, or undefined. */
export function stringOption(parsed: ParsedOptions, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A number flag checked against `[min, max]` (integers only when `integer`), or undefined when absent. */
export function numberOption(
  parsed: ParsedOptions,
  name: string,
  range: { min?: number; max?: number; integer?: boolean } = {},
): number | undefined {
  const text = stringOption(parsed, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  const { min = Number.NEGATIVE_INFINITY, max = Number.POSITIVE_INFINITY, integer = false } = range;
  if (text.trim() === '' || !Number.isFinite(value) || (integer && !Number.isInteger(value))) {
    throw new FerrumError(
      'invalid_argument',
      `--${name} must be ${integer ? 'an integer' : 'a number'}, got "${text}"`,
    );
  }
  if (value < min || value > max) {
    const bounds = max === Number.POSITIVE_INFINITY ? `at least ${min}` : `between ${min} and ${max}`;
    throw new FerrumError('invalid_argument', `--${name} must be ${bounds}, got ${value}`);
  }
  return value;
}

/** A flag that must be one of `choices`, or undefined. */
export function choiceOption<T extends string>(
  parsed: ParsedOptions,
  name: string,
  choices: readonly T[],
): T | undefined {
  const value = stringOption(parsed, name);
  if (value === undefined || (choices as readonly string[]).includes(value)) return value as T | undefined;
  throw new FerrumError('invalid_argument', `--${name} must be one of ${choices.join(', ')}, got "${value}"`);
}
