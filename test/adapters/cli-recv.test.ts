import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ProgressBar } from '../../src/cli/report.js';
import { receiveOne, runRecv, sendOne, TransferError } from '../../src/cli/transfer.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { until } from './helpers.js';

// `recv`'s rule, with real loopback sockets in one process: a sender is never told "delivered"
// for a block the receiver could not store, and a receiver stopped by Ctrl-C tells its sender.

const dir = mkdtempSync(join(tmpdir(), 'gamewire-cli-recv-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A progress bar that draws nothing and remembers the bytes it was last told. */
class SeenBar extends ProgressBar {
  bytes = 0;
  constructor() {
    super('recv', false);
  }
  override update(done: number, total: number): void {
    this.bytes = done;
    super.update(done, total);
  }
}

/** A receiver on a free loopback port; resolves its port once bound. */
function receiver(o: Partial<Parameters<typeof receiveOne>[0]>): { port: Promise<number>; done: Promise<unknown> } {
  let bound!: (port: number) => void;
  const port = new Promise<number>((r) => (bound = r));
  const done = receiveOne({ port: 0, host: '127.0.0.1', idleTimeoutMs: 10_000, lingerQuietMs: 200, onListening: (a) => bound(a.port), ...o }).then(
    (r) => r,
    (err: unknown) => err,
  );
  return { port, done };
}

describe('gamewire recv: no "delivered" for a block that was not stored', () => {
  it('a write that fails after the block arrived refuses the block: the sender hears a refusal, never delivered', async () => {
    const data = new NonCryptoRng(5).fill(new Uint8Array(200_000));
    let stored = 0;
    const rx = receiver({
      onBlock: () => {
        stored++;
        throw new TransferError('cannot write /sys/x.bin: permission denied');
      },
    });
    const sent = await sendOne(data, { to: { host: '127.0.0.1', port: await rx.port }, port: 0, adaptive: true, burst: false, idleTimeoutMs: 10_000 }).then(
      (r) => r,
      (err: unknown) => err,
    );
    expect(stored).toBe(1);
    expect(sent).toBeInstanceOf(TransferError);
    expect((sent as TransferError).message).toBe('the receiver refused the block: it stopped, or could not store it');
    expect((sent as TransferError).exitCode).toBe(1);
    const got = await rx.done;
    expect(got).toBeInstanceOf(TransferError);
    expect((got as TransferError).message).toBe('cannot write /sys/x.bin: permission denied');
  });

  it('Ctrl-C on recv mid-block refuses it: the sender stops at once (exit 1), recv exits 130', async () => {
    const data = new NonCryptoRng(6).fill(new Uint8Array(1 << 20));
    const ac = new AbortController();
    const seen = new SeenBar();
    const rx = receiver({ signal: ac.signal, progress: seen });
    // 1 MiB at 1 Mbit/s takes ~8 s; the sender's own give-up (3 s of silence) would say "went silent".
    const sending = sendOne(data, {
      to: { host: '127.0.0.1', port: await rx.port }, port: 0, adaptive: false, rate: 125_000, burst: false, idleTimeoutMs: 3000,
    }).then((r) => r, (err: unknown) => err);
    await until(() => seen.bytes > 20_000, 'the first slices to arrive');
    ac.abort();
    const got = await rx.done;
    expect(got).toBeInstanceOf(TransferError);
    expect((got as TransferError).exitCode).toBe(130);
    const sent = await sending;
    expect(sent).toBeInstanceOf(TransferError);
    expect((sent as TransferError).message).toBe('the receiver refused the block: it stopped, or could not store it');
  });

  // A device whose every write fails (ENOSPC): recv can open it, and learns only when writing.
  it.runIf(existsSync('/dev/full'))('recv --out /dev/full: the write fails after the block arrived, and the sender is refused, not acked', async () => {
    let port!: (p: number) => void;
    const bound = new Promise<number>((r) => (port = r));
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      const m = /listening on [\d.]+:(\d+)/.exec(chunk.toString());
      if (m !== null) port(Number(m[1]));
      return true;
    });
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      const recv = runRecv({ out: '/dev/full', port: 0, host: '127.0.0.1', idleTimeoutMs: 10_000, quiet: true });
      const sent = await sendOne(new NonCryptoRng(8).fill(new Uint8Array(100_000)), {
        to: { host: '127.0.0.1', port: await bound }, port: 0, adaptive: true, burst: false, idleTimeoutMs: 10_000,
      }).then((r) => r, (e: unknown) => e);
      expect(await recv).toBe(1);
      expect(sent).toBeInstanceOf(TransferError);
      expect((sent as TransferError).message).toBe('the receiver refused the block: it stopped, or could not store it');
      expect(err.mock.calls.map((c) => String(c[0])).join('')).toMatch(/^error: cannot write --out \/dev\/full: no space left on the device$/m);
    } finally {
      err.mockRestore();
      out.mockRestore();
    }
  });

  it('recv --out opens the file before listening, and leaves an existing file as it was when no block is stored', async () => {
    const out = join(dir, 'keep.bin');
    writeFileSync(out, 'precious');
    expect(await runRecv({ out, port: 0, host: '127.0.0.1', idleTimeoutMs: 1000, waitMs: 300, quiet: true })).toBe(1); // no sender within --wait
    expect(readFileSync(out, 'utf8')).toBe('precious');
  });
});
