#!/usr/bin/env python3
"""Packet timeline of one interface, for bench/stall-probe.ts (no tcpdump on the bench machine).
Run inside a network namespace: stall-capture.py IFACE OUT_FILE SECONDS
Writes one line per IP packet: unix_time_s dir ip_len proto udp_first_byte key  (dir: o = sent, i = received;
udp_first_byte: 23 DTLS application data, 22 DTLS handshake, 0/1 STUN, -1 not UDP; key: IP id and UDP
checksum, to find one packet at both ends).
The SCTP inside DTLS is encrypted; its chunks are told apart by size in the probe (a DTLS 1.2 AES-GCM
record adds 37 bytes: a FORWARD-TSN alone is an 85-byte IP packet, a SACK alone 93 + 4 per gap block)."""
import socket, sys, time

iface, out, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003))
s.bind((iface, 0))
s.settimeout(0.5)
end = time.time() + seconds
with open(out, "w", buffering=1) as f:
    while time.time() < end:
        try:
            data, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        t = time.time()
        if len(data) < 20 or data[0] >> 4 != 4:
            continue
        ihl = (data[0] & 15) * 4
        proto = data[9]
        first = data[ihl + 8] if proto == 17 and len(data) > ihl + 8 else -1
        key = data[4:6].hex() + (data[ihl + 6:ihl + 8].hex() if proto == 17 else "")
        f.write(f"{t:.6f} {'o' if addr[2] == 4 else 'i'} {len(data)} {proto} {first} {key}\n")
