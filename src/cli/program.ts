import { Command, CommanderError } from 'commander';
import { registerKcpEcho } from './kcp-echo.js';
import { runProxy, type ProxyCommandOptions } from './proxy.js';
import { runRecv, runSend } from './transfer.js';
import {
  arg,
  parseDuration,
  parseHostPort,
  parsePort,
  parseProbability,
  parseRate,
  parseSize,
  parseUint,
  UsageError,
} from './units.js';

/** Exit code for bad arguments (commander errors and unreadable values). */
export const EXIT_USAGE = 2;
/** Exit code for a run that started but failed (timeout, I/O error, corrupt data). */
export const EXIT_FAILURE = 1;


/** Build the `gamewire` command tree. Actions resolve to an exit code; errors are thrown, never exit. */
export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('gamewire')
    .description('Move a file over UDP with gamewire\'s chunk protocol, or condition a UDP path.')
    .version('0.1.0')
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)');

  program
    .command('recv')
    .description('receive one block on a UDP port and write it to a file, then exit 0')
    .requiredOption('--out <file>', 'file to write the received block to')
    .option('--port <port>', 'UDP port to listen on (0 = any free port; the bound port is printed)', arg((v) => parsePort(v, '--port')), 0)
    .option('--host <addr>', 'local IPv4 address to bind', '0.0.0.0')
    .option('--max-bytes <size>', 'largest block accepted (default 64MiB)', arg((v) => parseSize(v, '--max-bytes')))
    .option('--timeout <duration>', 'give up after this long without a datagram once started (e.g. 30s; bare number = seconds)', arg((v) => parseDuration(v, '--timeout', 's')), 30_000)
    .option('--wait <duration>', 'give up if no sender shows up within this long (default: wait forever)', arg((v) => parseDuration(v, '--wait', 's')))
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
    .argument('<file>', 'file to send')
    .requiredOption('--to <host:port>', 'address of the receiver (or of a proxy in front of it)', arg((v) => parseHostPort(v, '--to')))
    .option('--rate <rate>', 'sending rate (initial rate when adaptive): 10mbit, 500kbit, 1.5mbit, 2MB/s', arg((v) => parseRate(v, '--rate')))
    .option('--no-adaptive', 'keep --rate fixed instead of adapting to loss and delay')
    .option('--burst', 'send every slice once at the start (initial burst), then pace')
    .option('--port <port>', 'local UDP port to send from (0 = any)', arg((v) => parsePort(v, '--port')), 0)
    .option('--timeout <duration>', 'give up after this long without hearing from the receiver (e.g. 30s; bare number = seconds)', arg((v) => parseDuration(v, '--timeout', 's')), 30_000)
    .option('--quiet', 'no progress bar')
    .action(async (file: string, o: SendFlags) => {
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
    .option('--delay <duration>', 'one-way delay added in EACH direction (bare number = ms; RTT grows by twice this)', arg((v) => parseDuration(v, '--delay', 'ms')))
    .option('--jitter <duration>', 'extra random delay 0..jitter per datagram (bare number = ms)', arg((v) => parseDuration(v, '--jitter', 'ms')))
    .option('--loss <p>', 'random loss per datagram in each direction: 0.1 or 10%', arg((v) => parseProbability(v, '--loss')))
    .option('--rate <rate>', 'bottleneck rate in each direction: 10mbit, 2MB/s', arg((v) => parseRate(v, '--rate')))
    .option('--queue <datagrams>', 'bottleneck queue limit in datagrams (needs --rate; default 1000)', arg((v) => parseUint(v, '--queue')))
    .option('--seed <n>', 'seed of the links (same seed, same loss pattern)', arg((v) => parseUint(v, '--seed')), 1)
    .option('--stats-every <duration>', 'print counters to stderr this often (bare number = s)', arg((v) => parseDuration(v, '--stats-every', 's')))
    .action(async (o: ProxyCommandOptions) => {
      if (o.queue !== undefined && o.queue < 1) throw new UsageError('--queue must be at least 1');
      setExit(await runProxy(o));
    });

  registerKcpEcho(program, setExit);

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
  to: { host: string; port: number };
  rate?: number;
  adaptive: boolean;
  burst?: boolean;
  port: number;
  timeout: number;
  quiet?: boolean;
}


/**
 * Parse `argv` (as `process.argv`) and run the command. Resolves to the process exit code: 0 on
 * success or help, 2 for bad arguments, 1 when the run fails.
 */
export async function runCli(argv: readonly string[]): Promise<number> {
  let code = 0;
  const program = buildProgram((c) => {
    code = c;
  });
  try {
    await program.parseAsync([...argv]);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander already printed the message.
      return err.exitCode === 0 ? 0 : EXIT_USAGE;
    }
    if (err instanceof UsageError) {
      process.stderr.write(`error: ${err.message}\n`);
      return EXIT_USAGE;
    }
    process.stderr.write(`error: ${(err as Error).message ?? String(err)}\n`);
    return EXIT_FAILURE;
  }
}
