import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** One tensor of a synthetic file; its data is bytes `fill, fill+1, ...` (mod 256) so tests can find it. */
export interface SyntheticTensor {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly number[];
  readonly fill?: number;
}

const ELEMENT_BYTES: Readonly<Record<string, number>> = { F32: 4, F16: 2, BF16: 2, I64: 8, U8: 1 };

/**
 * Writes a safetensors file the way the format's spec describes it (independently of the package's
 * reader): u64 little-endian header length, JSON header padded with spaces, then the data back to back.
 */
export async function writeSafetensors(file: string, tensors: readonly SyntheticTensor[]): Promise<void> {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  const chunks: Buffer[] = [];
  let offset = 0;
  for (const tensor of tensors) {
    const numBytes = tensor.shape.reduce((a, b) => a * b, 1) * ELEMENT_BYTES[tensor.dtype]!;
    header[tensor.name] = {
      dtype: tensor.dtype,
      shape: tensor.shape,
      data_offsets: [offset, offset + numBytes],
    };
    chunks.push(Buffer.from(Array.from({ length: numBytes }, (_, i) => ((tensor.fill ?? 0) + i) % 256)));
    offset += numBytes;
  }
  await writeRawSafetensors(file, JSON.stringify(header), Buffer.concat(chunks));
}

/** Writes a file with the given header text (padded to 8 bytes) and data, for corrupt-header cases. */
export async function writeRawSafetensors(file: string, headerText: string, data: Buffer): Promise<void> {
  const padded = headerText.padEnd(Math.ceil(headerText.length / 8) * 8, ' ');
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(Buffer.byteLength(padded)));
  await writeFile(file, Buffer.concat([prefix, Buffer.from(padded), data]));
}

export function makeTempDir(): Promise<string> {
  return mkdtemp(path.join(tmpdir(), 'ferrum-models-'));
}
