/**
 * Plumbing for benchmarks over a real kernel path: two network namespaces joined by
 * ../shared/tools/linkem.py (A is 10.99.0.1, B is 10.99.0.2), processes started inside them, and a
 * cleanup that ends everything it started (also on Ctrl-C). Needs root.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

export const LINKEM = '/work/shared/tools/linkem.py';
export const ADDR_A = '10.99.0.1';
export const ADDR_B = '10.99.0.2';

export function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** IP bytes and packets sent so far from namespace `ns` (counters of /proc/net, read from inside it). */
export function ipOut(ns: string): { octets: number; packets: number } {
  const netstat = sh('ip', ['netns', 'exec', ns, 'cat', '/proc/net/netstat']).split('\n');
  const snmp = sh('ip', ['netns', 'exec', ns, 'cat', '/proc/net/snmp']).split('\n');
  return { octets: procField(netstat, 'IpExt:', 'OutOctets'), packets: procField(snmp, 'Ip:', 'OutRequests') };
}

/** Field `name` of the two-line `prefix` table of a /proc/net file's lines. */
export function procField(lines: string[], prefix: string, name: string): number {
  const rows = lines.filter((l) => l.startsWith(prefix));
  return Number(rows[1]!.split(/\s+/)[rows[0]!.split(/\s+/).indexOf(name)]);
}

/** The same counters for the namespace this process runs in. */
export function ipOutHere(): { octets: number; packets: number } {
  return {
    octets: procField(readFileSync('/proc/net/netstat', 'utf8').split('\n'), 'IpExt:', 'OutOctets'),
    packets: procField(readFileSync('/proc/net/snmp', 'utf8').split('\n'), 'Ip:', 'OutRequests'),
  };
}

/** Two namespaces joined by linkem.py, and what runs in them. */
export class LinkedNamespaces {
  private readonly children: ChildProcess[] = [];
  private readonly made: string[] = [];
  private linkem: ChildProcess | undefined;
  private readonly onSignal = (): void => {
    this.cleanup();
    process.exit(130);
  };

  private constructor(readonly a: string, readonly b: string) {}

  /**
   * Make namespaces `a` and `b` and join them with linkem.py `args` (e.g. `--delay-ms 50 --loss 0.1`)
   * for `seconds`; resolves once both TUN devices have their addresses. Rejects (after cleaning up)
   * when not root or linkem.py fails.
   */
  static async open(a: string, b: string, args: string[], seconds: number): Promise<LinkedNamespaces> {
    const l = new LinkedNamespaces(a, b);
    process.once('SIGINT', l.onSignal);
    process.once('SIGTERM', l.onSignal);
    try {
      if (process.getuid?.() !== 0) throw new Error('needs root (network namespaces)');
      for (const ns of [a, b]) {
        sh('ip', ['netns', 'add', ns]);
        l.made.push(ns);
      }
      const linkem = spawn('python3', [LINKEM, a, b, ...args, '--seconds', String(seconds)], { stdio: ['ignore', 'pipe', 'pipe'] });
      l.linkem = linkem;
      let err = '';
      linkem.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      for (let i = 0; ; i++) {
        await sleep(100);
        if (linkem.exitCode !== null) throw new Error(`linkem.py exited: ${err.trim()}`);
        if (sh('ip', ['-n', b, 'addr']).includes(ADDR_B) && sh('ip', ['-n', a, 'addr']).includes(ADDR_A)) break;
        if (i > 100) throw new Error('linkem.py did not set up the TUN devices in 10 s');
      }
      return l;
    } catch (e) {
      l.cleanup();
      throw e;
    }
  }

  /** Run `args` in namespace `ns`; resolves with stdout when it exits 0, rejects otherwise or after `timeoutMs`. */
  run(ns: string, args: string[], timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const p = spawn('ip', ['netns', 'exec', ns, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      this.children.push(p);
      let out = '';
      let err = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      p.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
      p.on('exit', (code) => {
        clearTimeout(t);
        if (code === 0) resolve(out);
        // Paths relative to the checkout: the message may end up in bench/README.md.
        else reject(new Error(`${args.join(' ')} exited ${code}: ${err.trim().split('\n').slice(-3).join(' / ')}`.replaceAll(`${process.cwd()}/`, '')));
      });
    });
  }

  /** Start `args` in namespace `ns` (ended by `cleanup`); `onLine` sees its stdout lines. */
  start(ns: string, args: string[], onLine?: (line: string) => void): ChildProcess {
    const p = spawn('ip', ['netns', 'exec', ns, ...args], { stdio: ['ignore', onLine === undefined ? 'ignore' : 'pipe', 'pipe'] });
    this.children.push(p);
    if (onLine !== undefined) {
      let buf = '';
      p.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
          onLine(buf.slice(0, i));
          buf = buf.slice(i + 1);
        }
      });
    }
    return p;
  }

  /** End everything started, linkem.py, every process left in the namespaces, and the namespaces. */
  cleanup(): void {
    process.removeListener('SIGINT', this.onSignal);
    process.removeListener('SIGTERM', this.onSignal);
    for (const p of this.children) if (p.exitCode === null && p.signalCode === null && p.pid !== undefined) p.kill('SIGKILL');
    if (this.linkem !== undefined && this.linkem.exitCode === null && this.linkem.signalCode === null) this.linkem.kill('SIGKILL');
    for (const ns of this.made) {
      try {
        for (const pid of sh('ip', ['netns', 'pids', ns]).split(/\s+/).filter((x) => x !== '')) process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone
      }
      try {
        sh('ip', ['netns', 'del', ns]);
      } catch {
        // already gone
      }
    }
    this.made.length = 0;
  }
}
