//! The socket layer: a UDP socket that sends a batch of equal-sized datagrams in one call (UDP
//! GSO, `UDP_SEGMENT`) and receives coalesced batches (`UDP_GRO`), falling back to one datagram
//! per call where the kernel lacks them, each batch with the time the kernel received it
//! (`SO_TIMESTAMPNS`); and waits precise enough for pacing (`Waiter`: ppoll with a 1 ns timer
//! slack, then a spin as long as this thread's measured wake-up lateness).

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// A GSO batch: at most 64 segments and one IPv4 datagram's worth of bytes.
pub const MAX_GSO_SEGMENTS: usize = 64;
pub const MAX_GSO_BYTES: usize = 65_000;

pub struct Socket {
    socket: UdpSocket,
    gso: bool,
    gro: bool,
}

fn setsockopt_int(fd: RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: value is a valid int for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const i32).cast(),
            size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn getsockopt_int(fd: RawFd, level: i32, name: i32) -> io::Result<i32> {
    let mut value: i32 = 0;
    let mut len = size_of::<i32>() as libc::socklen_t;
    // SAFETY: value and len are valid for writing.
    let rc =
        unsafe { libc::getsockopt(fd, level, name, (&mut value as *mut i32).cast(), &mut len) };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `addr` as the C socket calls take it: the storage and the length of its sockaddr_in or
/// sockaddr_in6. The agents' one conversion (the kernel-TCP sender's connect uses it too).
pub fn sockaddr_of(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            (storage, size_of::<libc::sockaddr_in>() as libc::socklen_t)
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            (storage, size_of::<libc::sockaddr_in6>() as libc::socklen_t)
        }
    }
}

fn socket_addr_from(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match storage.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says it is a sockaddr_in.
            let sin: &libc::sockaddr_in =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast() };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says it is a sockaddr_in6.
            let sin6: &libc::sockaddr_in6 =
                unsafe { &*(storage as *const libc::sockaddr_storage).cast() };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::V6(SocketAddrV6::new(
                ip,
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// One received buffer: `len` bytes of datagrams of `segment` bytes each (the last may be
/// shorter) from `peer`.
#[derive(Clone, Copy, Debug)]
pub struct Received {
    pub len: usize,
    pub segment: usize,
    pub peer: SocketAddr,
    /// When the kernel received it (CLOCK_REALTIME, since the Unix epoch), if it said: a time
    /// that does not include how long the program took to read it.
    pub kernel_ts: Option<Duration>,
}

/// How long ago a buffer stamped `kernel_ts` arrived (CLOCK_REALTIME now - the stamp); None
/// without a stamp or when the clock was stepped back past it.
pub fn received_ago(kernel_ts: Option<Duration>) -> Option<Duration> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    now.checked_sub(kernel_ts?)
}

impl Socket {
    pub fn bind(addr: SocketAddr) -> io::Result<Socket> {
        let socket = UdpSocket::bind(addr)?;
        let fd = socket.as_raw_fd();
        let gso = getsockopt_int(fd, libc::SOL_UDP, libc::UDP_SEGMENT).is_ok();
        let gro = setsockopt_int(fd, libc::SOL_UDP, libc::UDP_GRO, 1).is_ok();
        // Receive timestamps (software, taken as the kernel receives each packet): RTT samples
        // then measure the network, not the moments the program was not running.
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1);
        // Large buffers: a GRO batch or a window of ACKs must not overflow them. The FORCE
        // variants need CAP_NET_ADMIN; without it the sysctl maximum applies.
        for (force, plain) in [
            (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
            (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        ] {
            if setsockopt_int(fd, libc::SOL_SOCKET, force, 4 << 20).is_err() {
                let _ = setsockopt_int(fd, libc::SOL_SOCKET, plain, 4 << 20);
            }
        }
        Ok(Socket { socket, gso, gro })
    }

    /// A socket bound to an ephemeral port of the family of `peer`, connected to it.
    pub fn connect(peer: SocketAddr) -> io::Result<Socket> {
        let any = match peer.ip() {
            IpAddr::V4(_) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
            IpAddr::V6(_) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
        };
        let socket = Socket::bind(any)?;
        socket.socket.connect(peer)?;
        Ok(socket)
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }
    pub fn fd(&self) -> RawFd {
        self.socket.as_raw_fd()
    }
    pub fn gso(&self) -> bool {
        self.gso
    }
    pub fn gro(&self) -> bool {
        self.gro
    }

    /// Sends `buf` as datagrams of `segment` bytes (the last may be shorter) to `dst` (None:
    /// the connected peer). One system call with GSO; one per datagram otherwise.
    pub fn send_segments(
        &mut self,
        buf: &[u8],
        segment: usize,
        dst: Option<SocketAddr>,
    ) -> io::Result<()> {
        if buf.len() <= segment {
            return self.send_one(buf, dst, None);
        }
        if self.gso {
            match self.send_one(buf, dst, Some(segment as u16)) {
                Ok(()) => return Ok(()),
                // No GSO on this route (device without checksum offload): give it up.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EIO) | Some(libc::EINVAL)) => {
                    self.gso = false
                }
                Err(e) => return Err(e),
            }
        }
        for chunk in buf.chunks(segment) {
            self.send_one(chunk, dst, None)?;
        }
        Ok(())
    }

    fn send_one(&self, buf: &[u8], dst: Option<SocketAddr>, gso: Option<u16>) -> io::Result<()> {
        let mut iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: zeroed msghdr is valid; every pointer set below outlives the call.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        let name = dst.map(sockaddr_of);
        if let Some((storage, len)) = &name {
            msg.msg_name = (storage as *const libc::sockaddr_storage) as *mut libc::c_void;
            msg.msg_namelen = *len;
        }
        // u64 alignment for the control buffer, as cmsghdr requires.
        let mut control = [0u64; 4];
        if let Some(segment) = gso {
            // SAFETY: the buffer has room for one cmsg with a u16 payload.
            unsafe {
                let space = libc::CMSG_SPACE(size_of::<u16>() as u32) as usize;
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = space;
                let cmsg = libc::CMSG_FIRSTHDR(&msg);
                (*cmsg).cmsg_level = libc::SOL_UDP;
                (*cmsg).cmsg_type = libc::UDP_SEGMENT;
                (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as usize;
                std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), segment);
            }
        }
        loop {
            // SAFETY: msg is fully initialised above.
            let rc = unsafe { libc::sendmsg(self.fd(), &msg, 0) };
            if rc >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                _ => return Err(e),
            }
        }
    }

    /// One buffer of received datagrams without blocking; None when nothing is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<Received>> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: zeroed sockaddr_storage / msghdr are valid.
        let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_name = (&mut storage as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        let mut control = [0u64; 16];
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = size_of::<[u64; 16]>();
        // SAFETY: msg points at valid buffers.
        let rc = unsafe { libc::recvmsg(self.fd(), &mut msg, libc::MSG_DONTWAIT) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                // An ICMP error from an earlier datagram (e.g. port unreachable): not ours to
                // act on here; the transport's timers handle a missing peer.
                io::ErrorKind::ConnectionRefused => Ok(None),
                _ => Err(e),
            };
        }
        let len = rc as usize;
        let mut segment = len;
        let mut kernel_ts = None;
        // SAFETY: walking the control messages the kernel wrote into msg.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_UDP && (*cmsg).cmsg_type == libc::UDP_GRO {
                    let size = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<i32>());
                    if size > 0 {
                        segment = size as usize;
                    }
                } else if (*cmsg).cmsg_level == libc::SOL_SOCKET
                    && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
                {
                    let ts =
                        std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                    if ts.tv_sec > 0 && (0..1_000_000_000).contains(&ts.tv_nsec) {
                        kernel_ts = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
                    }
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        let Some(peer) = socket_addr_from(&storage) else {
            return Ok(None);
        };
        Ok(Some(Received {
            len,
            segment,
            peer,
            kernel_ts,
        }))
    }
}

/// Timer slack 1 ns for this thread (the default 50 µs would blur pacing).
pub fn set_fine_timer_slack() {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer argument.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// The spin before a deadline never drops below this...
pub const SPIN_MIN: Duration = Duration::from_micros(20);
/// ...nor exceeds this, nor half of the wait (a flow paced at gaps shorter than twice the
/// spin spins at most half its time).
pub const SPIN_MAX: Duration = Duration::from_micros(300);
/// The spin before the first wake-up has been measured.
pub const SPIN_INITIAL: Duration = Duration::from_micros(100);
/// The spin covers this quantile of the thread's measured wake-up lateness...
const LATENESS_QUANTILE: f64 = 0.995;
/// ...plus this guard.
const SPIN_GUARD: Duration = Duration::from_micros(20);
/// Step of the streaming quantile estimate: up `STEP * q` when a wake-up was later than the
/// estimate, down `STEP * (1 - q)` otherwise, so it settles where a fraction 1 - q are later.
const QUANTILE_STEP_US: f64 = 10.0;

/// Waits precise enough for pacing: sleep (ppoll, so an arriving datagram ends the wait) until a
/// margin before the deadline, then spin to it. A timer wake-up comes late by the host's wake-up
/// latency: on the 2-CPU development VM (a guest that halts when idle) 30-50 µs typically and
/// 85-110 µs at p99, at normal and real-time priority alike, so a fixed 60 µs spin left ~5% of
/// paced departures late by up to ~100 µs. The margin therefore follows the wake-ups this
/// thread actually gets: a streaming estimate of their 99.5th percentile (stochastic gradient
/// quantile, no history kept) plus a 20 µs guard, within [`SPIN_MIN`, `SPIN_MAX`] and at most
/// half of each wait. One per thread: it sets the thread's timer slack to 1 ns.
#[derive(Debug)]
pub struct Waiter {
    /// The estimated high quantile of wake-up lateness, µs.
    lateness_us: f64,
}

impl Default for Waiter {
    fn default() -> Self {
        Waiter::new()
    }
}

impl Waiter {
    pub fn new() -> Waiter {
        set_fine_timer_slack();
        Waiter {
            lateness_us: (SPIN_INITIAL - SPIN_GUARD).as_secs_f64() * 1e6,
        }
    }

    /// How long before a deadline the wait stops sleeping and spins (before the half-wait cap).
    pub fn spin(&self) -> Duration {
        (Duration::from_secs_f64(self.lateness_us.max(0.0) / 1e6) + SPIN_GUARD)
            .clamp(SPIN_MIN, SPIN_MAX)
    }

    /// One timer wake-up that came `late` after the time it was asked for.
    pub fn record_lateness(&mut self, late: Duration) {
        let late_us = late.as_secs_f64() * 1e6;
        if late_us > self.lateness_us {
            self.lateness_us += QUANTILE_STEP_US * LATENESS_QUANTILE;
        } else {
            self.lateness_us -= QUANTILE_STEP_US * (1.0 - LATENESS_QUANTILE);
        }
        // Bounded so that a long quiet spell or burst does not take long to undo.
        let max = (SPIN_MAX - SPIN_GUARD).as_secs_f64() * 1e6;
        self.lateness_us = self.lateness_us.clamp(0.0, max);
    }

    /// Waits until `fd` is readable or `deadline` (None: up to `max_wait`). Returns true when
    /// readable. A signal ends the wait early.
    pub fn wait(&mut self, fd: RawFd, deadline: Option<Instant>, max_wait: Duration) -> bool {
        let now = Instant::now();
        let limit = now + max_wait;
        let deadline = deadline.map_or(limit, |d| d.min(limit));
        if deadline <= now {
            return false;
        }
        let total = deadline - now;
        let spin = self.spin().min(total / 2);
        let sleep = total - spin;
        if !sleep.is_zero() {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            let ts = libc::timespec {
                tv_sec: sleep.as_secs() as libc::time_t,
                tv_nsec: sleep.subsec_nanos() as libc::c_long,
            };
            // SAFETY: pfd and ts are valid for the call.
            let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
            if rc != 0 {
                return rc > 0;
            }
            self.record_lateness(Instant::now().saturating_duration_since(now + sleep));
        }
        while Instant::now() < deadline {
            std::hint::spin_loop();
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_survive_the_round_trip_through_sockaddr() {
        for text in ["10.1.2.3:5001", "[fe80::1%7]:443", "[::1]:0"] {
            let addr: SocketAddr = text.parse().unwrap();
            let (storage, len) = sockaddr_of(addr);
            let expected = if addr.is_ipv4() {
                size_of::<libc::sockaddr_in>()
            } else {
                size_of::<libc::sockaddr_in6>()
            };
            assert_eq!(len as usize, expected, "{text}");
            assert_eq!(socket_addr_from(&storage), Some(addr), "{text}");
        }
    }

    #[test]
    fn received_datagrams_carry_the_kernels_receive_time() {
        let mut tx = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let rx = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let dst = rx.local_addr().unwrap();
        tx.send_segments(b"ping", 1400, Some(dst)).unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let mut buf = [0u8; 2048];
        let got = rx.recv(&mut buf).unwrap().expect("a datagram");
        assert_eq!(&buf[..got.len], b"ping");
        // Stamped on arrival, before the 30 ms this test waited to read it.
        let ago = received_ago(got.kernel_ts).expect("a receive timestamp");
        assert!(ago >= Duration::from_millis(29), "{ago:?}");
        assert!(ago < Duration::from_secs(1), "{ago:?}");
    }

    #[test]
    fn the_spin_follows_the_wake_ups_high_quantile_within_its_bounds() {
        let mut w = Waiter::new();
        assert_eq!(w.spin(), SPIN_INITIAL);
        // Wake-ups 1..=200 µs late, evenly: the 99.5th percentile is ~199 µs.
        for round in 0..100 {
            for late in 1..=200u64 {
                // Shuffled order (a fixed stride through 1..=200).
                let late = (late * 73 + round) % 200 + 1;
                w.record_lateness(Duration::from_micros(late));
            }
        }
        let spin = w.spin().as_secs_f64() * 1e6;
        assert!((205.0..=235.0).contains(&spin), "{spin} µs");
        // Never beyond the cap, however late the wake-ups.
        for _ in 0..1000 {
            w.record_lateness(Duration::from_millis(5));
        }
        assert_eq!(w.spin(), SPIN_MAX);
        // Punctual wake-ups bring it down to the floor.
        for _ in 0..100_000 {
            w.record_lateness(Duration::ZERO);
        }
        assert_eq!(w.spin(), SPIN_MIN.max(SPIN_GUARD));
    }

    #[test]
    fn a_wait_ends_at_its_deadline_or_when_a_datagram_arrives() {
        let mut w = Waiter::new();
        let mut tx = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let rx = Socket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let start = Instant::now();
        let deadline = start + Duration::from_millis(5);
        assert!(!w.wait(rx.fd(), Some(deadline), Duration::from_secs(1)));
        // The spin makes the deadline a lower bound (how much later is scheduling, not tested).
        assert!(Instant::now() >= deadline);
        tx.send_segments(b"ping", 1400, Some(rx.local_addr().unwrap()))
            .unwrap();
        assert!(w.wait(rx.fd(), None, Duration::from_secs(5)));
    }
}
