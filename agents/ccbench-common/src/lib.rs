//! Shared by the agent binaries: wall-clock timestamps, the stop flag set by SIGTERM/SIGINT, error exits.

pub mod traffic;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// SIGTERM and SIGINT set the stop flag; loops check it and finish cleanly (flushing output).
pub fn install_stop_handler() {
    let handler: extern "C" fn(libc::c_int) = on_signal;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe. No SA_RESTART,
    // so blocking calls return EINTR and loops see the flag promptly.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as usize;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
}

pub fn stop_requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Unix epoch seconds (CLOCK_REALTIME) with microsecond precision, as logs across hosts use.
pub fn unix_now() -> f64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    round_us(d.as_secs_f64())
}

pub fn round_us(seconds: f64) -> f64 {
    (seconds * 1e6).round() / 1e6
}

/// Sleep until the given Unix time (or until a stop is requested).
pub fn sleep_until_unix(target: f64) {
    loop {
        let left = target - unix_now();
        if left <= 0.0 || stop_requested() {
            return;
        }
        std::thread::sleep(Duration::from_secs_f64(left.min(0.05)));
    }
}

/// A failure the caller can act on. `usage` ones (bad arguments, missing capability) exit 2.
#[derive(Debug)]
pub struct AgentError {
    pub message: String,
    pub usage: bool,
}

impl AgentError {
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            usage: true,
        }
    }
    pub fn runtime(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            usage: false,
        }
    }
}

impl From<std::io::Error> for AgentError {
    fn from(e: std::io::Error) -> Self {
        AgentError::runtime(e.to_string())
    }
}

/// Exit with one JSON line on stderr naming the problem.
pub fn exit_with(error: AgentError) -> ! {
    eprintln!("{}", serde_json::json!({ "error": error.message }));
    std::process::exit(if error.usage { 2 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_have_microsecond_precision() {
        assert_eq!(round_us(1.000_000_49), 1.0);
        assert_eq!(round_us(1.000_000_51), 1.000_001);
        let now = unix_now();
        assert!(now > 1.6e9 && round_us(now) == now);
    }
}
