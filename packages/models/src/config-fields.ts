import { FerrumError } from '@ferrum/types';

/**
 * Typed readers over one raw JSON object (a `config.json`, or a nested `rope_scaling`). Every failure
 * names the file it came from, so a user with many model folders knows which one to fix.
 */
export class ConfigFields {
  constructor(
    private readonly raw: Readonly<Record<string, unknown>>,
    /** The file (or description) the object came from, quoted in error messages. */
    readonly source: string,
  ) {}

  /** The key is present, even if null. */
  declares(key: string): boolean {
    return this.raw[key] !== undefined;
  }

  /** The key is present and not null. */
  has(key: string): boolean {
    return this.raw[key] !== undefined && this.raw[key] !== null;
  }

  value(key: string): unknown {
    return this.raw[key];
  }

  /** A positive integer that must be present. */
  requiredInt(key: string): number {
    if (!this.has(key)) {
      throw new FerrumError('invalid_checkpoint', `${this.source}: missing required key "${key}"`, {
        details: { file: this.source, key },
      });
    }
    return this.int(key, 0);
  }

  /** A positive integer, or `fallback` when the key is absent or null. */
  int(key: string, fallback: number): number {
    if (!this.has(key)) return fallback;
    const value = this.raw[key];
    if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
      throw this.invalid(key, 'a positive integer');
    }
    return value;
  }

  /** A finite positive number, or `fallback` when absent or null. */
  positiveNumber(key: string, fallback: number): number {
    if (!this.has(key)) return fallback;
    const value = this.raw[key];
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
      throw this.invalid(key, 'a positive number');
    }
    return value;
  }

  bool(key: string, fallback: boolean): boolean {
    if (!this.has(key)) return fallback;
    const value = this.raw[key];
    if (typeof value !== 'boolean') throw this.invalid(key, 'true or false');
    return value;
  }

  /** A string, or undefined when absent or null. */
  string(key: string): string | undefined {
    if (!this.has(key)) return undefined;
    const value = this.raw[key];
    if (typeof value !== 'string') throw this.invalid(key, 'a string');
    return value;
  }

  /** A token id (non-negative integer), or null when absent. */
  tokenId(key: string): number | null {
    if (!this.has(key)) return null;
    const value = this.raw[key];
    if (!isTokenId(value)) throw this.invalid(key, 'a token id');
    return value;
  }

  /** Token ids given as one number or a list (HF allows both for `eos_token_id`); [] when absent. */
  tokenIds(key: string): number[] {
    if (!this.has(key)) return [];
    const value = this.raw[key];
    const list = Array.isArray(value) ? value : [value];
    if (!list.every(isTokenId)) throw this.invalid(key, 'a token id or a list of token ids');
    return list as number[];
  }

  /** A nested object, or undefined when absent or null. */
  object(key: string): ConfigFields | undefined {
    if (!this.has(key)) return undefined;
    const value = this.raw[key];
    if (typeof value !== 'object' || Array.isArray(value)) throw this.invalid(key, 'an object');
    return new ConfigFields(value as Record<string, unknown>, `${this.source} (${key})`);
  }

  private invalid(key: string, expected: string): FerrumError {
    return new FerrumError(
      'invalid_checkpoint',
      `${this.source}: "${key}" must be ${expected}, got ${JSON.stringify(this.raw[key])}`,
      { details: { file: this.source, key } },
    );
  }
}

function isTokenId(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}
