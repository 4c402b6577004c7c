//! `ccbench-agent recv`: accept any number of TCP connections, discard their data, and log the
//! bytes each one received per interval (goodput) plus one line when it closes.

use crate::args::MonitorArgs;
use ccbench_common::{stop_requested, unix_now, AgentError};
use serde_json::json;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct RecvArgs {
    #[arg(long)]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub monitor: MonitorArgs,
}

struct Conn {
    id: u64,
    peer: SocketAddr,
    total: AtomicU64,
    first_byte_ts: Mutex<Option<f64>>,
    last_byte_ts: Mutex<Option<f64>>,
    closed: AtomicBool,
}

struct Tracked {
    conn: Arc<Conn>,
    reported: u64,
}

pub fn run(args: RecvArgs) -> Result<(), AgentError> {
    let mut out = args.monitor.output.create()?;
    let listener = TcpListener::bind(args.listen)
        .map_err(|e| AgentError::usage(format!("cannot listen on {}: {e}", args.listen)))?;
    listener.set_nonblocking(true)?;
    // The bound address: with port 0 the kernel picked one.
    let bound = listener.local_addr()?;
    println!(
        "{}",
        json!({"event": "listening", "addr": bound.to_string()})
    );
    std::io::stdout().flush()?;

    let interval = args.monitor.output.interval();
    let start = Instant::now();
    let until = args.monitor.until(start);
    let mut conns: Vec<Tracked> = Vec::new();
    let mut next_report = start + interval;
    let mut next_id = 0u64;
    loop {
        let finished = stop_requested() || until.is_some_and(|u| Instant::now() >= u);
        loop {
            match listener.accept() {
                Ok((stream, peer)) => {
                    let conn = Arc::new(Conn {
                        id: next_id,
                        peer,
                        total: AtomicU64::new(0),
                        first_byte_ts: Mutex::new(None),
                        last_byte_ts: Mutex::new(None),
                        closed: AtomicBool::new(false),
                    });
                    next_id += 1;
                    let reader = Arc::clone(&conn);
                    std::thread::spawn(move || drain(stream, &reader));
                    conns.push(Tracked { conn, reported: 0 });
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => break,
                Err(e) => return Err(AgentError::runtime(format!("accept failed: {e}"))),
            }
        }
        let now = Instant::now();
        if now >= next_report || finished {
            report(&mut out, &mut conns, finished)?;
            while next_report <= now {
                next_report += interval;
            }
        }
        if finished {
            break;
        }
        let wait = next_report.saturating_duration_since(Instant::now());
        std::thread::sleep(wait.min(Duration::from_millis(5)));
    }
    out.flush()?;
    Ok(())
}

/// One `recv` line per connection that got bytes since the last report; `close` lines for
/// connections that ended (or all, when the receiver itself stops).
fn report(out: &mut impl Write, conns: &mut Vec<Tracked>, closing: bool) -> std::io::Result<()> {
    let ts = unix_now();
    for t in conns.iter_mut() {
        // Read `closed` before `total`, so a closed connection's last bytes are reported.
        let closed = t.conn.closed.load(Ordering::SeqCst) || closing;
        let total = t.conn.total.load(Ordering::SeqCst);
        if total > t.reported {
            let line = json!({"ts": ts, "type": "recv", "conn": t.conn.id,
                "peer": t.conn.peer.to_string(), "bytes": total - t.reported,
                "total_bytes": total});
            writeln!(out, "{line}")?;
            t.reported = total;
        }
        if closed {
            let line = json!({"ts": ts, "type": "close", "conn": t.conn.id,
                "peer": t.conn.peer.to_string(), "total_bytes": total,
                "first_byte_ts": *t.conn.first_byte_ts.lock().unwrap(),
                "last_byte_ts": *t.conn.last_byte_ts.lock().unwrap()});
            writeln!(out, "{line}")?;
        }
    }
    conns.retain(|t| !t.conn.closed.load(Ordering::SeqCst) && !closing);
    Ok(())
}

fn drain(mut stream: TcpStream, conn: &Conn) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let ts = unix_now();
                conn.first_byte_ts.lock().unwrap().get_or_insert(ts);
                *conn.last_byte_ts.lock().unwrap() = Some(ts);
                conn.total.fetch_add(n as u64, Ordering::SeqCst);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop_requested() {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    conn.closed.store(true, Ordering::SeqCst);
}
