import { describe, expect, it } from 'vitest';
import { addressGroup, ipGroup } from './address-group.js';

describe('ipGroup / addressGroup (what per-source limits count by)', () => {
  it('is the IPv4 address, also IPv4-mapped, and the /64 of an IPv6 address in any spelling', () => {
    expect(ipGroup('203.0.113.7')).toBe('203.0.113.7');
    expect(ipGroup('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(ipGroup('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(ipGroup('2001:db8:1:2::9')).toBe('2001:db8:1:2::/64');
    expect(ipGroup('2001:0DB8:0001:0002:ffff::')).toBe('2001:db8:1:2::/64');
    expect(ipGroup('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(ipGroup('2001:db8:0:3::1')).not.toBe(ipGroup('2001:db8::1'));
    expect(ipGroup('::1')).toBe('0:0:0:0::/64');
    expect(ipGroup('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });

  it('drops the port of "ip:port" and "[v6]:port"; other strings are their own group', () => {
    expect(addressGroup('10.0.0.1:5')).toBe('10.0.0.1');
    expect(addressGroup('10.0.0.1:6')).toBe('10.0.0.1');
    expect(addressGroup('[2001:db8::1]:7')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('[2001:db8::2]:8')).toBe('2001:db8:0:0::/64');
    expect(addressGroup('[2001:db8:0:1::2]:8')).toBe('2001:db8:0:1::/64');
    expect(addressGroup('peer-a')).toBe('peer-a');
    expect(addressGroup('peer-a:1')).toBe('peer-a');
    expect(addressGroup('a:b:c')).toBe('a:b:c');
    expect(addressGroup(':5')).toBe(':5');
  });
});
