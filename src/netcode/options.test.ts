import { describe, expect, it } from 'vitest';
import { resolveCarry, UDP_UNDERLAY, WEBRTC_SERVER_UNDERLAY, WEBRTC_UNDERLAY } from './options.js';

describe('resolveCarry: what the underlay sets', () => {
  const lanes = [{ mode: 'reliable-ordered' as const }];

  it('adds the underlay overhead to the path and bounds the payload', () => {
    const udp = resolveCarry({ lanes }, UDP_UNDERLAY);
    const rtc = resolveCarry({ lanes }, WEBRTC_UNDERLAY);
    expect(rtc.session!.path!.overheadBytes! - udp.session!.path!.overheadBytes!).toBe(WEBRTC_UNDERLAY.overheadBytes - UDP_UNDERLAY.overheadBytes);
    expect(rtc.maxPayloadBytes).toBe(1147);
  });

  it("the server's data channel end defaults to one ride of redundancy; the options still decide when they say", () => {
    expect(resolveCarry({ lanes }, UDP_UNDERLAY).session!.channels.redundancy).toBeUndefined();
    expect(resolveCarry({ lanes }, WEBRTC_UNDERLAY).session!.channels.redundancy).toBeUndefined();
    expect(resolveCarry({ lanes }, WEBRTC_SERVER_UNDERLAY).session!.channels.redundancy).toBe(1);
    expect(resolveCarry({ lanes, channels: { redundancy: 'auto' } }, WEBRTC_SERVER_UNDERLAY).session!.channels.redundancy).toBe('auto');
    expect(resolveCarry({ lanes, channels: { redundancy: 0, reliableWindow: 64 } }, WEBRTC_SERVER_UNDERLAY).session!.channels).toMatchObject({ redundancy: 0, reliableWindow: 64 });
  });
});
