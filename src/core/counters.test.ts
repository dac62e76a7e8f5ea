import { describe, expect, it } from 'vitest';
import { Counters } from './counters.js';

describe('Counters', () => {
  it('starts at zero, adds, and snapshots a copy', () => {
    const c = new Counters(['sent', 'dropped'] as const);
    c.add('sent');
    c.add('sent', 4);
    const snap = c.snapshot();
    c.add('dropped');
    expect(snap).toEqual({ sent: 5, dropped: 0 });
    expect(c.get('dropped')).toBe(1);
  });
});
