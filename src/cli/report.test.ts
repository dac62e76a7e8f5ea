import { describe, expect, it } from 'vitest';
import { formatEta, ProgressBar, type BarStream } from './report.js';

function fakeTerminal(isTTY = true): BarStream & { out: string } {
  const t = { out: '', isTTY, columns: 200, write: (s: string) => (t.out += s) };
  return t;
}

describe('ProgressBar', () => {
  it('shows a measured rate and ETA while bytes move, and "eta --" once they stop for 2 s', () => {
    let now = 0;
    const term = fakeTerminal();
    const bar = new ProgressBar('send', true, term, () => now);
    for (now = 0; now < 2000; now += 100) bar.update(now * 1000, 10_000_000); // 1 MB/s
    bar.update(2_000_000, 10_000_000);
    expect(bar.line()).toMatch(/\| 1\.00 MB\/s \(8\.00 Mbit\/s\) \| eta 8s$/);
    for (; now <= 4000; now += 100) bar.update(2_000_000, 10_000_000);
    expect(bar.line()).toMatch(/\| 0\.00 MB\/s \(0\.00 Mbit\/s\) \| eta --$/);
    expect(term.out).not.toMatch(/NF|NaN|Infinity/);
  });

  it('hides the cursor while drawn, shows it on stop, and draws nothing after stop', () => {
    let now = 0;
    const term = fakeTerminal();
    const bar = new ProgressBar('recv', true, term, () => now);
    bar.update(0, 100);
    expect(term.out.startsWith('\x1b[?25l')).toBe(true);
    now += 500;
    bar.update(100, 100);
    bar.stop();
    expect(term.out.endsWith('\n\x1b[?25h')).toBe(true);
    const before = term.out;
    now += 500;
    bar.update(50, 100);
    bar.stop();
    expect(term.out).toBe(before);
  });

  it('prints a log line on its own line and redraws the bar below it', () => {
    let now = 0;
    const term = fakeTerminal();
    const bar = new ProgressBar('send', true, term, () => now);
    bar.update(10, 100);
    bar.log('warning: no ack progress for 4 s');
    const lines = term.out.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/\r\x1b\[Kwarning: no ack progress for 4 s$/);
    expect(lines[1]).toMatch(/^\r\x1b\[Ksend \[/);
  });

  it('never draws when disabled or not on a terminal, but still prints log lines', () => {
    for (const [enabled, tty] of [[false, true], [true, false]] as const) {
      const term = fakeTerminal(tty);
      const bar = new ProgressBar('send', enabled, term, () => 0);
      bar.update(10, 100);
      bar.log('note');
      bar.stop();
      expect(term.out).toBe('note\n');
    }
  });

  it('ends the bar line and shows the cursor when the process exits before stop() (a second Ctrl-C)', () => {
    const term = fakeTerminal();
    const before = new Set(process.listeners('exit'));
    const bar = new ProgressBar('send', true, term, () => 0);
    bar.update(10, 100);
    const hooks = process.listeners('exit').filter((l) => !before.has(l));
    expect(hooks).toHaveLength(1);
    process.off('exit', hooks[0]!);
    hooks[0]!.call(process, 130);
    // The shell's prompt then starts on a line of its own.
    expect(term.out.endsWith('\n\x1b[?25h')).toBe(true);
    expect(term.out.split('\n')).toHaveLength(2);
  });

  it('keeps the line shorter than the terminal, so \\r can redraw it', () => {
    const term = fakeTerminal();
    term.columns = 40;
    new ProgressBar('send', true, term, () => 0).update(1, 2);
    const drawn = term.out.split('\r\x1b[K')[1]!;
    expect(drawn.length).toBe(39);
  });
});

describe('formatEta', () => {
  it('formats seconds, minutes and hours, and "--" without an estimate', () => {
    expect(formatEta(1)).toBe('eta 1s');
    expect(formatEta(185_000)).toBe('eta 3m05s');
    expect(formatEta(2 * 3_600_000 + 61_000)).toBe('eta 2h01m');
    expect(formatEta(undefined)).toBe('eta --');
    expect(formatEta(Infinity)).toBe('eta --');
  });
});
