//! `ccbench-agent send`: one bulk kernel-TCP flow with the requested controller, sampling
//! tcp_info every interval on its own thread so that the sending loop is never delayed by it.

use crate::{sock, tcpinfo};
use ccbench_common::{round_us, sleep_until_unix, stop_requested, unix_now, AgentError};
use serde_json::json;
use std::fs::File;
use std::io::{BufWriter, ErrorKind, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct SendArgs {
    pub dst: SocketAddr,
    pub cc: String,
    pub duration_s: f64,
    pub interval_ms: u64,
    pub out: PathBuf,
    pub start_at: Option<f64>,
    pub flow_id: u32,
}

const CHUNK: usize = 128 * 1024;

pub fn run(args: SendArgs) -> Result<(), AgentError> {
    let file = File::create(&args.out).map_err(|e| {
        AgentError::usage(format!("cannot create --out {}: {e}", args.out.display()))
    })?;
    let out = BufWriter::with_capacity(1 << 20, file);
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
    stream.set_write_timeout(Some(Duration::from_millis(100)))?;
    if let Some(at) = args.start_at {
        sleep_until_unix(at);
    }
    let start_ts = unix_now();
    let interval = Duration::from_millis(args.interval_ms.max(1));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = Arc::clone(&sampling);
        let flow = args.flow_id;
        std::thread::spawn(move || sample_loop(fd, flow, interval, &sampling, out))
    };

    let end = Instant::now() + Duration::from_secs_f64(args.duration_s);
    let buf = vec![0x5au8; CHUNK];
    let mut failure = None;
    while Instant::now() < end && !stop_requested() {
        match stream.write(&buf) {
            Ok(_) => {}
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
    sampling.store(false, Ordering::SeqCst);
    let mut out = sampler
        .join()
        .map_err(|_| AgentError::runtime("sampler thread panicked"))??;
    let info = tcpinfo::read(fd)?;
    writeln!(out, "{}", info.to_json(unix_now(), args.flow_id))?;
    let summary = json!({
        "ts": unix_now(), "type": "summary", "flow": args.flow_id, "cc": args.cc,
        "local": local.to_string(),
        "start_ts": round_us(start_ts), "end_ts": round_us(end_ts),
        "bytes_sent": info.bytes_sent, "bytes_acked": info.bytes_acked,
        "retransmits": info.total_retrans,
    });
    writeln!(out, "{summary}")?;
    out.flush()?;
    // The flow ends now: reset the connection instead of letting the kernel keep sending what
    // is still in the socket buffer, which would run the flow past its duration.
    sock::abort_on_close(fd);
    drop(stream);
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
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
