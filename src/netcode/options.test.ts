import { describe, expect, it } from 'vitest';
import { resolvePayload, UDP_TRANSPORT, WEBRTC_SERVER_TRANSPORT, WEBRTC_TRANSPORT, WEBSOCKET_TRANSPORT } from './options.js';

describe('resolvePayload: what the transport sets', () => {
  const lanes = [{ mode: 'reliable-ordered' as const }];

  it('adds the transport overhead to the path and bounds the payload', () => {
    const udp = resolvePayload({ lanes }, UDP_TRANSPORT);
    const rtc = resolvePayload({ lanes }, WEBRTC_TRANSPORT);
    expect(rtc.session!.path!.overheadBytes! - udp.session!.path!.overheadBytes!).toBe(WEBRTC_TRANSPORT.overheadBytes - UDP_TRANSPORT.overheadBytes);
    expect(rtc.maxPayloadBytes).toBe(1147);
  });

  it("the server's data channel end defaults to one ride of redundancy; the options still decide when they say", () => {
    expect(resolvePayload({ lanes }, UDP_TRANSPORT).session!.channels.redundancy).toBeUndefined();
    expect(resolvePayload({ lanes }, WEBRTC_TRANSPORT).session!.channels.redundancy).toBeUndefined();
    expect(resolvePayload({ lanes }, WEBRTC_SERVER_TRANSPORT).session!.channels.redundancy).toBe(1);
    expect(resolvePayload({ lanes, channels: { redundancy: 'auto' } }, WEBRTC_SERVER_TRANSPORT).session!.channels.redundancy).toBe('auto');
    expect(resolvePayload({ lanes, channels: { redundancy: 0, reliableWindow: 64 } }, WEBRTC_SERVER_TRANSPORT).session!.channels).toMatchObject({ redundancy: 0, reliableWindow: 64 });
  });

  it('a reliable transport (WebSocket) takes every ride away, lane by lane too, and marks the path reliable', () => {
    const r = resolvePayload({
      lanes: [{ mode: 'reliable-ordered', redundancy: 3 }, { mode: 'unreliable' }, { mode: 'block' }],
      channels: { redundancy: 'auto', reliableWindow: 64 },
    }, WEBSOCKET_TRANSPORT).session!;
    expect(r.channels).toMatchObject({ redundancy: 0, reliableWindow: 64 });
    expect(r.channels.lanes[0]).toEqual({ mode: 'reliable-ordered' });
    expect(r.block).toBeDefined();
    expect(r.path!.reliableTransport).toBe(true);
    expect(r.acks).toEqual({ maxAckDelayMs: 25 });
    expect(resolvePayload({ lanes, acks: { maxAckDelayMs: 2 } }, WEBSOCKET_TRANSPORT).session!.acks).toEqual({ maxAckDelayMs: 2 });
    expect(resolvePayload({ lanes }, UDP_TRANSPORT).session!.acks).toBeUndefined();
    expect(resolvePayload({ lanes }, UDP_TRANSPORT).session!.path!.reliableTransport).toBeUndefined();
  });
});
