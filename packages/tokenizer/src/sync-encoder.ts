import { createRequire } from 'node:module';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { FerrumError } from '@ferrum/types';

/** Where the worker gets its `tokenizer.json`: the file as is, or text this package rewrote. */
export type SyncEncoderSource = { readonly file: string } | { readonly json: string };

/** One answer of the worker. */
type EncodeReply = { readonly ids: Int32Array } | { readonly error: string };

/** Longest a single encode may block before we assume the worker is gone. */
const MAX_WAIT_MS = 300_000;

/*
 * The `tokenizers` binding only encodes asynchronously (on the libuv pool), but `Tokenizer.encode` is
 * synchronous. A worker thread owns a second native tokenizer; the caller posts the text, sleeps on an
 * Atomics flag, and takes the reply with `receiveMessageOnPort`. Every path of the worker answers, so the
 * caller never waits on a worker that failed to start.
 */
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { port, flag, modulePath, source } = workerData;
let tokenizer, loadError;
try {
  const { Tokenizer } = require(modulePath);
  tokenizer = source.file ? Tokenizer.fromFile(source.file) : Tokenizer.fromString(source.json);
} catch (error) {
  loadError = String(error);
}
port.on('message', async ({ text, addSpecialTokens }) => {
  let reply;
  try {
    if (loadError) throw new Error(loadError);
    const encoding = await tokenizer.encode(text, null, { addSpecialTokens });
    reply = { ids: Int32Array.from(encoding.getIds()) };
  } catch (error) {
    reply = { error: String(error && error.message ? error.message : error) };
  }
  port.postMessage(reply, reply.ids ? [reply.ids.buffer] : []);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
`;

/** Synchronous encode over a worker thread; created lazily by the tokenizer, closed by `dispose`. */
export class SyncEncoder {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private closed = false;

  constructor(source: SyncEncoderSource) {
    const { port1, port2 } = new MessageChannel();
    const modulePath = createRequire(import.meta.url).resolve('tokenizers');
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { port: port2, flag: this.flag, modulePath, source },
      transferList: [port2],
    });
    // The worker must not keep the process alive; it only ever runs while the caller waits on it.
    this.worker.unref();
    this.port = port1;
    this.port.unref();
  }

  /** False once disposed, or after the worker stopped answering. */
  get usable(): boolean {
    return !this.closed;
  }

  /** Encode `text`; blocks the calling thread until the worker answers. */
  encode(text: string, addSpecialTokens: boolean): number[] {
    if (this.closed) throw new FerrumError('internal', 'the tokenizer worker is closed');
    Atomics.store(this.flag, 0, 0);
    this.port.postMessage({ text, addSpecialTokens });
    if (Atomics.wait(this.flag, 0, 0, MAX_WAIT_MS) === 'timed-out') {
      // A late answer would pair with the next request: retire this worker.
      void this.dispose();
      throw new FerrumError('internal', `the tokenizer worker did not answer within ${MAX_WAIT_MS} ms`);
    }
    const reply = receiveMessageOnPort(this.port)?.message as EncodeReply | undefined;
    if (reply === undefined) throw new FerrumError('internal', 'the tokenizer worker answered nothing');
    if ('error' in reply) throw new FerrumError('internal', `tokenization failed: ${reply.error}`);
    return Array.from(reply.ids);
  }

  /** Stop the worker. */
  async dispose(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.port.close();
    await this.worker.terminate();
  }
}
