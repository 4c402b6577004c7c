//! `ccbench-agent urecv`: the receiving end of ccbench's userspace UDP transport. One thread
//! serves any number of flows (keyed by the sender's address and port plus the flow id):
//! verifies every byte, acknowledges (in GSO batches), runs the algorithm's receiver half, and
//! logs goodput per interval and one `close` line per flow.

use crate::args::MonitorArgs;
use ccbench_cc::Config;
use ccbench_common::{stop_requested, unix_now, AgentError};
use ccbench_transport::receiver::FlowReceiver;
use ccbench_transport::udp::{Socket, Waiter, MAX_GSO_SEGMENTS};
use ccbench_transport::wire::{self, Packet};
use serde_json::{json, Value};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct URecvArgs {
    #[arg(long)]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub monitor: MonitorArgs,
    /// Acknowledge every second packet (or after 40 ms) instead of every packet.
    #[arg(long)]
    pub delayed_acks: bool,
}

// `--delayed-acks` turns delayed ACKs on: that is the spec's default only while it is off.
const _: () = assert!(
    !ccbench_transport::defaults::DELAYED_ACKS,
    "transport.delayed_acks defaults to true: urecv needs a --no-delayed-acks flag instead"
);

/// A flow that has received nothing for this long without a FIN is closed (its sender died).
pub const IDLE_LIMIT: Duration = Duration::from_secs(30);
/// Closed flows whose FIN_ACK is repeated when their FIN is (a lost FIN_ACK).
const TOMBSTONES_KEPT: usize = 4096;

type FlowKey = (SocketAddr, u32);

struct Flow {
    conn: u64,
    peer: SocketAddr,
    flow: u32,
    cc: String,
    rx: FlowReceiver,
    reported: u64,
    first_byte_ts: Option<f64>,
    last_byte_ts: Option<f64>,
    last_packet: Instant,
}

/// The HELLO's configuration: a receiver for the flow, or the reason to refuse it.
fn receiver_for(
    hello: &wire::Hello,
    now: Duration,
    delayed_acks: bool,
) -> Result<(FlowReceiver, String), String> {
    let config: Value =
        serde_json::from_str(&hello.json).map_err(|e| format!("HELLO is not JSON: {e}"))?;
    let cc = config["cc"]
        .as_str()
        .ok_or("HELLO lacks the algorithm id 'cc'")?
        .to_string();
    let mss = config["mss"]
        .as_u64()
        .filter(|m| (1..=wire::MAX_PAYLOAD as u64).contains(m))
        .ok_or("HELLO lacks a valid 'mss'")? as u32;
    let reliable = config["reliable"]
        .as_bool()
        .ok_or("HELLO lacks 'reliable'")?;
    let seed = config["seed"].as_u64().unwrap_or(1);
    let mut params = BTreeMap::new();
    if let Some(map) = config["params"].as_object() {
        for (name, value) in map {
            let v = value
                .as_f64()
                .ok_or_else(|| format!("HELLO parameter '{name}' is not a number"))?;
            params.insert(name.clone(), v);
        }
    }
    let controller =
        ccbench_cc::new_receiver(&cc, &Config { mss, params, seed }).map_err(|e| e.0)?;
    Ok((
        FlowReceiver::new(hello.flow, reliable, mss, controller, now, delayed_acks),
        cc,
    ))
}

/// ACKs for one peer, sent together (GSO: they are all 40 bytes).
struct AckBatch {
    peer: Option<SocketAddr>,
    buf: Vec<u8>,
}

impl AckBatch {
    fn push(
        &mut self,
        socket: &mut Socket,
        peer: SocketAddr,
        ack: &wire::AckPacket,
    ) -> std::io::Result<()> {
        if self.peer != Some(peer) || self.buf.len() >= MAX_GSO_SEGMENTS * wire::ACK_LEN {
            self.flush(socket)?;
        }
        self.peer = Some(peer);
        self.buf.extend_from_slice(&wire::encode_ack(ack));
        Ok(())
    }

    fn flush(&mut self, socket: &mut Socket) -> std::io::Result<()> {
        if let Some(peer) = self.peer.take() {
            if !self.buf.is_empty() {
                send_best_effort(socket, &self.buf, wire::ACK_LEN, peer)?;
            }
        }
        self.buf.clear();
        Ok(())
    }
}

/// A reply that cannot be delivered (the sender is gone, a full buffer) is dropped, as the
/// network would drop it; the sender's timers cope.
fn send_best_effort(
    socket: &mut Socket,
    buf: &[u8],
    segment: usize,
    peer: SocketAddr,
) -> std::io::Result<()> {
    match socket.send_segments(buf, segment, Some(peer)) {
        Err(e)
            if e.raw_os_error() == Some(libc::ENOBUFS)
                || e.kind() == std::io::ErrorKind::ConnectionRefused =>
        {
            Ok(())
        }
        other => other,
    }
}

fn close_line(f: &Flow, ts: f64) -> Value {
    json!({"ts": ts, "type": "close", "conn": f.conn, "peer": f.peer.to_string(),
        "flow": f.flow, "cc": f.cc, "total_bytes": f.rx.unique_bytes(),
        "first_byte_ts": f.first_byte_ts, "last_byte_ts": f.last_byte_ts,
        "duplicates": f.rx.duplicates(), "missing_pkts": f.rx.missing_pkts(),
        "integrity": f.rx.integrity()})
}

fn recv_line(out: &mut impl Write, f: &mut Flow, ts: f64) -> std::io::Result<()> {
    let total = f.rx.unique_bytes();
    if total > f.reported {
        let line = json!({"ts": ts, "type": "recv", "conn": f.conn, "peer": f.peer.to_string(),
            "flow": f.flow, "bytes": total - f.reported, "total_bytes": total});
        writeln!(out, "{line}")?;
        f.reported = total;
    }
    Ok(())
}

pub fn run(args: URecvArgs) -> Result<(), AgentError> {
    let mut out = args.monitor.output.create()?;
    let mut socket = Socket::bind(args.listen)
        .map_err(|e| AgentError::usage(format!("cannot listen on {}: {e}", args.listen)))?;
    let bound = socket.local_addr()?;
    println!(
        "{}",
        json!({"event": "listening", "addr": bound.to_string()})
    );
    std::io::stdout().flush()?;

    let mut waiter = Waiter::new();
    let clock = Instant::now();
    let interval = args.monitor.output.interval();
    let until = args.monitor.until(clock);
    let mut next_report = clock + interval;
    let mut flows: HashMap<FlowKey, Flow> = HashMap::new();
    let mut closed: HashMap<FlowKey, wire::FinAck> = HashMap::new();
    let mut next_conn = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    let mut acks = AckBatch {
        peer: None,
        buf: Vec::with_capacity(MAX_GSO_SEGMENTS * wire::ACK_LEN),
    };
    loop {
        let finished = stop_requested() || until.is_some_and(|u| Instant::now() >= u);
        for _ in 0..64 {
            let Some(rx) = socket.recv(&mut buf)? else {
                break;
            };
            let now_i = Instant::now();
            let now = now_i - clock;
            let ts = unix_now();
            for datagram in buf[..rx.len].chunks(rx.segment.max(1)) {
                let Ok(packet) = wire::decode(datagram) else {
                    continue;
                };
                match packet {
                    Packet::Data(header, payload) => {
                        let Some(f) = flows.get_mut(&(rx.peer, header.flow)) else {
                            continue;
                        };
                        f.last_packet = now_i;
                        let (ack, new_bytes) = f.rx.on_data(now, &header, payload);
                        if new_bytes > 0 {
                            f.first_byte_ts.get_or_insert(ts);
                            f.last_byte_ts = Some(ts);
                        }
                        if let Some(ack) = ack {
                            acks.push(&mut socket, rx.peer, &ack)?;
                        }
                    }
                    Packet::Hello(hello) => {
                        let key = (rx.peer, hello.flow);
                        let refused = match flows.entry(key) {
                            // A repeated HELLO (our HELLO_ACK was lost): answer again.
                            Entry::Occupied(_) => None,
                            Entry::Vacant(slot) => {
                                closed.remove(&key);
                                match receiver_for(&hello, now, args.delayed_acks) {
                                    Ok((rx_state, cc)) => {
                                        slot.insert(Flow {
                                            conn: next_conn,
                                            peer: rx.peer,
                                            flow: hello.flow,
                                            cc,
                                            rx: rx_state,
                                            reported: 0,
                                            first_byte_ts: None,
                                            last_byte_ts: None,
                                            last_packet: now_i,
                                        });
                                        next_conn += 1;
                                        None
                                    }
                                    Err(reason) => Some(reason),
                                }
                            }
                        };
                        let answer = wire::encode_hello_ack(&wire::HelloAck {
                            flow: hello.flow,
                            echo_sent_us: hello.sent_us,
                            refused,
                        });
                        acks.flush(&mut socket)?;
                        send_best_effort(&mut socket, &answer, answer.len(), rx.peer)?;
                    }
                    Packet::Fin(fin) => {
                        let key = (rx.peer, fin.flow);
                        acks.flush(&mut socket)?;
                        let answer = if let Some(mut f) = flows.remove(&key) {
                            let answer = f.rx.on_fin(&fin);
                            recv_line(&mut out, &mut f, ts)?;
                            writeln!(out, "{}", close_line(&f, ts))?;
                            if closed.len() >= TOMBSTONES_KEPT {
                                closed.clear();
                            }
                            closed.insert(key, answer);
                            Some(answer)
                        } else {
                            closed.get(&key).copied()
                        };
                        if let Some(answer) = answer {
                            let bytes = wire::encode_fin_ack(&wire::FinAck {
                                echo_sent_us: fin.sent_us,
                                ..answer
                            });
                            send_best_effort(&mut socket, &bytes, bytes.len(), rx.peer)?;
                        }
                    }
                    Packet::Ack(_) | Packet::HelloAck(_) | Packet::FinAck(_) => {}
                }
            }
        }
        acks.flush(&mut socket)?;
        let now_i = Instant::now();
        let now = now_i - clock;
        let mut next_ack_deadline: Option<Duration> = None;
        for f in flows.values_mut() {
            if let Some(ack) = f.rx.poll_delayed_ack(now) {
                acks.push(&mut socket, f.peer, &ack)?;
            }
            if let Some(d) = f.rx.ack_deadline() {
                next_ack_deadline = Some(next_ack_deadline.map_or(d, |n| n.min(d)));
            }
        }
        acks.flush(&mut socket)?;
        if now_i >= next_report || finished {
            let ts = unix_now();
            for f in flows.values_mut() {
                recv_line(&mut out, f, ts)?;
            }
            // Flows whose sender vanished, or all of them when the receiver stops.
            let ending: Vec<FlowKey> = flows
                .iter()
                .filter(|(_, f)| finished || now_i - f.last_packet >= IDLE_LIMIT)
                .map(|(k, _)| *k)
                .collect();
            let mut ending: Vec<Flow> = ending.iter().filter_map(|k| flows.remove(k)).collect();
            ending.sort_by_key(|f| f.conn);
            for f in &ending {
                writeln!(out, "{}", close_line(f, ts))?;
            }
            while next_report <= now_i {
                next_report += interval;
            }
        }
        if finished {
            break;
        }
        let wake = [
            Some(next_report),
            next_ack_deadline.map(|d| clock + d),
            until,
        ]
        .into_iter()
        .flatten()
        .min();
        waiter.wait(socket.fd(), wake, Duration::from_millis(50));
    }
    out.flush()?;
    Ok(())
}
