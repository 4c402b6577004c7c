//! `ccbench-agent usend`: one flow over ccbench's userspace UDP transport, driven by a
//! `ccbench_cc` controller (or at a constant rate with `--cbr-rate-bps`). One thread: receive
//! ACKs, run timers, log, send what the state machine allows (GSO batches), then wait (ppoll,
//! with a spin before a pacing deadline as long as the thread's wake-ups are late: `Waiter`).

use crate::args::FlowArgs;
use ccbench_cc::{Config, Controller};
use ccbench_common::traffic::TrafficArgs;
use ccbench_common::{round_us, stop_requested, unix_now, AgentError};
use ccbench_transport::cbr::ConstantRate;
use ccbench_transport::defaults;
use ccbench_transport::sender::{LossKind, Poll, Sender, SenderConfig, Transmit};
use ccbench_transport::udp::{self, Socket, Waiter, MAX_GSO_BYTES, MAX_GSO_SEGMENTS};
use ccbench_transport::{pattern, wire};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct USendArgs {
    #[arg(long)]
    pub dst: SocketAddr,
    /// Algorithm id (see ccbench_cc::ALGORITHMS); not needed with --cbr-rate-bps.
    #[arg(long)]
    pub cc: Option<String>,
    /// The algorithm's parameters as a JSON object of numbers.
    #[arg(long)]
    pub params: Option<String>,
    #[command(flatten)]
    pub flow: FlowArgs,
    /// Payload bytes per packet (1448 fills a 1500-byte MTU).
    #[arg(long, default_value_t = defaults::MSS)]
    pub mss: u32,
    #[arg(long, default_value_t = millis(defaults::MIN_RTO))]
    pub min_rto_ms: f64,
    /// Timer granularity of the RTO (500 for seed 000's coarse timer).
    #[arg(long, default_value_t = millis(defaults::RTO_GRANULARITY))]
    pub rto_granularity_ms: f64,
    /// Packets the controller's window starts with (10 as Linux; the seeds' simulations: 1).
    #[arg(long, default_value_t = defaults::INITIAL_WINDOW)]
    pub initial_window: u32,
    /// The receiver's advertised window in packets: at most this many outstanding above the
    /// cumulative ACK (unlimited without it).
    #[arg(long)]
    pub receive_window: Option<u32>,
    /// Grow the window per ACK that advances the cumulative point (ns-2's TCP), not per
    /// packet acknowledged.
    #[arg(long)]
    pub per_ack_growth: bool,
    /// One log line per ACK.
    #[arg(long)]
    pub per_ack: bool,
    /// Constant-rate UDP background at this many payload bits per second: no controller,
    /// no retransmission.
    #[arg(long)]
    pub cbr_rate_bps: Option<f64>,
    /// Seed of controllers that draw random numbers (TFRC's S3 rounds).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub traffic: TrafficArgs,
}

// `--per-ack-growth` turns per-ACK growth on: that is the spec's default only while it is off.
const _: () = assert!(
    !defaults::WINDOW_GROWTH_PER_ACK,
    "transport.window_growth defaults to per_ack: usend needs a --per-packet-growth flag instead"
);

/// After its duration the flow stops taking new data and waits this long at most for the
/// outstanding packets to be acknowledged (retransmitting as needed).
pub const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// The FIN is retransmitted until answered, for at most this long.
pub const FIN_LIMIT: Duration = Duration::from_secs(1);
/// A receive timestamp older than this is not believed (the real-time clock was stepped):
/// the ACK is then timed when it is read.
const MAX_RECEIVE_AGE: Duration = Duration::from_secs(1);
/// HELLO retransmissions as TCP's SYN: RFC 6298 (2.1)'s initial RTO of 1 s, doubled, as often
/// as Linux's default `tcp_syn_retries` (6: 127 s in all), and never past the flow's end. A
/// HELLO may wait behind a full buffer (100 packets at 64 kbit/s queue 12.5 s) or be dropped
/// by one again and again when dozens of flows share it, as a kernel TCP flow's SYN would be.
const HELLO_TIMEOUTS: [Duration; 7] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
    Duration::from_secs(8),
    Duration::from_secs(16),
    Duration::from_secs(32),
    Duration::from_secs(64),
];

/// `--params` as the controller's tunables: a JSON object of numbers.
pub fn parse_params(text: Option<&str>) -> Result<BTreeMap<String, f64>, AgentError> {
    let Some(text) = text else {
        return Ok(BTreeMap::new());
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| AgentError::usage(format!("--params is not valid JSON: {e}")))?;
    let Value::Object(map) = value else {
        return Err(AgentError::usage(
            "--params must be a JSON object of parameter names to numbers",
        ));
    };
    let mut params = BTreeMap::new();
    for (name, v) in map {
        let number = match &v {
            Value::Number(n) => n.as_f64(),
            Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        };
        let Some(number) = number.filter(|n| n.is_finite()) else {
            return Err(AgentError::usage(format!(
                "--params: parameter '{name}' must be a number, got {v}"
            )));
        };
        params.insert(name, number);
    }
    Ok(params)
}

/// A default duration as its flag writes it, in milliseconds.
fn millis(d: Duration) -> f64 {
    d.as_micros() as f64 / 1e3
}

fn ms_flag(name: &str, value: f64) -> Result<Duration, AgentError> {
    if !(0.0..=600_000.0).contains(&value) {
        return Err(AgentError::usage(format!(
            "{name} must be between 0 and 600000 ms, got {value}"
        )));
    }
    Ok(Duration::from_secs_f64(value / 1e3))
}

/// The controller (or the constant-rate source) and the HELLO's JSON.
fn build_controller(args: &USendArgs) -> Result<(Box<dyn Controller>, String, Value), AgentError> {
    let params = parse_params(args.params.as_deref())?;
    if let Some(rate) = args.cbr_rate_bps {
        if !rate.is_finite() || rate <= 0.0 {
            return Err(AgentError::usage(format!(
                "--cbr-rate-bps must be > 0, got {rate}"
            )));
        }
        if args.params.is_some() {
            return Err(AgentError::usage(
                "--params does not apply to --cbr-rate-bps (no controller)",
            ));
        }
        let hello = json!({"cc": "cbr", "params": {}, "mss": args.mss, "reliable": false,
                           "seed": args.seed});
        return Ok((Box::new(ConstantRate::new(rate)), "cbr".into(), hello));
    }
    let Some(id) = args.cc.clone() else {
        return Err(AgentError::usage(
            "--cc is required (or --cbr-rate-bps for constant-rate traffic)",
        ));
    };
    let config = Config {
        mss: args.mss,
        params: params.clone(),
        seed: args.seed,
    };
    let controller =
        ccbench_cc::new_controller(&id, &config).map_err(|e| AgentError::usage(e.0))?;
    // The receiver half must build too (ARB), with the same parameters.
    ccbench_cc::new_receiver(&id, &config).map_err(|e| AgentError::usage(e.0))?;
    let reliable = controller.recovery() != ccbench_cc::Recovery::None;
    let hello = json!({"cc": id, "params": params, "mss": args.mss, "reliable": reliable,
                       "seed": args.seed});
    Ok((controller, id, hello))
}

fn finite(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::Null
    }
}

fn secs(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| json!(round_us(d.as_secs_f64())))
}

fn state_of(cc: &dyn Controller) -> Value {
    let names = cc.state_names();
    let mut values = vec![0.0; names.len()];
    cc.state_values(&mut values);
    let mut state = Map::new();
    for (name, value) in names.iter().zip(values) {
        state.insert((*name).to_string(), finite(value));
    }
    Value::Object(state)
}

fn transport_line(s: &Sender, flow: u32, mss: u32) -> Value {
    let cc = s.controller();
    let stats = s.stats();
    let rtt = s.rtt();
    json!({
        "ts": unix_now(), "type": "transport", "flow": flow,
        "cwnd_pkts": finite(cc.cwnd()), "ssthresh_pkts": finite(cc.ssthresh()),
        "srtt_s": secs(rtt.srtt()), "rttvar_s": secs(Some(rtt.rttvar())),
        "min_rtt_s": secs(rtt.min_rtt()),
        "retransmits": stats.retransmits, "lost_pkts": stats.lost_pkts,
        "pacing_rate_bps": cc.pacing_rate().map_or(Value::Null, |r| finite(r * 8.0)),
        "bytes_acked": stats.bytes_acked, "bytes_sent": stats.bytes_sent, "mss": mss,
        "in_flight_pkts": s.in_flight(),
        "state": state_of(cc),
    })
}

/// Builds equal-sized datagrams into one buffer for a GSO send.
struct Batch {
    buf: Vec<u8>,
    segment: usize,
    count: usize,
    /// Datagrams per GSO send at the flow's current rate (`segments_per_send`).
    limit: usize,
    flow: u32,
}

/// How many datagrams go out in one GSO send: about 1 ms of data at the flow's rate, as Linux
/// sizes TSO/GSO bursts (tcp_tso_autosize), but at least one. A qdisc counts a GSO buffer as
/// one packet, so at the rates of an emulated bottleneck each datagram must travel alone for
/// a buffer limit in packets to mean packets; at gigabit rates the batches grow to 64.
fn segments_per_send(sender: &Sender, mss: u32) -> usize {
    let cc = sender.controller();
    let rate = cc.pacing_rate().or_else(|| {
        let rtt = sender.rtt().srtt()?.max(Duration::from_micros(1));
        Some(cc.cwnd() * mss as f64 / rtt.as_secs_f64())
    });
    let packet = (mss as usize + wire::DATA_HEADER_LEN) as f64;
    match rate {
        Some(r) if r.is_finite() => ((r * 1e-3 / packet) as usize).clamp(1, MAX_GSO_SEGMENTS),
        _ => MAX_GSO_SEGMENTS,
    }
}

impl Batch {
    fn push(&mut self, tx: &Transmit) {
        let len = wire::DATA_HEADER_LEN + tx.bytes as usize;
        if self.count == 0 {
            self.segment = len;
        }
        let start = self.buf.len();
        self.buf.resize(start + len, 0);
        let out = &mut self.buf[start..];
        wire::encode_data_header(
            &wire::DataHeader {
                flow: self.flow,
                seq: tx.seq,
                sent_us: tx.sent_us,
                payload_len: tx.bytes as u16,
            },
            out,
        );
        pattern::fill(self.flow, tx.seq, &mut out[wire::DATA_HEADER_LEN..]);
        self.count += 1;
    }

    /// Whether a datagram carrying `tx` may join (GSO: all equal but the last, which may be
    /// shorter; at most 64 of them in one IP datagram's worth of bytes).
    fn fits(&self, tx: &Transmit) -> bool {
        let len = wire::DATA_HEADER_LEN + tx.bytes as usize;
        self.count == 0
            || (self.count < self.limit
                && len <= self.segment
                && self.buf.len().is_multiple_of(self.segment)
                && self.buf.len() + len <= MAX_GSO_BYTES)
    }

    fn flush(&mut self, socket: &mut Socket) -> std::io::Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        let result = socket.send_segments(&self.buf, self.segment, None);
        self.buf.clear();
        self.count = 0;
        match result {
            // A full socket or device buffer drops the batch, as a full queue in the network
            // would: the transport's loss recovery handles it.
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => Ok(()),
            // The receiver's port is closed (ICMP): its timers will give up.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(()),
            other => other,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    Sending,
    Draining,
}

fn handshake(
    socket: &mut Socket,
    waiter: &mut Waiter,
    flow: u32,
    hello: &Value,
    give_up_at: Instant,
) -> Result<Duration, AgentError> {
    let clock = Instant::now();
    let mut buf = vec![0u8; 65536];
    let text = hello.to_string();
    for timeout in HELLO_TIMEOUTS {
        if Instant::now() >= give_up_at {
            break;
        }
        let sent_us = clock.elapsed().as_micros() as u64;
        let packet = wire::encode_hello(&wire::Hello {
            flow,
            sent_us,
            json: text.clone(),
        });
        socket
            .send_segments(&packet, packet.len(), None)
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::ConnectionRefused {
                    Ok(())
                } else {
                    Err(e)
                }
            })?;
        let deadline = (Instant::now() + timeout).min(give_up_at);
        while Instant::now() < deadline {
            if stop_requested() {
                return Err(AgentError::runtime("stopped before the receiver answered"));
            }
            waiter.wait(socket.fd(), Some(deadline), Duration::from_millis(50));
            while let Some(rx) = socket.recv(&mut buf)? {
                for datagram in buf[..rx.len].chunks(rx.segment) {
                    if let Ok(wire::Packet::HelloAck(answer)) = wire::decode(datagram) {
                        if answer.flow != flow || answer.echo_sent_us > sent_us {
                            continue;
                        }
                        if let Some(reason) = answer.refused {
                            return Err(AgentError::runtime(format!(
                                "the receiver refused the flow: {reason}"
                            )));
                        }
                        let echo = Duration::from_micros(answer.echo_sent_us);
                        return Ok(clock.elapsed().saturating_sub(echo));
                    }
                }
            }
        }
    }
    Err(AgentError::runtime(format!(
        "no answer to HELLO after {:.1} s (is `ccbench-agent urecv` listening there?)",
        clock.elapsed().as_secs_f64()
    )))
}

/// The transport's configuration from `--mss`, `--min-rto-ms`, `--rto-granularity-ms`,
/// `--initial-window`.
fn sender_config(args: &USendArgs) -> Result<SenderConfig, AgentError> {
    if args.mss == 0 || args.mss as usize > wire::MAX_PAYLOAD {
        return Err(AgentError::usage(format!(
            "--mss must be between 1 and {}, got {}",
            wire::MAX_PAYLOAD,
            args.mss
        )));
    }
    if args.initial_window == 0 {
        return Err(AgentError::usage(
            "--initial-window must be at least 1 packet",
        ));
    }
    if args.receive_window == Some(0) {
        return Err(AgentError::usage(
            "--receive-window must be at least 1 packet",
        ));
    }
    Ok(SenderConfig {
        mss: args.mss,
        min_rto: ms_flag("--min-rto-ms", args.min_rto_ms)?,
        rto_granularity: ms_flag("--rto-granularity-ms", args.rto_granularity_ms)?,
        initial_window: args.initial_window,
        receive_window: args.receive_window.or(defaults::RECEIVE_WINDOW),
        window_growth_per_ack: args.per_ack_growth,
    })
}

pub fn run(args: USendArgs) -> Result<(), AgentError> {
    args.flow.check()?;
    let config = sender_config(&args)?;
    let (controller, cc_id, hello) = build_controller(&args)?;
    let mut out = args.flow.output.create()?;
    let mut socket = Socket::connect(args.dst).map_err(|e| {
        AgentError::runtime(format!("cannot open a UDP socket to {}: {e}", args.dst))
    })?;
    let local = socket.local_addr()?;
    let mut waiter = Waiter::new();
    args.flow.wait_for_start()?;
    let flow_id = args.flow.flow_id;
    let flow_end = Instant::now() + Duration::from_secs_f64(args.flow.duration_s);
    let handshake_rtt = handshake(&mut socket, &mut waiter, flow_id, &hello, flow_end)?;

    let mut sender = Sender::new(config, controller);
    sender.seed_rtt(handshake_rtt);
    let mut traffic = args.traffic.build()?;
    let origin = Instant::now();
    let start_ts = unix_now();
    // The flow ends when it was to end: a handshake that took long (a HELLO behind a full
    // buffer) shortens it rather than running it past the experiment's end.
    let end = flow_end;
    let interval = args.flow.output.interval();
    let mut next_log = origin + interval;
    let mut phase = Phase::Sending;
    let mut end_ts = None;
    let mut drain_deadline = None;
    let mut batch = Batch {
        buf: Vec::with_capacity(MAX_GSO_BYTES + 2048),
        segment: 0,
        count: 0,
        limit: 1,
        flow: flow_id,
    };
    let mut rbuf = vec![0u8; 1 << 16];
    loop {
        let now_i = Instant::now();
        let now = now_i - origin;
        // ACKs.
        for _ in 0..64 {
            let Some(rx) = socket.recv(&mut rbuf)? else {
                break;
            };
            // When the kernel received them, on the transport's clock (RTT samples end there).
            let received = udp::received_ago(rx.kernel_ts)
                .filter(|ago| *ago < MAX_RECEIVE_AGE)
                .and_then(|ago| (Instant::now() - origin).checked_sub(ago))
                .unwrap_or(now);
            for datagram in rbuf[..rx.len].chunks(rx.segment.max(1)) {
                let Ok(wire::Packet::Ack(ack)) = wire::decode(datagram) else {
                    continue;
                };
                if ack.flow != flow_id {
                    continue;
                }
                let outcome = sender.on_ack_received(now, received, &ack);
                if args.per_ack && outcome.valid {
                    let cc = sender.controller();
                    let line = json!({"ts": unix_now(), "type": "ack", "flow": flow_id,
                        "seq": ack.echo_seq, "rtt_s": secs(outcome.rtt),
                        "cwnd_pkts": finite(cc.cwnd()), "state": state_of(cc)});
                    writeln!(out, "{line}")?;
                }
                if let Some(kind) = outcome.loss {
                    write_loss(&mut out, &sender, flow_id, kind)?;
                }
            }
        }
        if sender.timer_deadline().is_some_and(|t| t <= now) {
            if let Some(kind) = sender.on_timer(now) {
                write_loss(&mut out, &sender, flow_id, kind)?;
            }
        }
        if now_i >= next_log {
            writeln!(out, "{}", transport_line(&sender, flow_id, args.mss))?;
            while next_log <= now_i {
                next_log += interval;
            }
        }
        // A finite source (fixed size) that has handed over everything ends its flow early.
        let source_done = phase == Phase::Sending && {
            let now_s = now.as_secs_f64();
            sender.stats().new_bytes >= traffic.available(now_s)
                && traffic.next_change(now_s).is_none()
                && traffic.available(now_s) != u64::MAX
        };
        if phase == Phase::Sending && (now_i >= end || stop_requested() || source_done) {
            phase = Phase::Draining;
            end_ts = Some(unix_now());
            drain_deadline = Some(now_i + DRAIN_LIMIT);
        }
        if phase == Phase::Draining
            && (sender.all_resolved()
                || stop_requested()
                || drain_deadline.is_some_and(|d| now_i >= d)
                || (!sender.reliable() && now > sender.rtt().rto() + (end - origin)))
        {
            break;
        }
        // Send what the window and the pacing allow, in GSO batches.
        let now_s = now.as_secs_f64();
        let app_total = match phase {
            Phase::Sending => traffic.available(now_s),
            Phase::Draining => sender.stats().new_bytes,
        };
        let mut pace_until = None;
        batch.limit = segments_per_send(&sender, args.mss);
        loop {
            match sender.poll_send(now, app_total) {
                Poll::Send(tx) => {
                    if !batch.fits(&tx) {
                        batch.flush(&mut socket)?;
                    }
                    batch.push(&tx);
                }
                Poll::PaceUntil(t) => {
                    pace_until = Some(origin + t);
                    break;
                }
                Poll::Blocked => break,
            }
        }
        batch.flush(&mut socket)?;
        // Sleep until something is due: an ACK, pacing, a timer, the log, the end, new data.
        let app_limited = phase == Phase::Sending && sender.stats().new_bytes >= app_total;
        let wake = [
            pace_until,
            sender.timer_deadline().map(|t| origin + t),
            Some(next_log),
            (phase == Phase::Sending).then_some(end),
            drain_deadline,
            app_limited
                .then(|| traffic.next_change(now_s))
                .flatten()
                .map(|t| origin + Duration::from_secs_f64(t.max(0.0))),
        ]
        .into_iter()
        .flatten()
        .min();
        waiter.wait(socket.fd(), wake, Duration::from_millis(50));
    }
    let end_ts = end_ts.unwrap_or_else(unix_now);
    let offered = traffic.available((Instant::now() - origin).as_secs_f64());
    let complete = sender.all_resolved();
    let fin_acked = finish(
        &mut socket,
        &mut waiter,
        &mut sender,
        flow_id,
        origin,
        complete,
    )?;
    writeln!(out, "{}", transport_line(&sender, flow_id, args.mss))?;
    let stats = sender.stats();
    let summary = json!({
        "ts": unix_now(), "type": "summary", "flow": flow_id, "cc": cc_id,
        "runtime": "userspace", "local": local.to_string(),
        "start_ts": round_us(start_ts), "end_ts": round_us(end_ts),
        "bytes_sent": stats.bytes_sent, "bytes_acked": stats.bytes_acked,
        "retransmits": stats.retransmits, "lost_pkts": stats.lost_pkts,
        "pkts_sent": stats.new_pkts, "timeouts": stats.timeouts,
        "congestion_events": stats.congestion_events,
        "complete": complete, "fin_acked": fin_acked,
        "traffic": args.traffic.traffic.name(),
        "bytes_offered": (offered != u64::MAX).then_some(offered),
    });
    writeln!(out, "{summary}")?;
    out.flush()?;
    Ok(())
}

fn write_loss(
    out: &mut impl Write,
    sender: &Sender,
    flow: u32,
    kind: LossKind,
) -> std::io::Result<()> {
    let cc = sender.controller();
    let event = match kind {
        LossKind::Congestion => "congestion",
        LossKind::Timeout => "timeout",
    };
    let line = json!({"ts": unix_now(), "type": "loss", "flow": flow, "event": event,
        "cwnd_pkts": finite(cc.cwnd()), "ssthresh_pkts": finite(cc.ssthresh())});
    writeln!(out, "{line}")
}

/// The FIN exchange: announce what was sent, retransmit until answered (bounded). Returns
/// whether the receiver answered.
fn finish(
    socket: &mut Socket,
    waiter: &mut Waiter,
    sender: &mut Sender,
    flow: u32,
    origin: Instant,
    complete: bool,
) -> Result<bool, AgentError> {
    let stats = sender.stats();
    let give_up = Instant::now() + FIN_LIMIT;
    let retry = sender
        .rtt()
        .rto()
        .clamp(Duration::from_millis(10), Duration::from_millis(250));
    let mut rbuf = vec![0u8; 1 << 16];
    while Instant::now() < give_up {
        let fin = wire::encode_fin(&wire::Fin {
            flow,
            total_pkts: stats.new_pkts,
            total_bytes: stats.new_bytes,
            complete,
            sent_us: (Instant::now() - origin).as_micros() as u64,
        });
        if let Err(e) = socket.send_segments(&fin, fin.len(), None) {
            if e.kind() != std::io::ErrorKind::ConnectionRefused {
                return Err(e.into());
            }
        }
        let next = (Instant::now() + retry).min(give_up);
        while Instant::now() < next {
            waiter.wait(socket.fd(), Some(next), Duration::from_millis(50));
            while let Some(rx) = socket.recv(&mut rbuf)? {
                for datagram in rbuf[..rx.len].chunks(rx.segment.max(1)) {
                    match wire::decode(datagram) {
                        Ok(wire::Packet::FinAck(answer)) if answer.flow == flow => {
                            return Ok(true);
                        }
                        // Late ACKs still count (bytes_acked in the summary).
                        Ok(wire::Packet::Ack(ack)) if ack.flow == flow => {
                            sender.on_ack(Instant::now() - origin, &ack);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_must_be_an_object_of_numbers_naming_the_bad_one() {
        let p = parse_params(Some(r#"{"beta": 0.5, "k": 2, "flag": true}"#)).unwrap();
        assert_eq!(p["beta"], 0.5);
        assert_eq!(p["k"], 2.0);
        assert_eq!(p["flag"], 1.0);
        assert!(parse_params(None).unwrap().is_empty());
        let e = parse_params(Some(r#"{"beta": "half"}"#)).unwrap_err();
        assert!(e.usage && e.message.contains("'beta'"), "{}", e.message);
        assert!(parse_params(Some("[1]")).unwrap_err().usage);
        assert!(parse_params(Some("{"))
            .unwrap_err()
            .message
            .contains("JSON"));
    }

    #[test]
    fn the_transport_flags_default_to_the_spec() {
        use clap::Parser;
        let parse = |args: &[&str]| crate::Cli::try_parse_from(args).unwrap().command;
        let crate::Command::Usend(usend) = parse(&[
            "ccbench-agent",
            "usend",
            "--dst",
            "10.2.1.1:5001",
            "--duration-s",
            "1",
            "--out",
            "x",
        ]) else {
            panic!("not usend");
        };
        // The flags' defaults, converted as given flags are, are SenderConfig's: both come from
        // the generated ccbench_transport::defaults (schemas/spec.py's TransportOptions).
        assert_eq!(sender_config(&usend).unwrap(), SenderConfig::default());
        let crate::Command::Urecv(urecv) = parse(&[
            "ccbench-agent",
            "urecv",
            "--listen",
            "0.0.0.0:5001",
            "--out",
            "x",
        ]) else {
            panic!("not urecv");
        };
        assert_eq!(urecv.delayed_acks, defaults::DELAYED_ACKS);
    }
}
