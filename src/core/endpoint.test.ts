import { describe, expect, it } from 'vitest';
import { transportOf } from './endpoint.js';

describe('transportOf', () => {
  it('gives the prefix of another transport\'s address, and "" for UDP keys and simulated names', () => {
    expect(transportOf('webrtc:17')).toBe('webrtc:');
    expect(transportOf('webrtc:')).toBe('webrtc:');
    expect(transportOf('ws2:a:b')).toBe('ws2:');
    for (const a of ['127.0.0.1:9000', '[::1]:9000', '[2001:db8::1]:5', 'server', 'c', '', 'WebRTC:1', 'web-rtc:1', ':5', 'a b:1']) {
      expect(transportOf(a)).toBe('');
    }
  });
});
