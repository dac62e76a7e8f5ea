#!/usr/bin/env node
import { runCli } from './program.js';

// Exit explicitly: a finished transfer has closed its sockets, but a stray timer must not keep us alive.
runCli(process.argv).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`error: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
