import { UdpLinkProxy } from '../adapters/node/udp-proxy.js';
import type { LinkConfig } from '../sim/config.js';
import { preset } from '../sim/presets.js';
import { aborted, EXIT_INTERRUPTED, type HostPort, resolveHostPort, untilStopped, UsageError } from './units.js';

/** Parsed options of `gamewire proxy`. Times in ms, rate in bytes/s. */
export interface ProxyCommandOptions {
  listen: number;
  host: string;
  to: HostPort;
  preset?: string;
  delay?: number;
  jitter?: number;
  loss?: number;
  rate?: number;
  queue?: number;
  seed: number;
  statsEvery?: number;
}

/** The link config a proxy command describes: a preset (if any) overridden by explicit flags. */
export function proxyLinkConfig(o: ProxyCommandOptions): Partial<LinkConfig> {
  let base: Partial<LinkConfig> = {};
  if (o.preset !== undefined) {
    try {
      base = { ...preset(o.preset) };
    } catch (err) {
      throw new UsageError(`--preset: ${(err as Error).message.replace(/^invalid-config: /, '')}`);
    }
  }
  const cfg: Partial<LinkConfig> = { ...base };
  if (o.delay !== undefined) cfg.latencyMs = o.delay;
  if (o.jitter !== undefined) cfg.jitterMs = o.jitter;
  if (o.loss !== undefined) cfg.loss = o.loss;
  if (o.rate !== undefined) {
    cfg.rateBitsPerSec = o.rate * 8;
    if (o.queue === undefined && cfg.queueDatagrams === undefined && cfg.queueBytes === undefined) cfg.queueDatagrams = 1000;
  }
  if (o.queue !== undefined) {
    if (cfg.rateBitsPerSec === undefined) throw new UsageError('--queue needs --rate (without a rate nothing queues)');
    cfg.queueDatagrams = o.queue;
    delete cfg.queueBytes;
  }
  return cfg;
}

/**
 * Run `gamewire proxy` until SIGINT/SIGTERM (then resolves to 130): resolves `--to` first (a name
 * that does not resolve rejects), prints the bound port, then (with `statsEvery` > 0) a counters
 * line periodically, and a final counters line on exit.
 */
export async function runProxy(o: ProxyCommandOptions): Promise<number> {
  const link = proxyLinkConfig(o);
  const target = await resolveHostPort(o.to, '--to');
  return untilStopped((signal) => proxyUntil(o, link, target, signal));
}

async function proxyUntil(o: ProxyCommandOptions, link: Partial<LinkConfig>, target: HostPort, signal: AbortSignal): Promise<number> {
  const proxy = await UdpLinkProxy.open({
    listenPort: o.listen,
    listenHost: o.host,
    target,
    toServer: link,
    seed: o.seed,
  });
  const named = target.host === o.to.host ? '' : ` (${target.host})`;
  process.stderr.write(
    `proxy listening on ${proxy.local.host}:${proxy.local.port} -> ${o.to.host}:${o.to.port}${named} ` +
      `(each way: ${describeLink(link)}; seed ${o.seed})\n`,
  );
  const line = (): string => {
    const c = proxy.counters();
    return (
      `c->s: ${c.toServer.sent} in, ${c.toServer.delivered} out, ${c.toServer.droppedLoss} lost, ${c.toServer.droppedQueue} queue-dropped | ` +
      `s->c: ${c.toClient.sent} in, ${c.toClient.delivered} out, ${c.toClient.droppedLoss} lost, ${c.toClient.droppedQueue} queue-dropped`
    );
  };
  const timer = o.statsEvery !== undefined && o.statsEvery > 0 ? setInterval(() => process.stderr.write(line() + '\n'), o.statsEvery) : undefined;
  await aborted(signal);
  if (timer !== undefined) clearInterval(timer);
  process.stdout.write(line() + '\n');
  await proxy.close();
  return EXIT_INTERRUPTED;
}

/** A short human description of a link config, e.g. `50 ms ±10 ms, 10% loss, 10 Mbit/s`. */
export function describeLink(c: Partial<LinkConfig>): string {
  const parts: string[] = [];
  parts.push(`${c.latencyMs ?? 0} ms`);
  if (c.jitterMs !== undefined && c.jitterMs > 0) parts[0] += ` +0..${c.jitterMs} ms jitter`;
  if (c.loss !== undefined && c.loss > 0) parts.push(`${+(c.loss * 100).toFixed(3)}% loss`);
  if (c.gilbertElliott !== undefined) parts.push('bursty loss');
  if (c.rateBitsPerSec !== undefined) parts.push(`${+(c.rateBitsPerSec / 1e6).toFixed(3)} Mbit/s`);
  if (c.queueDatagrams !== undefined) parts.push(`queue ${c.queueDatagrams} datagrams`);
  if (c.queueBytes !== undefined) parts.push(`queue ${c.queueBytes} bytes`);
  return parts.join(', ');
}
