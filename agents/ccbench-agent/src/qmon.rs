//! `ccbench-agent qmon`: qdisc statistics of one device over rtnetlink (RTM_GETQDISC dump),
//! one JSON line per qdisc every interval. Counters are cumulative, as the kernel keeps them.

use crate::args::MonitorArgs;
use ccbench_common::{stop_requested, unix_now, AgentError};
use serde_json::json;
use std::ffi::CString;
use std::io::Write;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct QmonArgs {
    #[arg(long)]
    pub dev: String,
    #[command(flatten)]
    pub monitor: MonitorArgs,
}

const RTM_GETQDISC: u16 = 38;
const RTM_NEWQDISC: u16 = 36;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const TCA_KIND: u16 = 1;
const TCA_STATS: u16 = 3;
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;
const TC_H_ROOT: u32 = 0xffff_ffff;
const NLMSG_HDR: usize = 16;
const TCMSG_LEN: usize = 20;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct QdiscStats {
    pub ifindex: i32,
    pub handle: u32,
    pub parent: u32,
    pub kind: String,
    pub bytes: u64,
    pub packets: u32,
    pub qlen: u32,
    pub backlog: u32,
    pub drops: u32,
    pub requeues: u32,
    pub overlimits: u32,
}

/// tc's notation: "10:" for a qdisc handle, "1:1" for a class, "root".
pub fn format_handle(h: u32) -> String {
    if h == TC_H_ROOT {
        return "root".into();
    }
    let (major, minor) = (h >> 16, h & 0xffff);
    if minor == 0 {
        format!("{major:x}:")
    } else {
        format!("{major:x}:{minor:x}")
    }
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_ne_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_ne_bytes(b[o..o + 8].try_into().unwrap())
}

/// Iterate netlink attributes (type, payload) in `b`.
fn attrs(b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut o = 0;
    while o + 4 <= b.len() {
        let len = u16_at(b, o) as usize;
        if len < 4 || o + len > b.len() {
            break;
        }
        out.push((u16_at(b, o + 2) & 0x3fff, &b[o + 4..o + len]));
        o += (len + 3) & !3;
    }
    out
}

/// Decode one RTM_NEWQDISC message body (after the netlink header).
pub fn parse_qdisc(body: &[u8]) -> Option<QdiscStats> {
    if body.len() < TCMSG_LEN {
        return None;
    }
    let mut q = QdiscStats {
        ifindex: u32_at(body, 4) as i32,
        handle: u32_at(body, 8),
        parent: u32_at(body, 12),
        ..Default::default()
    };
    let mut have_stats2 = false;
    for (kind, data) in attrs(&body[TCMSG_LEN..]) {
        match kind {
            TCA_KIND => {
                let end = data.iter().position(|&c| c == 0).unwrap_or(data.len());
                q.kind = String::from_utf8_lossy(&data[..end]).into_owned();
            }
            TCA_STATS2 => {
                have_stats2 = true;
                for (k, d) in attrs(data) {
                    if k == TCA_STATS_BASIC && d.len() >= 12 {
                        q.bytes = u64_at(d, 0);
                        q.packets = u32_at(d, 8);
                    } else if k == TCA_STATS_QUEUE && d.len() >= 20 {
                        q.qlen = u32_at(d, 0);
                        q.backlog = u32_at(d, 4);
                        q.drops = u32_at(d, 8);
                        q.requeues = u32_at(d, 12);
                        q.overlimits = u32_at(d, 16);
                    }
                }
            }
            // struct tc_stats: the older form, used only when TCA_STATS2 is absent.
            TCA_STATS if !have_stats2 && data.len() >= 36 => {
                q.bytes = u64_at(data, 0);
                q.packets = u32_at(data, 8);
                q.drops = u32_at(data, 12);
                q.overlimits = u32_at(data, 16);
                q.qlen = u32_at(data, 28);
                q.backlog = u32_at(data, 32);
            }
            _ => {}
        }
    }
    Some(q)
}

struct Netlink {
    fd: i32,
    seq: u32,
}

impl Netlink {
    fn open() -> std::io::Result<Self> {
        // SAFETY: plain socket(2); closed in Drop.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self { fd, seq: 0 })
    }

    fn dump_qdiscs(&mut self) -> std::io::Result<Vec<QdiscStats>> {
        self.seq += 1;
        let mut req = [0u8; NLMSG_HDR + TCMSG_LEN];
        req[0..4].copy_from_slice(&((NLMSG_HDR + TCMSG_LEN) as u32).to_ne_bytes());
        req[4..6].copy_from_slice(&RTM_GETQDISC.to_ne_bytes());
        let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
        req[6..8].copy_from_slice(&flags.to_ne_bytes());
        req[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        // SAFETY: req is a valid buffer; the kernel is the destination (default sockaddr).
        let sent = unsafe { libc::send(self.fd, req.as_ptr().cast(), req.len(), 0) };
        if sent < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut found = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: buf is valid for its length.
            let n = unsafe { libc::recv(self.fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let mut o = 0usize;
            let n = n as usize;
            while o + NLMSG_HDR <= n {
                let len = u32_at(&buf, o) as usize;
                let kind = u16_at(&buf, o + 4);
                if len < NLMSG_HDR || o + len > n {
                    break;
                }
                match kind {
                    NLMSG_DONE => return Ok(found),
                    NLMSG_ERROR => {
                        let errno = -(u32_at(&buf, o + NLMSG_HDR) as i32);
                        if errno != 0 {
                            return Err(std::io::Error::from_raw_os_error(errno));
                        }
                    }
                    RTM_NEWQDISC => {
                        if let Some(q) = parse_qdisc(&buf[o + NLMSG_HDR..o + len]) {
                            found.push(q);
                        }
                    }
                    _ => {}
                }
                o += (len + 3) & !3;
            }
        }
    }
}

impl Drop for Netlink {
    fn drop(&mut self) {
        // SAFETY: fd is owned by this struct.
        unsafe { libc::close(self.fd) };
    }
}

pub fn ifindex_of(dev: &str) -> Result<i32, AgentError> {
    let name = CString::new(dev).map_err(|_| AgentError::usage("--dev contains a NUL byte"))?;
    // SAFETY: name is a valid C string.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if index == 0 {
        return Err(AgentError::usage(format!(
            "network device '{dev}' does not exist"
        )));
    }
    Ok(index as i32)
}

pub fn run(args: QmonArgs) -> Result<(), AgentError> {
    let ifindex = ifindex_of(&args.dev)?;
    let mut out = args.monitor.output.create()?;
    let mut nl = Netlink::open()?;
    let interval = args.monitor.output.interval();
    let start = Instant::now();
    let until = args.monitor.until(start);
    let mut k = 0u32;
    while !stop_requested() && until.is_none_or(|u| Instant::now() < u) {
        let ts = unix_now();
        for q in nl
            .dump_qdiscs()?
            .into_iter()
            .filter(|q| q.ifindex == ifindex)
        {
            let line = json!({"ts": ts, "type": "qdisc", "dev": args.dev,
                "handle": format_handle(q.handle), "parent": format_handle(q.parent),
                "kind": q.kind, "qlen_pkts": q.qlen, "backlog_bytes": q.backlog,
                "drops": q.drops, "overlimits": q.overlimits, "requeues": q.requeues,
                "sent_bytes": q.bytes, "sent_pkts": q.packets});
            writeln!(out, "{line}")?;
        }
        k += 1;
        let next = start + interval * k;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_printed_like_tc() {
        assert_eq!(format_handle(0x0010_0000), "10:");
        assert_eq!(format_handle(0x0001_0001), "1:1");
        assert_eq!(format_handle(TC_H_ROOT), "root");
    }

    #[test]
    fn parses_kind_and_stats2() {
        let mut body = vec![0u8; TCMSG_LEN];
        body[4..8].copy_from_slice(&7i32.to_ne_bytes());
        body[8..12].copy_from_slice(&0x0010_0000u32.to_ne_bytes());
        let push = |buf: &mut Vec<u8>, kind: u16, data: &[u8]| {
            buf.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
            buf.extend_from_slice(&kind.to_ne_bytes());
            buf.extend_from_slice(data);
            while !buf.len().is_multiple_of(4) {
                buf.push(0);
            }
        };
        push(&mut body, TCA_KIND, b"pfifo\0");
        let mut nested = Vec::new();
        let mut basic = 1500u64.to_ne_bytes().to_vec();
        basic.extend_from_slice(&1u32.to_ne_bytes());
        basic.extend_from_slice(&[0u8; 4]);
        push(&mut nested, TCA_STATS_BASIC, &basic);
        let queue: Vec<u8> = [3u32, 4500, 2, 0, 9]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        push(&mut nested, TCA_STATS_QUEUE, &queue);
        push(&mut body, TCA_STATS2, &nested);
        let q = parse_qdisc(&body).unwrap();
        assert_eq!(
            (q.ifindex, q.kind.as_str(), q.bytes, q.packets),
            (7, "pfifo", 1500, 1)
        );
        assert_eq!((q.qlen, q.backlog, q.drops, q.overlimits), (3, 4500, 2, 9));
    }
}
