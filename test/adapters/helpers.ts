import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';

const ROOT = resolve(import.meta.dirname, '../..');

/** A spawned `gamewire` process with its output collected so far. */
export interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

/** Run the CLI from source (tsx), so adapter tests do not depend on a fresh `npm run build`. */
export function gamewire(...args: string[]): Run {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/gamewire.ts', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  return { child, stdout: () => out, stderr: () => err, exit };
}

/** Poll `pred` every 10 ms of real time; false if it is still false after `ms`. */
export async function waitFor(pred: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (!pred()) {
    if (performance.now() > end) return false;
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

/** Poll `pred` every 5 ms of real time until it holds; throws, naming `what`, after `ms`. */
export async function until(pred: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!pred()) {
    if (performance.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Resolve with the arguments of the next `name` event of `em`; reject, naming it, after `ms`. */
export function nextEvent<A extends unknown[] = unknown[]>(
  em: { once(name: string, fn: (...args: A) => void): unknown; off(name: string, fn: (...args: A) => void): unknown },
  name: string,
  ms = 10_000,
): Promise<A> {
  return new Promise<A>((resolve, reject) => {
    const onEvent = (...args: A): void => {
      clearTimeout(t);
      resolve(args);
    };
    const t = setTimeout(() => {
      em.off(name, onEvent);
      reject(new Error(`timed out after ${ms} ms waiting for the '${name}' event`));
    }, ms);
    em.once(name, onEvent);
  });
}

/** The first match of `re` on the run's stderr (e.g. the bound port); throws after `ms`. */
export async function waitForStderr(run: Run, re: RegExp, ms = 15_000): Promise<RegExpMatchArray> {
  let m: RegExpExecArray | null = null;
  if (!(await waitFor(() => (m = re.exec(run.stderr())) !== null, ms))) {
    throw new Error(`timed out waiting for ${re} in: ${run.stderr()}`);
  }
  return m!;
}
