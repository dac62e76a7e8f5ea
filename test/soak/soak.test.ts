import { describe, expect, it } from 'vitest';
import { runSoak } from './soak.js';

describe('soak (10^5 messages, all modes, mixed sizes, seeded)', () => {
  it('every reliable message once, intact, ordered where ordered; one true outcome per notify message', () => {
    const r = runSoak(20261123, 100_000);
    expect(r.failures).toEqual([]);
    expect(r.messages).toBe(100_000);
    expect(r.unreliableEchoed).toBeGreaterThan(r.unreliableSent * 0.5);
    expect(r.notifyLost).toBeGreaterThan(0);
    expect(r.blocksDelivered).toBeGreaterThan(50);
  }, 240_000);
});
