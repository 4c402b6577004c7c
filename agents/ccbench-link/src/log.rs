//! The per-packet log: a header (magic, then the link's configuration as JSON) followed by
//! fixed 64-byte little-endian records, one per packet or GSO/GRO aggregate, so that a reader
//! can map or stream it column by column (ccbench/analysis/packetlog.py).
//!
//! Dropped packets are written on arrival, forwarded ones when released (so `release_us` is the
//! actual verdict time and lateness = release - due is in the log, whatever jitter was drawn).
//!
//! record: arrival_us u64, departure_us u64 (the model's end of transmission), release_us u64
//!         (actual NF_ACCEPT time) (Unix µs; 0 when dropped),
//!         qlen_bytes u32, qlen_pkts u32 (seen on arrival), src u32, dst u32 (IPv4, network
//!         order as read), sport u16, dport u16, len u16, proto u8, fate u8 (0 forwarded,
//!         1 dropped: buffer full, 2 dropped: RED, 3 dropped: random loss),
//!         due_us u64 (the model's release time: departure + delay + jitter, never before the
//!         previous packet's; Unix µs, 0 when dropped),
//!         bytes u32 (the bytes the record stands for: the sum of its packets' IP lengths, as
//!         the link serialized them; = len for one packet), segs u16 (its packets: 1, or an
//!         aggregate's segments), 2 bytes of padding (0).
//! `len` is the IP length of what arrived (an aggregate's whole length, at most 65535).
//! Version 2 (magic CCBLINK2) had the first 56 bytes only, version 1 (CCBLINK1) the first 48.

use std::io::Write;

pub const MAGIC: &[u8; 8] = b"CCBLINK3";
pub const RECORD_BYTES: usize = 64;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FiveTuple {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
}

/// Length and flow of an IPv4 packet from its first bytes (None if not IPv4 or too short).
pub fn parse_ipv4(header: &[u8]) -> Option<(u16, FiveTuple)> {
    if header.len() < 20 || header[0] >> 4 != 4 {
        return None;
    }
    let ihl = (header[0] & 0x0f) as usize * 4;
    let len = u16::from_be_bytes([header[2], header[3]]);
    let proto = header[9];
    let mut tuple = FiveTuple {
        src: header[12..16].try_into().ok()?,
        dst: header[16..20].try_into().ok()?,
        proto,
        ..Default::default()
    };
    if (proto == 6 || proto == 17) && header.len() >= ihl + 4 {
        tuple.sport = u16::from_be_bytes([header[ihl], header[ihl + 1]]);
        tuple.dport = u16::from_be_bytes([header[ihl + 2], header[ihl + 3]]);
    }
    Some((len, tuple))
}

/// What a GSO/GRO aggregate of `len` IP bytes (`header`: its first bytes) stands for on a link
/// of IP MTU `mtu`: (bytes, packets) — the segments it is cut into, each carrying the
/// aggregate's IP and TCP/UDP headers, all but the last full (`mtu`), and their IP lengths in
/// all. The kernel does not tell userspace an aggregate's segment size (gso_size), so this
/// takes it to be what fills the MTU, as Linux's TCP does on a path of that MTU (MSS = MTU -
/// headers) and ccbench's UDP transport with its default segment size.
pub fn aggregate_size(header: &[u8], len: u32, mtu: u32) -> (u32, u32) {
    let ihl = header.first().map_or(0, |b| (b & 0x0f) as u32 * 4);
    let transport = match header.get(9) {
        Some(6) => header
            .get(ihl as usize + 12)
            .map_or(20, |b| (b >> 4) as u32 * 4),
        Some(17) => 8,
        _ => 0,
    };
    let headers = ihl + transport;
    if len <= mtu || mtu <= headers {
        return (len, 1);
    }
    let segs = (len - headers).div_ceil(mtu - headers);
    (len + (segs - 1) * headers, segs)
}

pub struct Record {
    pub arrival_us: u64,
    pub departure_us: u64,
    pub release_us: u64,
    pub qlen_bytes: u32,
    pub qlen_pkts: u32,
    pub flow: FiveTuple,
    pub len: u16,
    pub fate: u8,
    pub due_us: u64,
    pub bytes: u32,
    pub segs: u16,
}

impl Record {
    pub fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut b = [0u8; RECORD_BYTES];
        b[0..8].copy_from_slice(&self.arrival_us.to_le_bytes());
        b[8..16].copy_from_slice(&self.departure_us.to_le_bytes());
        b[16..24].copy_from_slice(&self.release_us.to_le_bytes());
        b[24..28].copy_from_slice(&self.qlen_bytes.to_le_bytes());
        b[28..32].copy_from_slice(&self.qlen_pkts.to_le_bytes());
        b[32..36].copy_from_slice(&self.flow.src);
        b[36..40].copy_from_slice(&self.flow.dst);
        b[40..42].copy_from_slice(&self.flow.sport.to_le_bytes());
        b[42..44].copy_from_slice(&self.flow.dport.to_le_bytes());
        b[44..46].copy_from_slice(&self.len.to_le_bytes());
        b[46] = self.flow.proto;
        b[47] = self.fate;
        b[48..56].copy_from_slice(&self.due_us.to_le_bytes());
        b[56..60].copy_from_slice(&self.bytes.to_le_bytes());
        b[60..62].copy_from_slice(&self.segs.to_le_bytes());
        b
    }
}

pub fn write_header(out: &mut impl Write, config: &serde_json::Value) -> std::io::Result<()> {
    let json = config.to_string();
    out.write_all(MAGIC)?;
    out.write_all(&(json.len() as u32).to_le_bytes())?;
    out.write_all(json.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_an_ipv4_tcp_header() {
        let mut h = [0u8; 24];
        h[0] = 0x45;
        h[2..4].copy_from_slice(&1500u16.to_be_bytes());
        h[9] = 6;
        h[12..16].copy_from_slice(&[10, 1, 1, 1]);
        h[16..20].copy_from_slice(&[10, 2, 1, 1]);
        h[20..22].copy_from_slice(&40000u16.to_be_bytes());
        h[22..24].copy_from_slice(&5001u16.to_be_bytes());
        let (len, t) = parse_ipv4(&h).unwrap();
        assert_eq!(
            (len, t.src, t.dst, t.sport, t.dport, t.proto),
            (1500, [10, 1, 1, 1], [10, 2, 1, 1], 40000, 5001, 6)
        );
        assert!(parse_ipv4(&h[..10]).is_none());
    }

    #[test]
    fn an_aggregate_stands_for_its_full_size_segments() {
        // IPv4 (20) + TCP with timestamps (32): 1448 payload bytes per 1500-byte segment.
        let mut h = [0u8; 40];
        h[0] = 0x45;
        h[9] = 6;
        h[32] = 8 << 4;
        // 10 full segments in one aggregate: 52 + 14480 bytes.
        assert_eq!(aggregate_size(&h, 52 + 14_480, 1500), (15_000, 10));
        // 2.5 segments' payload: 3 segments, the last one short.
        assert_eq!(aggregate_size(&h, 52 + 3620, 1500), (52 * 3 + 3620, 3));
        // The largest GSO aggregate: 65535 IP bytes, 45 full segments and a short one.
        assert_eq!(aggregate_size(&h, 65_535, 1500), (65_535 + 45 * 52, 46));
        // One packet is itself.
        assert_eq!(aggregate_size(&h, 1500, 1500), (1500, 1));
        assert_eq!(aggregate_size(&h, 60, 1500), (60, 1));
        // UDP: 28 header bytes, 1472 payload bytes per segment.
        let mut u = [0u8; 28];
        u[0] = 0x45;
        u[9] = 17;
        assert_eq!(aggregate_size(&u, 28 + 1472 * 4, 1500), (6000, 4));
    }

    #[test]
    fn records_are_64_bytes_little_endian() {
        let r = Record {
            arrival_us: 1,
            departure_us: 2,
            release_us: 3,
            qlen_bytes: 4,
            qlen_pkts: 5,
            flow: FiveTuple {
                src: [1, 2, 3, 4],
                dst: [5, 6, 7, 8],
                sport: 9,
                dport: 10,
                proto: 6,
            },
            len: 1500,
            fate: 1,
            due_us: 11,
            bytes: 70_000,
            segs: 47,
        };
        let b = r.encode();
        assert_eq!(b.len(), 64);
        assert_eq!(u32::from_le_bytes(b[56..60].try_into().unwrap()), 70_000);
        assert_eq!(u16::from_le_bytes([b[60], b[61]]), 47);
        assert_eq!(&b[62..], &[0, 0]);
        assert_eq!(u64::from_le_bytes(b[48..56].try_into().unwrap()), 11);
        assert_eq!(b[0], 1);
        assert_eq!(&b[32..36], &[1, 2, 3, 4]);
        assert_eq!(u16::from_le_bytes([b[44], b[45]]), 1500);
        assert_eq!((b[46], b[47]), (6, 1));
    }
}
