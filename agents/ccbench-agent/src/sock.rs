//! The few socket calls std does not offer: choosing the congestion controller before connect.

use ccbench_common::AgentError;
use ccbench_transport::udp::sockaddr_of;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{FromRawFd, RawFd};

pub fn available_congestion_controls() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

fn set_congestion(fd: RawFd, cc: &str) -> std::io::Result<()> {
    // SAFETY: cc is a valid buffer of cc.len() bytes.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr().cast(),
            cc.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Read back the controller the kernel actually uses for the socket.
pub fn congestion_of(fd: RawFd) -> std::io::Result<String> {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is valid for len bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let name = &buf[..len as usize];
    let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
}

/// A TCP socket using controller `cc`, connected to `dst`.
pub fn connect_with_cc(dst: SocketAddr, cc: &str) -> Result<TcpStream, AgentError> {
    if cc.is_empty() || cc.len() >= 16 {
        return Err(AgentError::usage(format!(
            "congestion control name {cc:?} is invalid"
        )));
    }
    let family = if dst.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket(2); the fd is owned by the TcpStream built right after.
    let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    // SAFETY: fd is a fresh, valid socket we own.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    if let Err(e) = set_congestion(fd, cc) {
        let reason = match e.raw_os_error() {
            Some(libc::ENOENT) => "is not available on this host".to_string(),
            Some(libc::EPERM) => {
                "is not allowed for this user (net.ipv4.tcp_allowed_congestion_control)".into()
            }
            _ => format!("cannot be set: {e}"),
        };
        return Err(AgentError::usage(format!(
            "congestion control '{cc}' {reason} (available: {})",
            available_congestion_controls()
        )));
    }
    let (storage, len) = sockaddr_of(dst);
    // SAFETY: storage holds a valid sockaddr of len bytes.
    let rc = unsafe { libc::connect(fd, (&storage as *const libc::sockaddr_storage).cast(), len) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        return Err(AgentError::runtime(format!("cannot connect to {dst}: {e}")));
    }
    Ok(stream)
}

/// SO_LINGER {on, 0}: close(2) resets the connection and discards unsent data.
pub fn abort_on_close(fd: RawFd) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: linger is a valid struct of the given size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}
