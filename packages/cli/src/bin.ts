#!/usr/bin/env node
import { runCli } from './run-cli.js';

// Ctrl-C or SIGTERM asks the running command to stop (a server drains, a generation ends); a second
// Ctrl-C exits at once.
const controller = new AbortController();
const stop = () => {
  if (controller.signal.aborted) process.exit(130);
  controller.abort();
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  signal: controller.signal,
});
process.exitCode = code;
// Open handles (a native thread pool, keep-alive sockets) must not keep a finished command alive.
setImmediate(() => process.exit(code));
