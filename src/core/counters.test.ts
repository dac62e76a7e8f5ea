import { describe, expect, it } from 'vitest';
import { newCounters } from './counters.js';

describe('counters', () => {
  it('starts at zero, adds, and snapshots a copy', () => {
    const c = newCounters(['sent', 'dropped'] as const);
    c.sent++;
    c.sent += 4;
    const snap = { ...c };
    c.dropped++;
    expect(snap).toEqual({ sent: 5, dropped: 0 });
    expect(c.dropped).toBe(1);
  });
});
