//! A small NFQUEUE binding on a raw netlink socket (no libnetfilter_queue), written for the
//! emulator's needs: many packets per system call (the kernel sends one netlink datagram per
//! packet, `recvmmsg` takes up to `RECV_BATCH` of them at once), many verdicts per send (and one
//! NFQNL_MSG_VERDICT_BATCH message accepts a whole prefix of the queue), and a file descriptor
//! to poll with a microsecond timeout so the emulator sleeps when there is nothing to do.
//!
//! Messages (include/uapi/linux/netfilter/nfnetlink_queue.h): nlmsghdr, nfgenmsg (family,
//! version, queue number big-endian), then attributes; attribute payloads are big-endian.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

const NETLINK_NETFILTER: i32 = 12;
const NFNL_SUBSYS_QUEUE: u16 = 3;
const NFQNL_MSG_PACKET: u16 = 0;
const NFQNL_MSG_VERDICT: u16 = 1;
const NFQNL_MSG_CONFIG: u16 = 2;
const NFQNL_MSG_VERDICT_BATCH: u16 = 3;
const NFQA_PACKET_HDR: u16 = 1;
const NFQA_VERDICT_HDR: u16 = 2;
const NFQA_TIMESTAMP: u16 = 4;
const NFQA_PAYLOAD: u16 = 10;
const NFQA_CAP_LEN: u16 = 13;
const NFQA_SKB_INFO: u16 = 14;
/// NFQA_SKB_INFO: the packet is a GSO/GRO aggregate.
const NFQA_SKB_GSO: u32 = 1 << 1;
const NFQA_CFG_CMD: u16 = 1;
const NFQA_CFG_PARAMS: u16 = 2;
const NFQA_CFG_QUEUE_MAXLEN: u16 = 3;
const NFQA_CFG_MASK: u16 = 4;
const NFQA_CFG_FLAGS: u16 = 5;
/// Queue GSO/GRO aggregates whole instead of segmenting them first (and leave their
/// checksums to the kernel).
const NFQA_CFG_F_GSO: u32 = 1 << 2;
const NFQNL_CFG_CMD_BIND: u8 = 1;
const NFQNL_CFG_CMD_UNBIND: u8 = 2;
const NFQNL_COPY_PACKET: u8 = 2;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_HDRLEN: usize = 16;
const NFGEN_HDRLEN: usize = 4;
/// Bytes of each packet copied to userspace (IPv4 header with options, plus the ports).
pub const MAX_COPY: usize = 64;
/// Datagrams (one packet each) taken per `recvmmsg`.
const RECV_BATCH: usize = 64;
/// Room for one datagram: a packet message with MAX_COPY bytes of payload is ~250 bytes.
const RECV_SLOT: usize = 2048;

pub const NF_DROP: u32 = 0;
pub const NF_ACCEPT: u32 = 1;

/// One queued packet: the kernel's id, when the kernel received it (Unix µs, when it says),
/// its whole length, whether it is a GSO/GRO aggregate (only when the queue was opened with
/// `gso`) and its first bytes.
#[derive(Clone, Copy)]
pub struct Packet {
    pub id: u32,
    pub kernel_time_us: Option<u64>,
    pub len: u32,
    pub gso: bool,
    pub head: [u8; MAX_COPY],
    pub head_len: usize,
}

impl Packet {
    pub fn head(&self) -> &[u8] {
        &self.head[..self.head_len]
    }
}

/// System calls made, to tell the cost of the emulator's own work from the kernel's.
#[derive(Default, Debug, Clone, Copy)]
pub struct Syscalls {
    /// `recvmmsg` calls, and those that found nothing waiting.
    pub recv_calls: u64,
    pub empty_recvs: u64,
    /// Datagrams received.
    pub datagrams: u64,
    /// Verdict sends, and the verdict messages they carried.
    pub verdict_sends: u64,
    pub verdict_messages: u64,
    /// `ppoll` calls (sleeps until a packet or a release is due).
    pub waits: u64,
}

pub struct NfQueue {
    fd: OwnedFd,
    queue_num: u16,
    seq: u32,
    recv_buf: Vec<u8>,
    /// RECV_BATCH slots of RECV_SLOT bytes for `recvmmsg`.
    slots: Vec<u8>,
    verdicts: Vec<u8>,
    pub syscalls: Syscalls,
    /// Packets that arrived while a configuration request waited for its acknowledgement.
    pending: Vec<Packet>,
    /// Verdicts the kernel refused (see `parse_packets`).
    pub verdict_errors: u64,
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn put_header(buf: &mut Vec<u8>, msg: u16, flags: u16, seq: u32, family: u8, queue: u16) -> usize {
    let start = buf.len();
    buf.extend_from_slice(&0u32.to_ne_bytes()); // length, patched by finish()
    buf.extend_from_slice(&((NFNL_SUBSYS_QUEUE << 8) | msg).to_ne_bytes());
    buf.extend_from_slice(&flags.to_ne_bytes());
    buf.extend_from_slice(&seq.to_ne_bytes());
    buf.extend_from_slice(&0u32.to_ne_bytes());
    buf.extend_from_slice(&[family, 0]);
    buf.extend_from_slice(&queue.to_be_bytes());
    start
}

fn put_attr(buf: &mut Vec<u8>, kind: u16, data: &[u8]) {
    buf.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(data);
    buf.resize(align4(buf.len()), 0);
}

fn finish(buf: &mut [u8], start: usize) {
    let len = (buf.len() - start) as u32;
    buf[start..start + 4].copy_from_slice(&len.to_ne_bytes());
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_ne_bytes([b[o], b[o + 1]])
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes(b[o..o + 4].try_into().unwrap())
}

/// What one datagram held besides packets.
#[derive(Debug, Default, PartialEq)]
pub struct Parsed {
    /// Error acknowledgements: (sequence number, errno).
    pub errors: Vec<(u32, i32)>,
}

/// Parse the NFQNL_MSG_PACKET messages in one datagram (appended to `out`) and collect the
/// error messages. Verdicts are sent with sequence number 0 and no ACK flag, so an error with
/// seq 0 is a refused verdict, typically ENOENT for a packet the kernel already flushed (its
/// device went down): not fatal, the packet is gone either way.
pub fn parse_packets(datagram: &[u8], out: &mut Vec<Packet>) -> Parsed {
    let mut parsed = Parsed::default();
    let mut o = 0;
    while o + NLMSG_HDRLEN <= datagram.len() {
        let len = u32_at(datagram, o) as usize;
        if len < NLMSG_HDRLEN || o + len > datagram.len() {
            break;
        }
        let kind = u16_at(datagram, o + 4);
        if kind == NLMSG_ERROR && len >= NLMSG_HDRLEN + 4 {
            let errno = -(u32_at(datagram, o + NLMSG_HDRLEN) as i32);
            // The error message echoes the header of the request it answers.
            let seq = if len >= 2 * NLMSG_HDRLEN + 4 {
                u32_at(datagram, o + NLMSG_HDRLEN + 4 + 8)
            } else {
                0
            };
            parsed.errors.push((seq, errno));
        } else if kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET {
            let body = &datagram[o + NLMSG_HDRLEN + NFGEN_HDRLEN..o + len];
            let mut packet = Packet {
                id: 0,
                kernel_time_us: None,
                len: 0,
                gso: false,
                head: [0; MAX_COPY],
                head_len: 0,
            };
            let mut have_id = false;
            let mut a = 0;
            while a + 4 <= body.len() {
                let alen = u16_at(body, a) as usize;
                if alen < 4 || a + alen > body.len() {
                    break;
                }
                let data = &body[a + 4..a + alen];
                match u16_at(body, a + 2) & 0x3fff {
                    NFQA_PACKET_HDR if data.len() >= 4 => {
                        packet.id = u32::from_be_bytes(data[..4].try_into().unwrap());
                        have_id = true;
                    }
                    // struct nfqnl_msg_packet_timestamp { be64 sec; be64 usec; }
                    NFQA_TIMESTAMP if data.len() >= 16 => {
                        let sec = u64::from_be_bytes(data[..8].try_into().unwrap());
                        let usec = u64::from_be_bytes(data[8..16].try_into().unwrap());
                        packet.kernel_time_us = Some(sec * 1_000_000 + usec);
                    }
                    NFQA_PAYLOAD => {
                        packet.head_len = data.len().min(MAX_COPY);
                        packet.head[..packet.head_len].copy_from_slice(&data[..packet.head_len]);
                        // The whole packet, unless NFQA_CAP_LEN says it was cut.
                        packet.len = packet.len.max(data.len() as u32);
                    }
                    NFQA_CAP_LEN if data.len() >= 4 => {
                        let len = u32::from_be_bytes(data[..4].try_into().unwrap());
                        packet.len = packet.len.max(len);
                    }
                    NFQA_SKB_INFO if data.len() >= 4 => {
                        let info = u32::from_be_bytes(data[..4].try_into().unwrap());
                        packet.gso = info & NFQA_SKB_GSO != 0;
                    }
                    _ => {}
                }
                a += align4(alen);
            }
            if have_id {
                out.push(packet);
            }
        } else if kind == NLMSG_DONE {
            break;
        }
        o += align4(len);
    }
    parsed
}

impl NfQueue {
    /// Bind queue `queue_num`, copying `MAX_COPY` bytes of each packet, holding at most
    /// `max_len` packets in the kernel; with `gso`, GSO/GRO aggregates are queued whole (one
    /// verdict each), else the kernel segments them and queues every segment.
    pub fn open(queue_num: u16, max_len: u32, gso: bool) -> io::Result<NfQueue> {
        // SAFETY: plain socket(2); the fd is owned right away.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                NETLINK_NETFILTER,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a fresh, valid fd.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // A large receive buffer absorbs bursts; FORCE needs CAP_NET_ADMIN, else the capped one.
        let size: libc::c_int = 32 << 20;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
            // SAFETY: size is a valid c_int.
            let rc = unsafe {
                libc::setsockopt(
                    raw,
                    libc::SOL_SOCKET,
                    opt,
                    (&size as *const libc::c_int).cast(),
                    4,
                )
            };
            if rc == 0 {
                break;
            }
        }
        // SO_TIMESTAMP switches on the kernel's receive timestamps (a host-wide switch while
        // any socket asks for them): the packet messages then carry NFQA_TIMESTAMP, the time
        // the packet reached this host, so arrivals are exact however late they are read.
        let on: libc::c_int = 1;
        // SAFETY: `on` is a valid c_int; failure only means no NFQA_TIMESTAMP.
        unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMP,
                (&on as *const libc::c_int).cast(),
                4,
            )
        };
        let mut q = NfQueue {
            fd,
            queue_num,
            seq: 0,
            recv_buf: vec![0u8; 1 << 20],
            slots: vec![0u8; RECV_BATCH * RECV_SLOT],
            verdicts: Vec::with_capacity(64 * 1024),
            syscalls: Syscalls::default(),
            pending: Vec::new(),
            verdict_errors: 0,
        };
        q.config(&[(NFQA_CFG_CMD, &[NFQNL_CFG_CMD_BIND, 0, 0, 0])])?;
        let mut params = (MAX_COPY as u32).to_be_bytes().to_vec();
        params.push(NFQNL_COPY_PACKET);
        q.config(&[(NFQA_CFG_PARAMS, &params)])?;
        q.config(&[(NFQA_CFG_QUEUE_MAXLEN, &max_len.to_be_bytes())])?;
        if gso {
            let flag = NFQA_CFG_F_GSO.to_be_bytes();
            q.config(&[(NFQA_CFG_MASK, &flag), (NFQA_CFG_FLAGS, &flag)])?;
        }
        Ok(q)
    }

    fn config(&mut self, attrs: &[(u16, &[u8])]) -> io::Result<()> {
        self.seq += 1;
        let mut buf = Vec::with_capacity(64);
        let flags = (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16;
        let start = put_header(
            &mut buf,
            NFQNL_MSG_CONFIG,
            flags,
            self.seq,
            0,
            self.queue_num,
        );
        for (attr, data) in attrs {
            put_attr(&mut buf, *attr, data);
        }
        finish(&mut buf, start);
        self.send(&buf)?;
        // Wait for the acknowledgement (an NLMSG_ERROR carrying 0 or the errno). Once bound,
        // packets may already arrive: keep them for the next `recv_packets`.
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no answer from nfnetlink",
                ));
            }
            self.wait(Some(left))?;
            let n = self.recv_raw()?;
            if n == 0 {
                continue;
            }
            let datagram = std::mem::take(&mut self.recv_buf);
            let parsed = parse_packets(&datagram[..n], &mut self.pending);
            self.recv_buf = datagram;
            for (seq, errno) in parsed.errors {
                if seq != self.seq {
                    self.verdict_errors += u64::from(errno != 0);
                } else if errno == 0 {
                    return Ok(());
                } else {
                    return Err(io::Error::from_raw_os_error(errno));
                }
            }
        }
    }

    fn send(&self, buf: &[u8]) -> io::Result<()> {
        // SAFETY: a zeroed sockaddr_nl addresses the kernel.
        let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: buf and addr are valid for the given lengths.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                0,
                (&addr as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// One datagram into recv_buf; 0 when nothing is waiting.
    fn recv_raw(&mut self) -> io::Result<usize> {
        // SAFETY: recv_buf is valid for its length.
        let n = unsafe {
            libc::recv(
                self.fd.as_raw_fd(),
                self.recv_buf.as_mut_ptr().cast(),
                self.recv_buf.len(),
                0,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        Ok(n as usize)
    }

    /// Up to RECV_BATCH datagrams into `slots` with one system call; their lengths.
    fn recv_batch(&mut self, lengths: &mut [usize; RECV_BATCH]) -> io::Result<usize> {
        // SAFETY: zeroed iovec/mmsghdr are valid "empty" values, filled in below.
        let mut iovecs: [libc::iovec; RECV_BATCH] = unsafe { std::mem::zeroed() };
        let mut headers: [libc::mmsghdr; RECV_BATCH] = unsafe { std::mem::zeroed() };
        let base = self.slots.as_mut_ptr();
        for (i, (iov, header)) in iovecs.iter_mut().zip(headers.iter_mut()).enumerate() {
            // SAFETY: slot i lies inside `slots` (RECV_BATCH * RECV_SLOT bytes).
            iov.iov_base = unsafe { base.add(i * RECV_SLOT) }.cast();
            iov.iov_len = RECV_SLOT;
            header.msg_hdr.msg_iov = iov;
            header.msg_hdr.msg_iovlen = 1;
        }
        self.syscalls.recv_calls += 1;
        // SAFETY: every header points at its own iovec and slot, all alive for the call.
        let n = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                headers.as_mut_ptr(),
                RECV_BATCH as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => {
                    self.syscalls.empty_recvs += 1;
                    Ok(0)
                }
                _ => Err(e),
            };
        }
        let n = n as usize;
        for (length, header) in lengths.iter_mut().zip(&headers[..n]) {
            if header.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                // A lost packet message would leave its packet queued in the kernel for good.
                return Err(io::Error::other(format!(
                    "an NFQUEUE message of {} bytes did not fit the {RECV_SLOT}-byte slot",
                    header.msg_len
                )));
            }
            *length = header.msg_len as usize;
        }
        self.syscalls.datagrams += n as u64;
        Ok(n)
    }

    /// Append the packets waiting now (up to `max_calls` system calls' worth) to `out`; true
    /// when nothing is left waiting.
    pub fn recv_packets(&mut self, out: &mut Vec<Packet>, max_calls: usize) -> io::Result<bool> {
        out.append(&mut self.pending);
        let mut lengths = [0usize; RECV_BATCH];
        for _ in 0..max_calls {
            let n = self.recv_batch(&mut lengths)?;
            for (i, &len) in lengths[..n].iter().enumerate() {
                let slot = &self.slots[i * RECV_SLOT..i * RECV_SLOT + len];
                let parsed = parse_packets(slot, out);
                self.verdict_errors += parsed.errors.iter().filter(|(_, e)| *e != 0).count() as u64;
            }
            if n < RECV_BATCH {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Sleep until a packet is waiting or `timeout` passes (None: wait indefinitely).
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs() as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: pfd and ts are valid for the call.
        let rc = unsafe { libc::ppoll(&mut pfd, 1, ts_ptr, std::ptr::null()) };
        self.syscalls.waits += 1;
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            };
        }
        Ok(rc > 0)
    }

    /// Sleep for `duration` without watching the socket (packets that arrive meanwhile keep
    /// their kernel timestamps).
    pub fn sleep(&mut self, duration: Duration) {
        let ts = libc::timespec {
            tv_sec: duration.as_secs() as libc::time_t,
            tv_nsec: duration.subsec_nanos() as libc::c_long,
        };
        self.syscalls.waits += 1;
        // SAFETY: no descriptors; ts is valid for the call. EINTR (a stop signal) just returns.
        unsafe { libc::ppoll(std::ptr::null_mut(), 0, &ts, std::ptr::null()) };
    }

    /// Queue a verdict for one packet; `flush_verdicts` sends all queued verdicts in one
    /// datagram.
    pub fn verdict(&mut self, id: u32, verdict: u32) {
        self.put_verdict(NFQNL_MSG_VERDICT, id, verdict);
    }

    /// Queue one verdict for every packet still in the kernel's queue with an id up to and
    /// including `last_id` (NFQNL_MSG_VERDICT_BATCH). The kernel keeps its queue in id order
    /// and walks it from the oldest packet, stopping at the first later id, so this is exact
    /// when the caller has already given its verdict to every earlier packet it wants treated
    /// differently (verdicts are applied in the order they were queued).
    pub fn verdict_through(&mut self, last_id: u32, verdict: u32) {
        self.put_verdict(NFQNL_MSG_VERDICT_BATCH, last_id, verdict);
    }

    fn put_verdict(&mut self, msg: u16, id: u32, verdict: u32) {
        let mut hdr = [0u8; 8];
        hdr[..4].copy_from_slice(&verdict.to_be_bytes());
        hdr[4..].copy_from_slice(&id.to_be_bytes());
        let start = put_header(
            &mut self.verdicts,
            msg,
            libc::NLM_F_REQUEST as u16,
            0,
            0,
            self.queue_num,
        );
        put_attr(&mut self.verdicts, NFQA_VERDICT_HDR, &hdr);
        finish(&mut self.verdicts, start);
        self.syscalls.verdict_messages += 1;
    }

    pub fn flush_verdicts(&mut self) -> io::Result<()> {
        if self.verdicts.is_empty() {
            return Ok(());
        }
        self.syscalls.verdict_sends += 1;
        let result = self.send(&self.verdicts);
        self.verdicts.clear();
        result
    }
}

impl Drop for NfQueue {
    fn drop(&mut self) {
        let _ = self.flush_verdicts();
        self.seq += 1;
        let mut buf = Vec::with_capacity(32);
        let start = put_header(
            &mut buf,
            NFQNL_MSG_CONFIG,
            libc::NLM_F_REQUEST as u16,
            self.seq,
            0,
            self.queue_num,
        );
        put_attr(&mut buf, NFQA_CFG_CMD, &[NFQNL_CFG_CMD_UNBIND, 0, 0, 0]);
        finish(&mut buf, start);
        let _ = self.send(&buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_well_formed_messages() {
        let mut buf = Vec::new();
        let start = put_header(&mut buf, NFQNL_MSG_VERDICT, 1, 0, 0, 7);
        put_attr(&mut buf, NFQA_VERDICT_HDR, &[0, 0, 0, 1, 0, 0, 0, 42]);
        finish(&mut buf, start);
        assert_eq!(buf.len(), 16 + 4 + 12);
        assert_eq!(u32_at(&buf, 0) as usize, buf.len());
        assert_eq!(u16_at(&buf, 4), (3 << 8) | 1);
        assert_eq!(&buf[18..20], &7u16.to_be_bytes());
    }

    #[test]
    fn parses_packet_messages() {
        let mut buf = Vec::new();
        for id in [5u32, 6] {
            let start = put_header(&mut buf, NFQNL_MSG_PACKET, 0, 0, 2, 0);
            let mut hdr = id.to_be_bytes().to_vec();
            hdr.extend_from_slice(&[8, 0, 1]);
            put_attr(&mut buf, NFQA_PACKET_HDR, &hdr);
            put_attr(&mut buf, NFQA_PAYLOAD, &[0x45, 0, 0, 84]);
            finish(&mut buf, start);
        }
        let mut out = Vec::new();
        assert_eq!(parse_packets(&buf, &mut out), Parsed::default());
        assert_eq!(out.iter().map(|p| p.id).collect::<Vec<_>>(), [5, 6]);
        assert_eq!(out[1].head(), &[0x45, 0, 0, 84]);
        assert_eq!(out[0].kernel_time_us, None);
        assert_eq!((out[0].len, out[0].gso), (4, false));
    }

    #[test]
    fn parses_an_aggregates_length_and_flag() {
        let mut buf = Vec::new();
        let start = put_header(&mut buf, NFQNL_MSG_PACKET, 0, 0, 2, 0);
        put_attr(&mut buf, NFQA_PACKET_HDR, &[0, 0, 0, 3, 8, 0, 1]);
        put_attr(&mut buf, NFQA_PAYLOAD, &[0x45; MAX_COPY]);
        put_attr(&mut buf, NFQA_CAP_LEN, &65_160u32.to_be_bytes());
        put_attr(&mut buf, NFQA_SKB_INFO, &NFQA_SKB_GSO.to_be_bytes());
        finish(&mut buf, start);
        let mut out = Vec::new();
        parse_packets(&buf, &mut out);
        assert_eq!(
            (out[0].len, out[0].gso, out[0].head_len),
            (65_160, true, MAX_COPY)
        );
    }

    #[test]
    fn parses_the_kernel_timestamp() {
        let mut buf = Vec::new();
        let start = put_header(&mut buf, NFQNL_MSG_PACKET, 0, 0, 2, 0);
        put_attr(&mut buf, NFQA_PACKET_HDR, &[0, 0, 0, 3, 8, 0, 1]);
        let mut stamp = 1_700_000_000u64.to_be_bytes().to_vec();
        stamp.extend_from_slice(&123_456u64.to_be_bytes());
        put_attr(&mut buf, NFQA_TIMESTAMP, &stamp);
        finish(&mut buf, start);
        let mut out = Vec::new();
        parse_packets(&buf, &mut out);
        assert_eq!(out[0].kernel_time_us, Some(1_700_000_000_123_456));
    }

    #[test]
    fn refused_verdicts_are_reported_not_fatal() {
        // NLMSG_ERROR { error: -ENOENT, the verdict's header (seq 0) } then a packet.
        let mut buf = Vec::new();
        buf.extend_from_slice(&36u32.to_ne_bytes());
        buf.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        buf.extend_from_slice(&[0u8; 10]);
        buf.extend_from_slice(&(-libc::ENOENT).to_ne_bytes());
        let mut echoed = Vec::new();
        let start = put_header(&mut echoed, NFQNL_MSG_VERDICT, 1, 0, 0, 7);
        finish(&mut echoed, start);
        buf.extend_from_slice(&echoed[..NLMSG_HDRLEN]);
        let start = put_header(&mut buf, NFQNL_MSG_PACKET, 0, 0, 2, 0);
        put_attr(&mut buf, NFQA_PACKET_HDR, &[0, 0, 0, 9, 8, 0, 1]);
        finish(&mut buf, start);
        let mut out = Vec::new();
        let parsed = parse_packets(&buf, &mut out);
        assert_eq!(parsed.errors, [(0, libc::ENOENT)]);
        assert_eq!(out.iter().map(|p| p.id).collect::<Vec<_>>(), [9]);
    }
}
