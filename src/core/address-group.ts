/**
 * The source an IP address counts as for per-source limits (sessions, pending offers, open sockets
 * per source): an IPv4 address as it is (also written IPv4-mapped, `::ffff:1.2.3.4`), an IPv6 address
 * by its /64 prefix (`"2001:db8:1:2::/64"`), since a host is commonly given a whole /64 and may pick
 * any address in it. The text is canonical, so every spelling of one prefix gives the same key.
 */
export function ipGroup(ip: string): string {
  if (!ip.includes(':')) return ip;
  if (/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(ip)) return ip.slice(7);
  const [head = '', tail] = ip.split('%')[0]!.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t];
  return `${groups.slice(0, 4).map((g) => (parseInt(g, 16) || 0).toString(16)).join(':')}::/64`;
}

/**
 * {@link ipGroup} of an address string in the Node adapter's format (`"1.2.3.4:5"`, `"[2001:db8::1]:5"`):
 * the port is the remote's to choose, so it never separates sources. Any other string (a simulated
 * host's name) is its own group.
 */
export function addressGroup(address: string): string {
  const colon = address.lastIndexOf(':');
  if (colon <= 0 || !/^\d{1,5}$/.test(address.slice(colon + 1))) return address;
  const host = address.slice(0, colon);
  if (host.startsWith('[') && host.endsWith(']')) return ipGroup(host.slice(1, -1));
  return host.includes(':') ? address : host;
}
