import { createRequire } from 'node:module';

/** The node-kcp 1.0.13 binding object (a NAN wrapper around the bundled ikcp.c). */
export interface NodeKcp {
  output(fn: (data: Buffer, size: number, context?: unknown) => void): void;
  send(data: Buffer): number | undefined;
  input(data: Buffer): number | undefined;
  recv(): Buffer | undefined;
  update(now: number): void;
  /** Delta in ms until the next update is due (ikcp_check(now) - now), not an absolute time. */
  check(now: number): number;
  flush(): void;
  peeksize(): number;
  setmtu(mtu: number): number;
  wndsize(snd: number, rcv: number): number;
  waitsnd(): number;
  nodelay(nodelay: number, interval: number, resend: number, nc: number): number;
  stream(on: number): number;
  /** Frees the C object; any later call on it aborts the process. */
  release(): void;
}

type NodeKcpCtor = new (conv: number, context?: object) => NodeKcp;

let ctor: NodeKcpCtor | undefined;

/**
 * The node-kcp constructor. Loaded once per process: the addon is not context-aware, and its
 * package `main` is broken (it exports nothing), so `index.js` is required directly.
 */
export function nodeKcp(): NodeKcpCtor {
  if (ctor === undefined) {
    const req = createRequire(import.meta.url);
    ctor = (req('node-kcp/index.js') as { KCP: NodeKcpCtor }).KCP;
  }
  return ctor;
}
