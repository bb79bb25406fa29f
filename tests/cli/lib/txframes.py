# Raw txpath frames for the CLI tests (sink_hostile.sh, testbed_sink.sh): Ethernet + IPv4 + UDP
# (port 9000) carrying the txpath payload (magic, sender id, sequence number, 16 zero bytes),
# sent on an interface through an AF_PACKET socket (needs root). Not a test itself.
import socket
import struct

MAGIC = 0x54585031


def _csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


class FrameSender:
    def __init__(self, ifname, dmac, smac, sip, dip):
        self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        self._sock.bind((ifname, 0))
        self._eth = (bytes.fromhex(dmac.replace(':', '')) + bytes.fromhex(smac.replace(':', '')) +
                     b'\x08\x00')
        self._sip, self._dip = socket.inet_aton(sip), socket.inet_aton(dip)

    def frame(self, sender, seq, magic=MAGIC):
        pl = struct.pack('!IIQ', magic, sender, seq) + bytes(16)
        udp = struct.pack('!HHHH', 9000, 9000, 8 + len(pl), 0) + pl
        ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                         self._sip, self._dip)
        ip = ip[:10] + struct.pack('!H', _csum(ip)) + ip[12:]
        return self._eth + ip + udp

    def send(self, sender, seq, magic=MAGIC):
        self._sock.send(self.frame(sender, seq, magic))
