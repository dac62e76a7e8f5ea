// The one connection lifecycle: its own rules on a minimal framing, then the three framings built on
// it (unsecured Connection, netcode ServerClient and Client): no deadline ever stands for "I have
// output" (the driver polls after every input and command: the waker), the DISCONNECT copies of each
// framing, and the wake reason of handleTimeout.
import { describe, expect, it } from 'vitest';
import type { Address, Endpoint } from '../core/endpoint.js';
import { NonCryptoRng } from '../core/rng.js';
import { Client } from '../netcode/client.js';
import { Server } from '../netcode/server.js';
import { generateConnectToken, NetcodePacketType } from '../netcode/wire.js';
import { ConnectionHost } from './host.js';
import { Lifecycle, Phase, Timer } from './lifecycle.js';
import { FrameKind } from './wire.js';

/** A framing that writes one-byte packets and records what the lifecycle hands it. */
class Probe extends Lifecycle<string> {
  fired: number[] = [];
  refused = 0;
  pending = 0;

  constructor(now: number) {
    super(3, 1000, now, Phase.Handshake);
  }

  get phaseNow(): number {
    return this.phase;
  }

  arm(timer: number, at: number): void {
    this.timers.set(timer, at);
  }

  openNow(): void {
    this.open();
  }

  hear(now: number): void {
    this.heard(now);
  }

  say(e: string): void {
    this.push(e);
  }

  close(tellPeer: boolean): void {
    this.end(tellPeer, 'end', 'bye');
  }

  trySend(): boolean {
    return !this.sendRefused();
  }

  poll(now: number, out: Uint8Array): number | undefined {
    return this.transmit(now, out);
  }

  protected override onTimer(_now: number, timer: number): void {
    this.fired.push(timer);
    if (timer === Timer.Idle) this.end(false, 'idle');
  }

  protected override write(_now: number, out: Uint8Array): number | undefined {
    if (this.pending === 0) return undefined;
    this.pending--;
    out[0] = 1;
    return 1;
  }

  protected override writeDisconnect(out: Uint8Array): number {
    out[0] = 0xdd;
    return 1;
  }

  protected override sentAfterClose(): void {
    this.refused++;
  }
}

describe('Lifecycle (a minimal framing)', () => {
  it('hands each expired action timer to the framing once, in order; send timers only set the deadline', () => {
    const p = new Probe(0);
    p.arm(Timer.Handshake, 50);
    p.arm(Timer.TokenExpiry, 50);
    p.arm(Timer.Resend, 20);
    expect(p.pollTimeout()).toBe(20);
    p.handleTimeout(20);
    expect(p.fired).toEqual([]);
    p.handleTimeout(50);
    expect(p.fired).toEqual([Timer.TokenExpiry, Timer.Handshake]);
    p.handleTimeout(60);
    expect(p.fired).toEqual([Timer.TokenExpiry, Timer.Handshake]);
    expect(p.pollTimeout()).toBe(20); // the send timer stays armed until its framing re-arms it
  });

  it('open: the idle timer runs from the last time heard and ends the connection; then nothing is due', () => {
    const p = new Probe(0);
    p.arm(Timer.Handshake, 5000);
    p.hear(30);
    p.openNow();
    expect(p.phaseNow).toBe(Phase.Open);
    expect(p.pollTimeout()).toBe(1030);
    p.hear(400);
    expect(p.pollTimeout()).toBe(1400);
    p.handleTimeout(1399.999);
    expect(p.fired).toEqual([]);
    p.handleTimeout(1400);
    expect(p.fired).toEqual([Timer.Idle]);
    expect(p.phaseNow).toBe(Phase.Closed);
    expect(p.pollTimeout()).toBeUndefined();
    expect(p.pollEvent()).toBe('idle');
  });

  it('closing: the DISCONNECT copies are drained by polling, no deadline; events: own, then the end events; a send after close is refused and counted', () => {
    const p = new Probe(0);
    let woken = 0;
    p.setWaker(() => woken++);
    p.openNow();
    p.say('connected');
    p.pending = 1;
    p.close(true);
    expect(p.pollTimeout()).toBeUndefined();
    const out = new Uint8Array(4);
    const sent: number[] = [];
    for (let n = p.poll(10, out); n !== undefined; n = p.poll(10, out)) sent.push(out[0]!);
    expect(sent).toEqual([0xdd, 0xdd, 0xdd]);
    expect([p.pollEvent(), p.pollEvent(), p.pollEvent(), p.pollEvent()]).toEqual(['connected', 'end', 'bye', undefined]);
    expect(p.trySend()).toBe(false);
    expect(p.refused).toBe(1);
    expect(woken).toBe(0); // the framing's command wakes its driver, not end() itself
  });
});

// ---------------------------------------------------------------------------------------------
// The three framings, stepped by hand: every datagram is carried at a chosen time, so what each
// object says between an input and the poll that follows it can be checked.

type Ep = Endpoint<unknown>;

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

/** Deliver everything `from` (at `fromAddr`) has to send at `now` to `to`; returns the datagrams. */
function carry(now: number, from: Ep, fromAddr: Address, to: Ep | undefined): Uint8Array[] {
  const out = new Uint8Array(1500);
  const got: Uint8Array[] = [];
  for (let t = from.pollTransmit(now, out); t !== undefined; t = from.pollTransmit(now, out)) {
    const b = out.slice(0, t.length);
    got.push(b);
    to?.handleDatagram(now, fromAddr, b);
  }
  return got;
}

describe('Connection (unsecured framing)', () => {
  it('a new cookie and the ACCEPT leave output owed, found by the poll after the input: the deadline is never `now`', () => {
    const server = new ConnectionHost({ listen: true, random: seeded(1) });
    const client = new ConnectionHost({ random: seeded(2) });
    const conn = client.connect(0, 's');
    expect(client.pollTimeout()).toBe(5000); // give-up only: the first CONNECT is polled (the host marked it)
    expect(carry(0, client, 'c', server).map((b) => b[0])).toEqual([FrameKind.Connect]);
    expect(client.pollTimeout()).toBe(250);
    carry(10, server, 's', client); // COOKIE
    expect(client.pollTimeout()).toBe(250);
    expect(carry(10, client, 'c', server).map((b) => b[0])).toEqual([FrameKind.Connect]); // the echo, at once
    carry(20, server, 's', client); // ACCEPT
    expect(conn.state).toBe('connected');
    const t = client.pollTimeout()!;
    expect(t).toBeGreaterThan(20);
    expect(carry(20, client, 'c', server).map((b) => b[0])).toEqual([FrameKind.Data]); // the first DATA, at once
    expect(server.connections()[0]!.state).toBe('connected');
  });

  it('close() wakes the driver and its 3 DISCONNECTs are polled at once, with no deadline', () => {
    const server = new ConnectionHost({ listen: true, random: seeded(1) });
    const client = new ConnectionHost({ random: seeded(2) });
    const conn = client.connect(0, 's');
    for (let now = 0; now < 40; now += 10) {
      carry(now, client, 'c', server);
      carry(now, server, 's', client);
    }
    expect(conn.state).toBe('connected');
    let woken = 0;
    client.setWaker(() => woken++);
    conn.close();
    expect(woken).toBe(1);
    expect(client.pollTimeout()).toBeUndefined();
    expect(carry(50, client, 'c', server).map((b) => b[0])).toEqual([FrameKind.Disconnect, FrameKind.Disconnect, FrameKind.Disconnect]);
    let e = server.pollEvent();
    while (e !== undefined && e.type !== 'disconnected') e = server.pollEvent();
    expect(e).toMatchObject({ type: 'disconnected', reason: 'peer' });
  });
});

describe('netcode ServerClient and Client', () => {
  const PROTOCOL = 0x77n;
  const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 3);
  const SERVER = '10.0.0.1:40000';
  const unixTime = (now: number): number => 1_800_000_000 + now / 1000;
  const token = (raw = false): Uint8Array => generateConnectToken({
    protocolId: PROTOCOL, privateKey: KEY, clientId: raw ? 9n : 1n, serverAddresses: [SERVER], nowUnixSeconds: 1_800_000_000,
    expireSeconds: 30, timeoutSeconds: 5, random: seeded(raw ? 9 : 1),
  });
  const typeOf = (b: Uint8Array): number => b[0]! & 0x0f;

  function pair(raw: boolean): { server: Server; client: Client; now: number } {
    const carryOpts = raw ? { raw: true } : {};
    const server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: [SERVER], unixTime, random: seeded(5), ...carryOpts });
    const client = new Client(carryOpts);
    client.connect(0, token(raw));
    expect(client.pollTimeout()).toBe(5000); // the token's timeout: the request is owed, not a deadline
    expect(carry(0, client, 'c', server).map(typeOf)).toEqual([NetcodePacketType.Request]);
    expect(client.pollTimeout()).toBe(100);
    expect(carry(10, server, SERVER, client).map(typeOf)).toEqual([NetcodePacketType.Challenge]);
    expect(client.pollTimeout()).toBe(5010); // the response is owed at once, not at a deadline of `now` (or −∞)
    expect(carry(10, client, 'c', server).map(typeOf)).toEqual([NetcodePacketType.Response]);
    // The server made the client's slot: its first keep-alive is owed, polled now; no deadline says so.
    expect(server.pollTimeout()).toBe(5010);
    expect(carry(20, server, SERVER, client).map(typeOf)).toEqual([NetcodePacketType.KeepAlive]);
    expect(server.pollTimeout()).toBe(120);
    expect(client.state).toBe('connected');
    expect(client.pollTimeout()).toBe(110); // keep-alives go on from the last response sent
    return { server, client, now: 20 };
  }

  it('ServerClient.close(): the driver is woken, 10 DISCONNECTs are polled at once, no deadline stands for them', () => {
    const { server, client, now } = pair(false);
    let woken = 0;
    server.setWaker(() => woken++);
    server.clients()[0]!.close();
    expect(woken).toBe(1);
    expect(server.pollTimeout()).toBeUndefined();
    const sent = carry(now, server, SERVER, client);
    expect(sent.map(typeOf)).toEqual(Array(10).fill(NetcodePacketType.Disconnect));
    expect(client.state).toBe('disconnected');
  });

  it('Client.close(): the driver is woken, 10 DISCONNECTs are polled at once, no deadline stands for them', () => {
    const { server, client, now } = pair(false);
    let woken = 0;
    client.setWaker(() => woken++);
    client.close();
    expect(woken).toBe(1);
    expect(client.pollTimeout()).toBeUndefined();
    expect(carry(now, client, 'c', server).map(typeOf)).toEqual(Array(10).fill(NetcodePacketType.Disconnect));
    expect(server.size).toBe(0);
  });

  it('raw mode: a queued payload wakes the driver; the deadline stays the keep-alive\'s', () => {
    const { server, client, now } = pair(true);
    let clientWoken = 0;
    let serverWoken = 0;
    client.setWaker(() => clientWoken++);
    server.setWaker(() => serverWoken++);
    client.sendRaw(Uint8Array.of(1, 2, 3));
    server.clients()[0]!.sendRaw(Uint8Array.of(4));
    expect([clientWoken, serverWoken]).toEqual([1, 1]);
    expect(client.pollTimeout()).toBe(110);
    expect(server.pollTimeout()).toBe(120);
    expect(carry(now, client, 'c', server).map(typeOf)).toEqual([NetcodePacketType.Payload]);
    expect(carry(now, server, SERVER, client).map(typeOf)).toEqual([NetcodePacketType.Payload]);
  });

  it('the wake reason: a token that expires when the request times out ends in token-expired', () => {
    const client = new Client();
    client.connect(0, generateConnectToken({
      protocolId: PROTOCOL, privateKey: KEY, clientId: 3n, serverAddresses: [SERVER], nowUnixSeconds: 1_800_000_000,
      expireSeconds: 2, timeoutSeconds: 2, random: seeded(3),
    }));
    for (let now = 0; now < 2000; now += 100) client.handleTimeout(now);
    expect(client.state).toBe('sending-request');
    client.handleTimeout(2000);
    expect(client.state).toBe('token-expired');
  });
});
