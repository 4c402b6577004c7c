//! ccbench-link: userspace link emulation on NFQUEUE. The kernel keeps each packet; this program
//! only sees its id and decides when to release it. This first version is a delay line: every
//! packet is accepted `--delay-us` after it was queued, in arrival order (no reordering).
//!
//! It never installs firewall rules: the caller adds the NFQUEUE rule inside its own network
//! namespace (see docs/contracts.md), so nothing is left on the host if this process dies.

use ccbench_common::{exit_with, install_stop_handler, stop_requested, AgentError};
use clap::{Parser, Subcommand};
use nfq::{Queue, Verdict};
use serde_json::json;
use std::collections::VecDeque;
use std::io::{ErrorKind, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(name = "ccbench-link", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Delay every packet of an NFQUEUE queue by a fixed time.
    Delay {
        #[arg(long)]
        queue_num: u16,
        #[arg(long)]
        delay_us: u64,
        /// Where to write the counters when stopped (JSON).
        #[arg(long)]
        stats_out: Option<PathBuf>,
    },
}

fn fail(message: String, code: i32) -> ! {
    exit_with(if code == 2 {
        AgentError::usage(message)
    } else {
        AgentError::runtime(message)
    })
}

/// Lateness of releases (actual - due) in microseconds, kept for percentiles.
#[derive(Default)]
struct Lateness {
    samples_us: Vec<u32>,
}

impl Lateness {
    fn record(&mut self, late: Duration) {
        self.samples_us
            .push(late.as_micros().min(u32::MAX as u128) as u32);
    }

    fn percentile(&mut self, p: f64) -> Option<u32> {
        if self.samples_us.is_empty() {
            return None;
        }
        self.samples_us.sort_unstable();
        let rank = ((self.samples_us.len() - 1) as f64 * p / 100.0).round() as usize;
        Some(self.samples_us[rank])
    }
}

/// Length of an IPv4 or IPv6 packet from its header (0 when the header is missing).
fn ip_packet_len(header: &[u8]) -> usize {
    match header.first().map(|b| b >> 4) {
        Some(4) if header.len() >= 4 => u16::from_be_bytes([header[2], header[3]]) as usize,
        Some(6) if header.len() >= 6 => 40 + u16::from_be_bytes([header[4], header[5]]) as usize,
        _ => 0,
    }
}

/// Packets held, in arrival order, each with the instant it is due.
struct DelayLine {
    delay: Duration,
    held: VecDeque<(Instant, nfq::Message)>,
    packets: u64,
    bytes: u64,
    lateness: Lateness,
}

impl DelayLine {
    fn admit(&mut self, arrived: Instant, msg: nfq::Message) {
        self.packets += 1;
        self.bytes += ip_packet_len(msg.get_payload()) as u64;
        self.held.push_back((arrived + self.delay, msg));
    }

    /// Accept every packet that is due; returns how long until the next one is.
    fn release_due(&mut self, queue: &mut Queue) -> std::io::Result<Option<Duration>> {
        loop {
            let now = Instant::now();
            match self.held.front() {
                Some((due, _)) if *due <= now => {
                    let (due, mut msg) = self.held.pop_front().unwrap();
                    msg.set_verdict(Verdict::Accept);
                    queue.verdict(msg)?;
                    self.lateness.record(now - due);
                }
                Some((due, _)) => return Ok(Some(*due - now)),
                None => return Ok(None),
            }
        }
    }
}

fn run_delay(queue_num: u16, delay_us: u64, stats_out: Option<PathBuf>) -> std::io::Result<()> {
    let mut queue = Queue::open()?;
    queue.bind(queue_num).map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot bind NFQUEUE {queue_num}: {e}"))
    })?;
    // Only the id and the IP header (for byte counts) are needed: copy no more than that.
    queue.set_copy_range(queue_num, 40)?;
    queue.set_queue_max_len(queue_num, 65_536)?;
    queue.set_nonblocking(true);
    println!("{}", json!({"event": "ready", "queue_num": queue_num}));
    std::io::stdout().flush()?;

    let mut line = DelayLine {
        delay: Duration::from_micros(delay_us),
        held: VecDeque::new(),
        packets: 0,
        bytes: 0,
        lateness: Lateness::default(),
    };
    while !stop_requested() {
        let mut received = false;
        loop {
            match queue.recv() {
                Ok(msg) => {
                    line.admit(Instant::now(), msg);
                    received = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => break,
                Err(e) => return Err(e),
            }
        }
        let next_due = line.release_due(&mut queue)?;
        if !received {
            // Nothing arrived: sleep briefly, never past the next release. New packets wait in
            // the kernel meanwhile, so their arrival time is read at most this late.
            let nap = Duration::from_micros(100);
            std::thread::sleep(next_due.map_or(nap, |d| d.min(nap)));
        }
    }
    // Release what is still held so that no packet stays queued in the kernel.
    for (_, mut msg) in line.held.drain(..) {
        msg.set_verdict(Verdict::Accept);
        let _ = queue.verdict(msg);
    }
    let _ = queue.unbind(queue_num);
    if let Some(path) = stats_out {
        let stats = json!({
            "queue_num": queue_num, "delay_us": delay_us,
            "packets": line.packets, "bytes": line.bytes,
            "late_us_p50": line.lateness.percentile(50.0),
            "late_us_p99": line.lateness.percentile(99.0),
            "late_us_max": line.lateness.percentile(100.0),
        });
        std::fs::write(&path, format!("{stats}\n"))?;
    }
    Ok(())
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => fail(e.to_string().trim().to_string(), 2),
        Err(e) => e.exit(),
    };
    install_stop_handler();
    match cli.command {
        Command::Delay {
            queue_num,
            delay_us,
            stats_out,
        } => {
            if let Err(e) = run_delay(queue_num, delay_us, stats_out) {
                let code = if e.kind() == ErrorKind::PermissionDenied {
                    2
                } else {
                    1
                };
                fail(format!("ccbench-link delay: {e}"), code);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_lengths_come_from_the_header() {
        assert_eq!(ip_packet_len(&[0x45, 0, 0x05, 0xdc]), 1500);
        assert_eq!(ip_packet_len(&[0x60, 0, 0, 0, 0x05, 0xb4]), 1500);
        assert_eq!(ip_packet_len(&[]), 0);
    }

    #[test]
    fn lateness_percentiles() {
        let mut l = Lateness::default();
        for us in [5u64, 1, 3, 2, 4] {
            l.record(Duration::from_micros(us));
        }
        assert_eq!(l.percentile(50.0), Some(3));
        assert_eq!(l.percentile(100.0), Some(5));
        assert_eq!(Lateness::default().percentile(50.0), None);
    }
}
