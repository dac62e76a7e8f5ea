import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseDuration, parseHostPort, parsePort, parseProbability, parseRate, parseSize, parseSizeFor, UsageError } from './units.js';

describe('parseRate (bytes per second)', () => {
  it('reads bit and byte units as documented', () => {
    expect(parseRate('10mbit')).toBe(1_250_000);
    expect(parseRate('500kbit')).toBe(62_500);
    expect(parseRate('1.5mbit')).toBe(187_500);
    expect(parseRate('1gbit')).toBe(125_000_000);
    expect(parseRate('2MB/s')).toBe(2_000_000);
    expect(parseRate('2Mb/s')).toBe(250_000);
    expect(parseRate('8Mbps')).toBe(1_000_000);
    expect(parseRate('1MiB/s')).toBe(1_048_576);
    expect(parseRate('100KB/s')).toBe(100_000);
    expect(parseRate('800bit')).toBe(100);
  });

  it('refuses bare numbers, unknown units, zero and junk with a UsageError naming the flag', () => {
    for (const bad of ['10', 'fast', '10furlongs', '0mbit', '-1mbit', '', 'mbit', '1e3mbit', '10Kib/s']) {
      expect(() => parseRate(bad, '--rate')).toThrow(UsageError);
    }
    expect(() => parseRate('10', '--rate')).toThrow(/--rate/);
    // A bare number says what is missing: a unit, bits or bytes.
    expect(() => parseRate('10', '--rate')).toThrow(/"10" needs a unit: bits per second \(10mbit, 500kbit\) or bytes per second \(2MB\/s\)/);
  });

  it('scales linearly with the number for every unit', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100_000 }), (n) => {
        expect(parseRate(`${n}kbit`)).toBeCloseTo((n * 1000) / 8, 6);
        expect(parseRate(`${n}KB/s`)).toBe(n * 1000);
      }),
      { numRuns: 200 },
    );
  });
});

describe('other CLI values', () => {
  it('durations: unit suffixes, bare numbers in the flag default unit', () => {
    expect(parseDuration('30s', '--timeout', 's')).toBe(30_000);
    expect(parseDuration('30', '--timeout', 's')).toBe(30_000);
    expect(parseDuration('50', '--delay', 'ms')).toBe(50);
    expect(parseDuration('1.5s', '--delay', 'ms')).toBe(1500);
    expect(parseDuration('2m', '--timeout', 's')).toBe(120_000);
    expect(() => parseDuration('soon', '--timeout', 's')).toThrow(UsageError);
    expect(() => parseDuration('-5', '--delay', 'ms')).toThrow(UsageError);
    expect(() => parseDuration('5y', '--delay', 'ms')).toThrow(/--delay/);
  });

  it('sizes, probabilities, ports and HOST:PORT', () => {
    expect(parseSize('512KiB', '--max-bytes')).toBe(524_288);
    expect(parseSize('64MiB', '--max-bytes')).toBe(67_108_864);
    expect(parseSize('2MB', '--max-bytes')).toBe(2_000_000);
    expect(parseSize('1000', '--max-bytes')).toBe(1000);
    expect(() => parseSize('1.5', '--max-bytes')).toThrow(UsageError);
    expect(() => parseSize('0', '--max-bytes')).toThrow(UsageError);
    expect(parseProbability('0.1', '--loss')).toBe(0.1);
    expect(parseProbability('5%', '--loss')).toBe(0.05);
    expect(() => parseProbability('1.5', '--loss')).toThrow(UsageError);
    expect(() => parseProbability('', '--loss')).toThrow(UsageError);
    expect(parsePort('0', '--port')).toBe(0);
    expect(() => parsePort('65536', '--port')).toThrow(UsageError);
    expect(() => parsePort('12ab', '--port')).toThrow(UsageError);
    expect(parseHostPort('127.0.0.1:9000', '--to')).toEqual({ host: '127.0.0.1', port: 9000 });
    expect(parseHostPort('localhost:1', '--to')).toEqual({ host: 'localhost', port: 1 });
    for (const bad of ['127.0.0.1', ':9000', '127.0.0.1:0', '127.0.0.1:x', '[::1]:9000']) {
      expect(() => parseHostPort(bad, '--to')).toThrow(UsageError);
    }
    // One range, said the same way, whichever end of it the port misses.
    for (const port of ['0', '99999', 'x']) {
      expect(() => parseHostPort(`host:${port}`, '--connect')).toThrow(`--connect: expected HOST:PORT with a port in 1..65535, got "host:${port}"`);
    }
    expect(() => parsePort('70000', '--listen')).toThrow('--listen: expected a port in 0..65535 (0 = any free port), got "70000"');
  });

  it('sizes for a flag with a range: units accepted, the range named when unreadable', () => {
    expect(parseSizeFor('1MiB', '--size', '4..1048576 bytes')).toBe(1 << 20);
    expect(parseSizeFor('16', '--size', '4..1048576 bytes')).toBe(16);
    for (const bad of ['0', '1.5', 'big', '-3']) {
      expect(() => parseSizeFor(bad, '--size', '4..1048576 bytes')).toThrow(`--size: expected a size in 4..1048576 bytes, got "${bad}"`);
    }
  });
});
