//! `ccbench-agent send`: one kernel-TCP flow with the requested controller, sampling
//! tcp_info every interval on its own thread so that the sending loop is never delayed by it.
//! The traffic model decides how much the application has handed over by each moment (bulk:
//! always more); the sender writes only that, and sleeps while it has caught up.

use crate::args::FlowArgs;
use crate::{sock, tcpinfo};
use ccbench_common::traffic::TrafficArgs;
use ccbench_common::{round_us, stop_requested, unix_now, AgentError};
use serde_json::json;
use std::fs::File;
use std::io::{BufWriter, ErrorKind, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct SendArgs {
    #[arg(long)]
    pub dst: SocketAddr,
    #[arg(long)]
    pub cc: String,
    #[command(flatten)]
    pub flow: FlowArgs,
    #[command(flatten)]
    pub traffic: TrafficArgs,
}

const CHUNK: usize = 128 * 1024;
/// How often a sender whose data is all written checks whether it is all acknowledged.
const ACK_POLL: Duration = Duration::from_millis(1);
/// Longest a write blocks on a full socket buffer: the flow ends at most this long after its
/// duration (a 128 KB chunk takes 100 ms to drain at 10 Mbit/s, so a longer timeout ran flows
/// that much past their end).
const WRITE_TIMEOUT: Duration = Duration::from_millis(10);
/// Longest single sleep, so that a stop request is seen promptly.
const MAX_SLEEP: Duration = Duration::from_millis(50);

pub fn run(args: SendArgs) -> Result<(), AgentError> {
    args.flow.check()?;
    let mut traffic = args.traffic.build()?;
    let out = args.flow.output.create()?;
    let mut stream = sock::connect_with_cc(args.dst, &args.cc)?;
    let fd = stream.as_raw_fd();
    // The sender's address and port identify the flow in the BPF controllers' state trace.
    let local = stream.local_addr()?;
    let actual = sock::congestion_of(fd)?;
    if actual != args.cc {
        return Err(AgentError::usage(format!(
            "congestion control '{}' was requested but the socket uses '{actual}'",
            args.cc
        )));
    }
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    args.flow.wait_for_start()?;
    let flow_start = Instant::now();
    let start_ts = unix_now();
    let interval = args.flow.output.interval();
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = Arc::clone(&sampling);
        let flow = args.flow.flow_id;
        std::thread::spawn(move || sample_loop(fd, flow, interval, &sampling, out))
    };

    let end = flow_start + Duration::from_secs_f64(args.flow.duration_s);
    let buf = vec![0x5au8; CHUNK];
    let mut failure = None;
    let mut written: u64 = 0;
    // The application's data ran out and every byte of it was acknowledged (fixed size).
    let mut completed = false;
    loop {
        let now = Instant::now();
        if now >= end || stop_requested() {
            break;
        }
        let now_s = (now - flow_start).as_secs_f64();
        let available = traffic.available(now_s);
        if written >= available {
            // Caught up with the application: wait for its next data or, when no more will
            // come, for the acknowledgement of the last byte.
            match traffic.next_change(now_s) {
                Some(at_s) => {
                    let at = Duration::try_from_secs_f64(at_s)
                        .ok()
                        .and_then(|offset| flow_start.checked_add(offset))
                        .unwrap_or(end);
                    sleep_until(at.min(end));
                }
                // Errors end the loop (not `?`) so the samples and summary are still written.
                None => match unacknowledged_bytes(fd) {
                    Ok(0) => {
                        completed = true;
                        break;
                    }
                    Ok(_) => sleep_until((now + ACK_POLL).min(end)),
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                },
            }
            continue;
        }
        let len = (available - written).min(CHUNK as u64) as usize;
        match stream.write(&buf[..len]) {
            Ok(sent) => written += sent as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => {
                failure = Some(AgentError::runtime(format!(
                    "sending to {} failed: {e}",
                    args.dst
                )));
                break;
            }
        }
    }
    let end_ts = unix_now();
    let offered = traffic.available(flow_start.elapsed().as_secs_f64());
    sampling.store(false, Ordering::SeqCst);
    let mut out = sampler
        .join()
        .map_err(|_| AgentError::runtime("sampler thread panicked"))??;
    let info = tcpinfo::read(fd)?;
    writeln!(out, "{}", info.to_json(unix_now(), args.flow.flow_id))?;
    let summary = json!({
        "ts": unix_now(), "type": "summary", "flow": args.flow.flow_id, "cc": args.cc,
        "local": local.to_string(),
        "start_ts": round_us(start_ts), "end_ts": round_us(end_ts),
        "bytes_sent": info.bytes_sent, "bytes_acked": info.bytes_acked,
        "retransmits": info.total_retrans,
        "traffic": args.traffic.traffic.name(),
        // Bytes the application made available during the flow; null for bulk (unlimited).
        "bytes_offered": (offered != u64::MAX).then_some(offered),
        "completed": completed,
    });
    writeln!(out, "{summary}")?;
    out.flush()?;
    // The flow ends now: reset the connection instead of letting the kernel keep sending what
    // is still in the socket buffer, which would run the flow past its duration. A completed
    // flow has nothing left to send and closes normally (the receiver sees its end).
    if !completed {
        sock::abort_on_close(fd);
    }
    drop(stream);
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Sleep until `target` (or until a stop is requested).
fn sleep_until(target: Instant) {
    loop {
        let now = Instant::now();
        if now >= target || stop_requested() {
            return;
        }
        std::thread::sleep((target - now).min(MAX_SLEEP));
    }
}

/// Bytes written to the socket and not yet acknowledged by the peer (SIOCOUTQ: write_seq -
/// snd_una, so sent-and-unacked plus not-yet-sent).
fn unacknowledged_bytes(fd: RawFd) -> Result<u32, AgentError> {
    let mut queued: libc::c_int = 0;
    // SAFETY: TIOCOUTQ (= SIOCOUTQ) writes one int through the pointer.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut queued) };
    if rc != 0 {
        return Err(AgentError::runtime(format!(
            "SIOCOUTQ failed: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(queued.max(0) as u32)
}

/// Sample on an absolute schedule (start + k * interval), so sampling does not drift.
fn sample_loop(
    fd: RawFd,
    flow: u32,
    interval: Duration,
    sampling: &AtomicBool,
    mut out: BufWriter<File>,
) -> Result<BufWriter<File>, AgentError> {
    let start = Instant::now();
    let mut k: u32 = 1;
    while sampling.load(Ordering::SeqCst) {
        let next = start + interval * k;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        k += 1;
        if let Ok(info) = tcpinfo::read(fd) {
            writeln!(out, "{}", info.to_json(unix_now(), flow))?;
        }
    }
    Ok(out)
}
