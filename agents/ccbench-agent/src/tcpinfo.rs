//! `struct tcp_info` (include/uapi/linux/tcp.h, Linux 6.x), decoded by byte offset so that older
//! kernels that return a shorter struct simply leave the later fields absent.

use serde_json::{json, Map, Value};
use std::os::fd::RawFd;

/// `snd_ssthresh` while it is still "infinite" (TCP_INFINITE_SSTHRESH).
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct TcpInfo {
    pub snd_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub bytes_acked: u64,
    pub min_rtt_us: Option<u32>,
    pub delivery_rate: Option<u64>,
    pub bytes_sent: Option<u64>,
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4)
        .map(|s| u32::from_ne_bytes(s.try_into().unwrap()))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8)
        .map(|s| u64::from_ne_bytes(s.try_into().unwrap()))
}

/// Decode the bytes getsockopt(TCP_INFO) returned (offsets of the 6.x layout).
pub fn decode(b: &[u8]) -> Option<TcpInfo> {
    Some(TcpInfo {
        snd_mss: u32_at(b, 16)?,
        unacked: u32_at(b, 24)?,
        sacked: u32_at(b, 28)?,
        lost: u32_at(b, 32)?,
        retrans: u32_at(b, 36)?,
        rtt_us: u32_at(b, 68)?,
        rttvar_us: u32_at(b, 72)?,
        snd_ssthresh: u32_at(b, 76)?,
        snd_cwnd: u32_at(b, 80)?,
        total_retrans: u32_at(b, 100)?,
        pacing_rate: u64_at(b, 104)?,
        bytes_acked: u64_at(b, 120)?,
        min_rtt_us: u32_at(b, 148),
        delivery_rate: u64_at(b, 160),
        bytes_sent: u64_at(b, 200),
    })
}

pub fn read(fd: RawFd) -> std::io::Result<TcpInfo> {
    let mut buf = [0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is valid for len bytes; the kernel writes at most len bytes and updates len.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    decode(&buf[..len as usize])
        .ok_or_else(|| std::io::Error::other(format!("tcp_info too short ({len} bytes)")))
}

impl TcpInfo {
    /// Packets in flight as the kernel counts them (tcp_packets_in_flight: packets out, less
    /// those SACKed or marked lost, plus those retransmitted): the window in use, which a flow
    /// that is not cwnd-limited (paced, application-limited) keeps below cwnd.
    pub fn in_flight(&self) -> u32 {
        (self.unacked.saturating_sub(self.sacked + self.lost)).saturating_add(self.retrans)
    }

    /// The `tcp_info` JSON line of docs/contracts.md.
    pub fn to_json(&self, ts: f64, flow: u32) -> Value {
        let mut m = Map::new();
        m.insert("ts".into(), json!(ts));
        m.insert("type".into(), json!("tcp_info"));
        m.insert("flow".into(), json!(flow));
        m.insert("cwnd_pkts".into(), json!(self.snd_cwnd));
        let ssthresh = (self.snd_ssthresh < INFINITE_SSTHRESH).then_some(self.snd_ssthresh);
        m.insert("ssthresh_pkts".into(), json!(ssthresh));
        if self.snd_ssthresh > INFINITE_SSTHRESH {
            // No controller returns this: the kernel missed a BPF controller's ssthresh call
            // and its repair failed (agents/kernel/bpf/ccbench_cc.h). Flagged, never dropped.
            m.insert("ssthresh_invalid".into(), json!(true));
        }
        m.insert("srtt_s".into(), json!(self.rtt_us as f64 / 1e6));
        m.insert("rttvar_s".into(), json!(self.rttvar_us as f64 / 1e6));
        let min_rtt = self
            .min_rtt_us
            .filter(|&v| v != u32::MAX)
            .map(|v| v as f64 / 1e6);
        m.insert("min_rtt_s".into(), json!(min_rtt));
        m.insert("retransmits".into(), json!(self.total_retrans));
        m.insert("lost_pkts".into(), json!(self.lost));
        m.insert(
            "delivery_rate_bps".into(),
            json!(self.delivery_rate.map(|r| r * 8)),
        );
        let pacing = (self.pacing_rate != u64::MAX).then_some(self.pacing_rate.saturating_mul(8));
        m.insert("pacing_rate_bps".into(), json!(pacing));
        m.insert("bytes_acked".into(), json!(self.bytes_acked));
        m.insert("bytes_sent".into(), json!(self.bytes_sent));
        m.insert("mss".into(), json!(self.snd_mss));
        m.insert("in_flight_pkts".into(), json!(self.in_flight()));
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut b = vec![0u8; 232];
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[24..28].copy_from_slice(&12u32.to_ne_bytes()); // unacked
        b[28..32].copy_from_slice(&3u32.to_ne_bytes()); // sacked
        b[32..36].copy_from_slice(&2u32.to_ne_bytes()); // lost
        b[36..40].copy_from_slice(&1u32.to_ne_bytes()); // retrans
        b[68..72].copy_from_slice(&40_500u32.to_ne_bytes());
        b[76..80].copy_from_slice(&INFINITE_SSTHRESH.to_ne_bytes());
        b[80..84].copy_from_slice(&10u32.to_ne_bytes());
        b[104..112].copy_from_slice(&u64::MAX.to_ne_bytes());
        b[148..152].copy_from_slice(&40_100u32.to_ne_bytes());
        b[160..168].copy_from_slice(&1_250_000u64.to_ne_bytes());
        b[200..208].copy_from_slice(&99u64.to_ne_bytes());
        b
    }

    #[test]
    fn decodes_the_6x_layout() {
        let info = decode(&sample()).unwrap();
        assert_eq!(info.snd_mss, 1448);
        assert_eq!(info.snd_cwnd, 10);
        assert_eq!(info.min_rtt_us, Some(40_100));
        assert_eq!(info.bytes_sent, Some(99));
    }

    #[test]
    fn infinite_ssthresh_and_unset_pacing_are_null() {
        let line = decode(&sample()).unwrap().to_json(1.0, 3);
        assert_eq!(line["ssthresh_pkts"], Value::Null);
        assert_eq!(line["pacing_rate_bps"], Value::Null);
        assert_eq!(line["delivery_rate_bps"], json!(10_000_000u64));
        assert_eq!(line["srtt_s"], json!(0.0405));
        assert_eq!(line["flow"], json!(3));
        assert_eq!(line["in_flight_pkts"], json!(12 - 3 - 2 + 1));
        assert!(line.get("ssthresh_invalid").is_none());
    }

    #[test]
    fn an_ssthresh_above_infinite_is_flagged_not_hidden() {
        let mut b = sample();
        b[76..80].copy_from_slice(&0x8110_4110u32.to_ne_bytes()); // the stale word, measured
        let line = decode(&b).unwrap().to_json(1.0, 0);
        assert_eq!(line["ssthresh_pkts"], Value::Null);
        assert_eq!(line["ssthresh_invalid"], json!(true));
    }

    #[test]
    fn short_struct_leaves_newer_fields_absent() {
        let info = decode(&sample()[..150]).unwrap();
        assert_eq!(info.delivery_rate, None);
        assert_eq!(info.bytes_sent, None);
        assert!(decode(&sample()[..50]).is_none());
    }
}
