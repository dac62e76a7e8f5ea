#!/usr/bin/env python3
"""The browser's SCTP packets, decoded, from a log of bench/stall-probe.ts run with
DEBUG=pw:browser STALL_CHROME_LOG=1 (Chromium's dcsctp prints every packet it sends (O) and receives (I)
as text pcap at WebRTC's verbose log level).
Usage: stall-sctp-log.py LOG                      counts of packets by direction and chunk kinds, and
                                                  DATA chunks the browser sent more than once
       stall-sctp-log.py LOG START_UNIX_MS AT_MS SPAN_MS   the packets from AT_MS to AT_MS + SPAN_MS
                                                  after START_UNIX_MS (a run's startUnixMs), one a line:
                                                  D<tsn>/<bytes>, S<cum ack> gaps[...], F<new cum ack>
TSNs are printed modulo 10,000."""
import collections, datetime, re, sys

PCAP = re.compile(r'\] ([IO]) (\d\d):(\d\d):(\d\d)\.(\d{3}) 0000 ([0-9a-f ]+) # SCTP_PACKET')
STAMP = re.compile(r'^(\S+Z) pw:browser .*\] ([IO]) (\d\d):(\d\d):(\d\d)\.(\d{3}) 0000')


def ms_of(h, m, s, milli):
    return ((int(h) * 60 + int(m)) * 60 + int(s)) * 1000 + int(milli)


def chunks(b):
    out, i = [], 12
    while i + 4 <= len(b):
        t, ln = b[i], int.from_bytes(b[i + 2:i + 4], 'big')
        if ln < 4:
            break
        v = b[i:i + ln]
        if t == 0:
            out.append(('D', int.from_bytes(v[4:8], 'big'), ln - 16))
        elif t == 3:
            ng = int.from_bytes(v[12:14], 'big')
            gaps = [(int.from_bytes(v[16 + 4 * k:18 + 4 * k], 'big'), int.from_bytes(v[18 + 4 * k:20 + 4 * k], 'big')) for k in range(ng)]
            out.append(('S', int.from_bytes(v[4:8], 'big'), int.from_bytes(v[8:12], 'big'), gaps))
        elif t in (192, 194):
            out.append(('F', int.from_bytes(v[4:8], 'big')))
        else:
            out.append(('T%d' % t,))
        i += (ln + 3) // 4 * 4
    return out


def parse(path):
    """[(direction, ms on dcsctp's clock, chunks)] and the offset from that clock to unix ms."""
    pk, off = [], None
    for line in open(path, errors='replace'):
        m = PCAP.search(line)
        if not m:
            continue
        ms = ms_of(*m.group(2, 3, 4, 5))
        pk.append((m.group(1), ms, chunks(bytes(int(x, 16) for x in m.group(6).split()))))
        s = STAMP.search(line)
        if s:
            unix = datetime.datetime.fromisoformat(s.group(1).replace('Z', '+00:00')).timestamp() * 1000
            off = unix - ms if off is None else min(off, unix - ms)
    return pk, off or 0


def show(c):
    if c[0] == 'D':
        return f'D{c[1] % 10000}/{c[2]}'
    if c[0] == 'S':
        return f'S{c[1] % 10000} gaps{c[3]}'
    if c[0] == 'F':
        return f'F{c[1] % 10000}'
    return c[0]


def main():
    pk, off = parse(sys.argv[1])
    if len(sys.argv) == 2:
        kinds = collections.Counter((d, '+'.join(sorted({c[0] for c in ch}))) for d, _, ch in pk)
        for k, v in sorted(kinds.items()):
            print(k, v)
        sent = collections.Counter(c[1] for d, _, ch in pk if d == 'O' for c in ch if c[0] == 'D')
        print('DATA chunks sent', sum(sent.values()), 'distinct', len(sent), 'sent n times:', sorted(collections.Counter(sent.values()).items()))
        return
    t0 = float(sys.argv[2]) + float(sys.argv[3])
    for d, ms, ch in pk:
        t = ms + off - t0
        if 0 <= t <= float(sys.argv[4]):
            print(f'{t:7.0f} {d} ' + ' '.join(show(c) for c in ch))


main()
