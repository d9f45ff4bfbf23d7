import { open } from 'node:fs/promises';
import path from 'node:path';
import { type DType, FerrumError } from '@ferrum/types';
import { dtypeBytes } from './dtype-bytes.js';
import type { TensorEntry } from './tensor-entry.js';

/** safetensors' dtype names Ferrum loads. */
const SAFETENSORS_DTYPES: Readonly<Record<string, DType>> = { BF16: 'bf16', F16: 'f16', F32: 'f32' };

/** The format caps headers at 100 MB; anything larger is a corrupt length prefix. */
const MAX_HEADER_BYTES = 100 * 1024 * 1024;

/**
 * Reads the header of one `.safetensors` file (8-byte little-endian length, then JSON) with two small
 * reads, never the tensor data, and returns its tensors with absolute byte ranges.
 *
 * @throws FerrumError `not_found` (unreadable file), `invalid_checkpoint` (corrupt header, ranges outside
 *   the file or not matching the shape), `unsupported_dtype` (a tensor not in BF16/F16/F32).
 */
export async function readSafetensorsHeader(file: string): Promise<TensorEntry[]> {
  const absolute = path.resolve(file);
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(absolute, 'r');
  } catch (error) {
    throw new FerrumError('not_found', `cannot open ${absolute}: ${(error as Error).message}`, {
      cause: error,
      details: { file: absolute },
    });
  }
  try {
    const fileBytes = (await handle.stat()).size;
    const prefix = Buffer.alloc(8);
    if (fileBytes < 8 || (await handle.read(prefix, 0, 8, 0)).bytesRead !== 8) {
      throw corrupt(absolute, `file is ${fileBytes} bytes, too short for a header`);
    }
    const headerBytes = Number(prefix.readBigUInt64LE(0));
    if (headerBytes > MAX_HEADER_BYTES || headerBytes > fileBytes - 8) {
      throw corrupt(absolute, `header length ${headerBytes} does not fit in a ${fileBytes}-byte file`);
    }
    const headerBuffer = Buffer.alloc(headerBytes);
    await handle.read(headerBuffer, 0, headerBytes, 8);
    const dataStart = 8 + headerBytes;
    return parseHeader(headerBuffer, absolute, dataStart, fileBytes - dataStart);
  } finally {
    await handle.close();
  }
}

function parseHeader(buffer: Buffer, file: string, dataStart: number, dataBytes: number): TensorEntry[] {
  let header: unknown;
  try {
    header = JSON.parse(buffer.toString('utf8'));
  } catch (error) {
    throw corrupt(file, `header is not JSON (${(error as Error).message})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) {
    throw corrupt(file, 'header is not a JSON object');
  }
  const entries: TensorEntry[] = [];
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    entries.push(parseEntry(name, info, file, dataStart, dataBytes));
  }
  return entries;
}

function parseEntry(
  name: string,
  info: unknown,
  file: string,
  dataStart: number,
  dataBytes: number,
): TensorEntry {
  const { dtype: rawDtype, shape, data_offsets: offsets } = (info ?? {}) as Record<string, unknown>;
  const dtype = typeof rawDtype === 'string' ? SAFETENSORS_DTYPES[rawDtype] : undefined;
  if (dtype === undefined) {
    throw new FerrumError(
      'unsupported_dtype',
      `${file}: tensor ${name} has dtype ${JSON.stringify(rawDtype)} (supported: BF16, F16, F32)`,
      { details: { file, tensor: name, dtype: rawDtype } },
    );
  }
  if (!Array.isArray(shape) || !shape.every(isIndex)) {
    throw corrupt(file, `tensor ${name} has an invalid shape ${JSON.stringify(shape)}`);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isIndex)) {
    throw corrupt(file, `tensor ${name} has invalid data_offsets ${JSON.stringify(offsets)}`);
  }
  const [begin, end] = offsets as [number, number];
  if (begin > end || end > dataBytes) {
    throw corrupt(
      file,
      `tensor ${name} data [${begin}, ${end}) lies outside the ${dataBytes}-byte data section`,
    );
  }
  const expectedBytes = shape.reduce((product: number, dim: number) => product * dim, 1) * dtypeBytes(dtype);
  if (end - begin !== expectedBytes) {
    throw corrupt(file, `tensor ${name} spans ${end - begin} bytes but its shape needs ${expectedBytes}`);
  }
  return { name, dtype, shape, file, byteOffset: dataStart + begin, byteLength: expectedBytes };
}

function isIndex(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function corrupt(file: string, reason: string): FerrumError {
  return new FerrumError('invalid_checkpoint', `${file}: corrupt safetensors header: ${reason}`, {
    details: { file },
  });
}
