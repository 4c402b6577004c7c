//! ccbench-link: a userspace link emulator on NFQUEUE. The kernel keeps each packet; this
//! program reads its header, asks the link model (`model`) whether it is dropped or when it
//! leaves, and issues the verdict then: NF_DROP at once, NF_ACCEPT at its release time.
//! Every packet is written to an exact per-packet log (`log`).
//!
//! It never installs firewall rules: the caller adds the NFQUEUE rule inside its own network
//! namespace (docs/contracts.md), so nothing is left on the host if this process dies.

mod log;
mod model;
#[cfg(test)]
mod model_tests;
mod nfqueue;

use ccbench_common::{exit_with, install_stop_handler, stop_requested, unix_now, AgentError};
use clap::{Parser, Subcommand, ValueEnum};
use model::{Aqm, Buffer, Fate, Link, LinkConfig, Rate, RedParams};
use nfqueue::{NfQueue, Packet, NF_ACCEPT, NF_DROP};
use serde_json::json;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(name = "ccbench-link", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum AqmKind {
    Droptail,
    Red,
}

#[derive(Subcommand)]
enum Command {
    /// Emulate one direction of a link for the packets of an NFQUEUE queue.
    /// (`delay` is an alias: without a rate it is a pure delay line.)
    #[command(alias = "delay")]
    Run(RunArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    #[arg(long)]
    queue_num: u16,
    /// Link rate in bit/s (default: unlimited, delay only).
    #[arg(long, conflicts_with = "trace")]
    rate_bps: Option<u64>,
    /// Mahimahi trace: one ms timestamp per line, each a 1500-byte delivery opportunity.
    #[arg(long)]
    trace: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    delay_us: u64,
    /// Uniform extra delay in [0, jitter], never reordering packets.
    #[arg(long, default_value_t = 0)]
    jitter_us: u64,
    #[arg(long, conflicts_with = "buffer_bytes")]
    buffer_pkts: Option<u32>,
    #[arg(long)]
    buffer_bytes: Option<u64>,
    #[arg(long, value_enum, default_value_t = AqmKind::Droptail)]
    aqm: AqmKind,
    #[arg(long, default_value_t = 5.0)]
    red_min_th: f64,
    #[arg(long, default_value_t = 15.0)]
    red_max_th: f64,
    #[arg(long, default_value_t = 0.1)]
    red_max_p: f64,
    #[arg(long, default_value_t = 0.002)]
    red_w_q: f64,
    /// Random loss probability per packet, on arrival.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Per-packet log (binary, see log.rs).
    #[arg(long)]
    log: Option<PathBuf>,
    /// Counters written when stopped (JSON).
    #[arg(long)]
    stats_out: Option<PathBuf>,
}

/// Below this many µs to the next release the loop spins instead of sleeping.
const SPIN_US: u64 = 20;

/// Release lateness (actual verdict time - release time), µs.
#[derive(Default)]
struct Lateness(Vec<u32>);

impl Lateness {
    fn record(&mut self, late: Duration) {
        self.0.push(late.as_micros().min(u32::MAX as u128) as u32);
    }
    fn percentile(&mut self, p: f64) -> Option<u32> {
        if self.0.is_empty() {
            return None;
        }
        self.0.sort_unstable();
        let rank = ((self.0.len() - 1) as f64 * p / 100.0).round() as usize;
        Some(self.0[rank])
    }
}

#[derive(Default)]
struct Counters {
    packets: u64,
    bytes: u64,
    forwarded: u64,
    dropped_full: u64,
    dropped_red: u64,
    dropped_loss: u64,
    max_qlen_pkts: u32,
    /// Times the kernel reported that NFQUEUE messages were lost (socket buffer overrun):
    /// the emulator could not keep up and the kernel dropped packets it never saw.
    overruns: u64,
}

struct Emulator {
    link: Link,
    started: Instant,
    started_unix_us: u64,
    /// Packets waiting for their release time, with their log record (written on release,
    /// carrying the actual release time).
    held: VecDeque<(u64, u32, log::Record)>,
    log: Option<BufWriter<File>>,
    counters: Counters,
    lateness: Lateness,
}

impl Emulator {
    fn now_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    fn admit(&mut self, queue: &mut NfQueue, packet: &Packet) -> std::io::Result<()> {
        let now = self.now_us();
        let (len, flow) = log::parse_ipv4(packet.head())
            .unwrap_or((packet.head_len as u16, log::FiveTuple::default()));
        let outcome = self.link.arrive(now, len as u32);
        let c = &mut self.counters;
        c.packets += 1;
        c.bytes += len as u64;
        let joined = u32::from(outcome.fate == Fate::Forwarded);
        c.max_qlen_pkts = c.max_qlen_pkts.max(outcome.qlen_pkts + joined);
        match outcome.fate {
            Fate::Forwarded => c.forwarded += 1,
            Fate::DroppedFull => c.dropped_full += 1,
            Fate::DroppedRed => c.dropped_red += 1,
            Fate::DroppedLoss => c.dropped_loss += 1,
        }
        let forwarded = outcome.fate == Fate::Forwarded;
        let record = log::Record {
            arrival_us: self.started_unix_us + now,
            departure_us: if forwarded {
                self.started_unix_us + outcome.departure_us
            } else {
                0
            },
            release_us: 0,
            qlen_bytes: outcome.qlen_bytes.min(u32::MAX as u64) as u32,
            qlen_pkts: outcome.qlen_pkts,
            flow,
            len,
            fate: outcome.fate.code(),
        };
        if forwarded {
            self.held.push_back((outcome.release_us, packet.id, record));
        } else {
            queue.verdict(packet.id, NF_DROP);
            if let Some(out) = self.log.as_mut() {
                out.write_all(&record.encode())?;
            }
        }
        Ok(())
    }

    /// Accept every packet whose release time has come; how long until the next one.
    fn release_due(&mut self, queue: &mut NfQueue) -> std::io::Result<Option<u64>> {
        loop {
            let now = self.now_us();
            match self.held.front() {
                Some((due, _, _)) if *due <= now => {
                    let (due, id, mut record) = self.held.pop_front().unwrap();
                    queue.verdict(id, NF_ACCEPT);
                    let released = self.now_us();
                    self.lateness.record(Duration::from_micros(released - due));
                    if let Some(out) = self.log.as_mut() {
                        record.release_us = self.started_unix_us + released;
                        out.write_all(&record.encode())?;
                    }
                }
                Some((due, _, _)) => return Ok(Some(*due - now)),
                None => return Ok(None),
            }
        }
    }
}

fn build_config(args: &RunArgs) -> Result<LinkConfig, AgentError> {
    let rate = match (args.rate_bps, &args.trace) {
        (Some(bps), _) => Rate::Constant { bps },
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                AgentError::usage(format!("cannot read --trace {}: {e}", path.display()))
            })?;
            model::parse_mahimahi_trace(&text)
                .map_err(|e| AgentError::usage(format!("--trace {}: {e}", path.display())))?
        }
        (None, None) => Rate::Unlimited,
    };
    let buffer = args
        .buffer_pkts
        .map(Buffer::Packets)
        .or(args.buffer_bytes.map(Buffer::Bytes));
    let aqm = match args.aqm {
        AqmKind::Droptail => Aqm::DropTail,
        AqmKind::Red => Aqm::Red(RedParams {
            min_th: args.red_min_th,
            max_th: args.red_max_th,
            max_p: args.red_max_p,
            w_q: args.red_w_q,
        }),
    };
    Ok(LinkConfig {
        rate,
        delay_us: args.delay_us,
        jitter_us: args.jitter_us,
        buffer,
        aqm,
        loss: args.loss,
        seed: args.seed,
    })
}

fn describe(cfg: &LinkConfig, queue_num: u16, started_unix: f64) -> serde_json::Value {
    let rate = match &cfg.rate {
        Rate::Unlimited => json!(null),
        Rate::Constant { bps } => json!({"bps": bps}),
        Rate::Trace {
            opportunities_us,
            period_us,
        } => {
            json!({"trace_opportunities": opportunities_us.len(), "trace_period_us": period_us})
        }
    };
    let buffer = match cfg.buffer {
        Some(Buffer::Packets(n)) => json!({"pkts": n}),
        Some(Buffer::Bytes(b)) => json!({"bytes": b}),
        None => json!(null),
    };
    let aqm = match cfg.aqm {
        Aqm::DropTail => json!({"kind": "droptail"}),
        Aqm::Red(p) => json!({"kind": "red", "min_th": p.min_th, "max_th": p.max_th,
                              "max_p": p.max_p, "w_q": p.w_q}),
    };
    json!({"queue_num": queue_num, "rate": rate, "delay_us": cfg.delay_us,
           "jitter_us": cfg.jitter_us, "buffer": buffer, "aqm": aqm, "loss": cfg.loss,
           "seed": cfg.seed, "started_unix": started_unix,
           "record_bytes": log::RECORD_BYTES})
}

fn run(
    queue_num: u16,
    cfg: LinkConfig,
    log_path: Option<PathBuf>,
    stats_out: Option<PathBuf>,
) -> Result<(), AgentError> {
    let link = Link::new(cfg.clone()).map_err(AgentError::usage)?;
    let started_unix = unix_now();
    let started = Instant::now();
    let mut log_out = match &log_path {
        Some(path) => Some(BufWriter::with_capacity(
            1 << 20,
            File::create(path).map_err(|e| {
                AgentError::usage(format!("cannot create --log {}: {e}", path.display()))
            })?,
        )),
        None => None,
    };
    let description = describe(&cfg, queue_num, started_unix);
    if let Some(out) = log_out.as_mut() {
        log::write_header(out, &description)?;
    }
    let mut queue = NfQueue::open(queue_num, 65_536).map_err(|e| {
        AgentError::usage(format!("cannot bind NFQUEUE {queue_num} (needs root): {e}"))
    })?;
    // Wake-ups as close to the requested time as the kernel allows (default slack: 50 µs).
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000u64) };
    println!("{}", json!({"event": "ready", "queue_num": queue_num}));
    std::io::stdout().flush()?;

    let mut emu = Emulator {
        link,
        started,
        started_unix_us: (started_unix * 1e6) as u64,
        held: VecDeque::new(),
        log: log_out,
        counters: Counters::default(),
        lateness: Lateness::default(),
    };
    let mut arrived: Vec<Packet> = Vec::with_capacity(1024);
    while !stop_requested() {
        arrived.clear();
        match queue.recv_packets(&mut arrived, 512) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => emu.counters.overruns += 1,
            Err(e) => return Err(AgentError::runtime(format!("NFQUEUE receive: {e}"))),
        }
        for packet in &arrived {
            emu.admit(&mut queue, packet)?;
        }
        let next_due = emu.release_due(&mut queue)?;
        queue.flush_verdicts()?;
        if arrived.is_empty() {
            // Sleep until the next release (waking a little early and spinning the rest) or
            // until a packet arrives.
            match next_due {
                Some(us) if us <= SPIN_US => {}
                Some(us) => {
                    queue.wait(Some(Duration::from_micros(us - SPIN_US)))?;
                }
                None => {
                    queue.wait(Some(Duration::from_millis(200)))?;
                }
            }
        }
    }
    // Release what is still held so that no packet stays queued in the kernel.
    for (_, id, _) in emu.held.drain(..) {
        queue.verdict(id, NF_ACCEPT);
    }
    queue.flush_verdicts()?;
    let verdict_errors = queue.verdict_errors;
    drop(queue);
    if let Some(out) = emu.log.as_mut() {
        out.flush()?;
    }
    if let Some(path) = stats_out {
        let c = &emu.counters;
        let stats = json!({
            "config": description,
            "packets": c.packets, "bytes": c.bytes, "forwarded": c.forwarded,
            "dropped_full": c.dropped_full, "dropped_red": c.dropped_red,
            "dropped_loss": c.dropped_loss, "max_qlen_pkts": c.max_qlen_pkts,
            "overruns": c.overruns, "verdict_errors": verdict_errors,
            "late_us_p50": emu.lateness.percentile(50.0),
            "late_us_p99": emu.lateness.percentile(99.0),
            "late_us_max": emu.lateness.percentile(100.0),
            "cpu_s": cpu_seconds(),
        });
        std::fs::write(&path, format!("{stats}\n"))?;
    }
    Ok(())
}

/// CPU time (user + system) this process used so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => exit_with(AgentError::usage(e.to_string().trim().to_string())),
        Err(e) => e.exit(),
    };
    install_stop_handler();
    let Command::Run(args) = cli.command;
    let result = build_config(&args).and_then(|cfg| {
        run(
            args.queue_num,
            cfg,
            args.log.clone(),
            args.stats_out.clone(),
        )
    });
    if let Err(e) = result {
        exit_with(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_a_link_and_the_delay_alias() {
        let cli = Cli::try_parse_from([
            "ccbench-link",
            "run",
            "--queue-num",
            "2",
            "--rate-bps",
            "10000000",
            "--delay-us",
            "20000",
            "--buffer-pkts",
            "33",
            "--aqm",
            "red",
            "--stats-out",
            "s.json",
        ])
        .unwrap();
        let Command::Run(args) = cli.command;
        assert_eq!(
            (args.queue_num, args.rate_bps, args.delay_us),
            (2, Some(10_000_000), 20_000)
        );
        let cfg = build_config(&args).unwrap();
        assert!(matches!(cfg.aqm, Aqm::Red(_)));
        assert!(matches!(cfg.buffer, Some(Buffer::Packets(33))));
        let cli = Cli::try_parse_from([
            "ccbench-link",
            "delay",
            "--queue-num",
            "1",
            "--delay-us",
            "500",
        ])
        .unwrap();
        let Command::Run(args) = cli.command;
        let cfg = build_config(&args).unwrap();
        assert!(matches!(cfg.rate, Rate::Unlimited) && cfg.delay_us == 500 && cfg.buffer.is_none());
    }

    #[test]
    fn conflicting_flags_are_refused() {
        for args in [
            &[
                "ccbench-link",
                "run",
                "--queue-num",
                "1",
                "--rate-bps",
                "1",
                "--trace",
                "t",
            ][..],
            &[
                "ccbench-link",
                "run",
                "--queue-num",
                "1",
                "--buffer-pkts",
                "1",
                "--buffer-bytes",
                "1",
            ],
            &["ccbench-link", "run", "--queue-num", "70000"],
            &["ccbench-link", "run"],
        ] {
            assert!(Cli::try_parse_from(args).is_err(), "{args:?}");
        }
    }

    #[test]
    fn lateness_percentiles() {
        let mut late = Lateness::default();
        assert_eq!(late.percentile(50.0), None);
        for us in (1..=100).rev() {
            late.record(Duration::from_micros(us));
        }
        assert_eq!(late.percentile(0.0), Some(1));
        assert_eq!(late.percentile(50.0), Some(51));
        assert_eq!(late.percentile(99.0), Some(99));
        assert_eq!(late.percentile(100.0), Some(100));
    }
}
