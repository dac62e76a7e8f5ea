import { Command, CommanderError } from 'commander';
import { registerEcho } from './echo.js';
import { registerKcpEcho } from './kcp-echo.js';
import { registerNetcode } from './netcode.js';
import { runProxy, type ProxyCommandOptions } from './proxy.js';
import { runRecv, runSend } from './transfer.js';
import {
  arg,
  durationOption,
  EXIT_FAILURE,
  EXIT_USAGE,
  parseHostPort,
  parsePort,
  parseProbability,
  parseRate,
  parseSize,
  parseUint,
  usageHint,
  UsageError,
} from './units.js';

/** Build the `gamewire` command tree. Actions resolve to an exit code; errors are thrown, never exit. */
export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('gamewire')
    .description(
      'Move a file over UDP with gamewire\'s chunk protocol (recv, send), echo messages over gamewire connections (echo) ' +
        'or raw KCP (kcp-echo), make netcode 1.02 connect tokens and run a secure echo server and client (token, serve, connect), ' +
        'or condition a UDP path with the network simulator (proxy).',
    )
    .version('0.1.0')
    .exitOverride()
    .showHelpAfterError(usageHint());

  program
    .command('recv')
    .description('receive one block on a UDP port and write it to a file, then exit 0')
    .requiredOption('--out <file>', 'file to write the received block to')
    .option('--port <port>', 'UDP port to listen on (0 = any free port; the bound port is printed)', arg((v) => parsePort(v, '--port')), 0)
    .option('--host <addr>', 'local IPv4 address to bind', '0.0.0.0')
    .option('--max-bytes <size>', 'largest block accepted (default 64MiB)', arg((v) => parseSize(v, '--max-bytes')))
    .addOption(durationOption('--timeout <duration>', 'give up after this long without a datagram once a sender started', 's', { ms: 30_000, shown: '30s' }))
    .addOption(durationOption('--wait <duration>', 'give up if no sender shows up within this long (default: wait forever)', 's'))
    .option('--quiet', 'no progress bar')
    .action(async (o: RecvFlags) => {
      setExit(
        await runRecv({
          out: o.out,
          port: o.port,
          host: o.host,
          maxBytes: o.maxBytes,
          idleTimeoutMs: o.timeout,
          waitMs: o.wait,
          quiet: o.quiet === true,
        }),
      );
    });

  program
    .command('send')
    .description('send FILE as one block to a `gamewire recv` and exit 0 once every slice is acked')
    // FILE and --to are checked in the action, so one message names every one missing.
    .usage('FILE --to HOST:PORT [options]')
    .argument('[file]', 'file to send (required)')
    .option('--to <host:port>', 'address of the receiver, or of a proxy in front of it (required)', arg((v) => parseHostPort(v, '--to')))
    .option('--rate <rate>', 'highest rate the adaptive controller may use (default 1gbit); with --no-adaptive, the fixed pacing rate (default 2mbit). Wire rate, e.g. 10mbit, 500kbit, 2MB/s', arg((v) => parseRate(v, '--rate')))
    .option('--no-adaptive', 'keep --rate fixed instead of adapting to loss and delay')
    .option('--burst', 'send every slice once at the start (initial burst), then pace')
    .option('--port <port>', 'local UDP port to send from (0 = any)', arg((v) => parsePort(v, '--port')), 0)
    .addOption(durationOption('--timeout <duration>', 'give up after this long without hearing from the receiver', 's', { ms: 30_000, shown: '30s' }))
    .option('--quiet', 'no progress bar')
    .action(async (file: string | undefined, o: SendFlags) => {
      const missing = [...(file === undefined ? ['FILE'] : []), ...(o.to === undefined ? ['--to HOST:PORT'] : [])];
      if (file === undefined || o.to === undefined) throw new UsageError(`missing ${missing.join(' and ')} (usage: gamewire send FILE --to HOST:PORT [options])`);
      setExit(
        await runSend({
          file,
          to: o.to,
          rate: o.rate,
          adaptive: o.adaptive,
          burst: o.burst === true,
          port: o.port,
          idleTimeoutMs: o.timeout,
          quiet: o.quiet === true,
        }),
      );
    });

  program
    .command('proxy')
    .description('forward UDP between clients and HOST:PORT through a seeded simulated link (one per direction); runs until Ctrl-C')
    .requiredOption('--listen <port>', 'UDP port clients send to (0 = any free port; the bound port is printed)', arg((v) => parsePort(v, '--listen')))
    .requiredOption('--to <host:port>', 'where to forward client datagrams', arg((v) => parseHostPort(v, '--to')))
    .option('--host <addr>', 'local IPv4 address to listen on', '0.0.0.0')
    .option('--preset <name>', 'start from a sim preset: perfect, lan, wifi, mobile, satellite, congested, lossy, kcp-test')
    .addOption(durationOption('--delay <duration>', 'one-way delay added in EACH direction (the RTT grows by twice this)', 'ms'))
    .addOption(durationOption('--jitter <duration>', 'extra random delay 0..jitter per datagram', 'ms'))
    .option('--loss <p>', 'random loss per datagram in each direction: 0.1 or 10%', arg((v) => parseProbability(v, '--loss')))
    .option('--rate <rate>', 'bottleneck rate in each direction: 10mbit, 2MB/s', arg((v) => parseRate(v, '--rate')))
    .option('--queue <datagrams>', 'bottleneck queue limit in datagrams (needs --rate; default 1000)', arg((v) => parseUint(v, '--queue')))
    .option('--seed <n>', 'seed of the links (same seed, same loss pattern)', arg((v) => parseUint(v, '--seed')), 1)
    .addOption(durationOption('--stats-every <duration>', 'print counters to stderr this often, at least 100ms; 0 = off', 's', { ms: 0, shown: 'off' }))
    .action(async (o: ProxyCommandOptions) => {
      if (o.queue !== undefined && o.queue < 1) throw new UsageError('--queue must be at least 1');
      if (o.statsEvery !== undefined && o.statsEvery > 0 && o.statsEvery < 100) {
        throw new UsageError('--stats-every must be at least 100ms (or 0 = off)');
      }
      setExit(await runProxy(o));
    });

  registerEcho(program, setExit);
  registerKcpEcho(program, setExit);
  registerNetcode(program, setExit);
  for (const c of program.commands) c.showHelpAfterError(usageHint(c.name()));

  return program;
}

interface RecvFlags {
  out: string;
  port: number;
  host: string;
  maxBytes?: number;
  timeout: number;
  wait?: number;
  quiet?: boolean;
}

interface SendFlags {
  to?: { host: string; port: number };
  rate?: number;
  adaptive: boolean;
  burst?: boolean;
  port: number;
  timeout: number;
  quiet?: boolean;
}


/**
 * Parse `argv` (as `process.argv`) and run the command. Resolves to the process exit code: 0 on
 * success or help, 1 when the run fails, 2 for bad arguments, 130 when interrupted. Every usage
 * error prints the same shape on stderr: `error: <what>` then {@link usageHint}.
 */
export async function runCli(argv: readonly string[]): Promise<number> {
  let code = 0;
  const program = buildProgram((c) => {
    code = c;
  });
  let active: string | undefined;
  program.hook('preAction', (_program, command) => {
    active = command.name();
  });
  if (argv.length <= 2) {
    process.stderr.write(`error: missing command (one of: ${program.commands.map((c) => c.name()).join(', ')})\n${usageHint()}\n`);
    return EXIT_USAGE;
  }
  try {
    await program.parseAsync([...argv]);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander already printed the message and the hint.
      return err.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n${usageHint(active)}\n`);
      return EXIT_USAGE;
    }
    process.stderr.write(`error: ${(err as Error).message ?? String(err)}\n`);
    return EXIT_FAILURE;
  }
}
