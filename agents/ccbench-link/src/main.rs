//! ccbench-link: a userspace link emulator on NFQUEUE. The kernel keeps each packet; this
//! program reads its header, asks the link model (`model`) whether it is dropped or when it
//! leaves, and issues the verdict then: NF_DROP at once, NF_ACCEPT at its release time.
//! Every packet is written to an exact per-packet log (`log`).
//!
//! Two modes (`--mode`): `packet` gives each packet its own verdict (the kernel segments any
//! GSO/GRO aggregate before queueing it); `aggregate` has the kernel queue aggregates whole
//! (NFQA_CFG_F_GSO), one verdict and one log record each, serialized and buffered as the
//! packets they stand for (`log::aggregate_size`): far fewer verdicts per byte, for links
//! faster than per-packet verdicts keep up with (docs/contracts.md).
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
use model::{Aqm, Buffer, Fate, Jitter, Link, LinkConfig, Rate, RedParams};
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

/// The distribution of the per-packet jitter; `--jitter-us` is its scale.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum JitterDist {
    /// Uniform in [0, jitter].
    Uniform,
    /// Exponential with mean jitter.
    Exponential,
}

/// Where a packet's arrival time comes from.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ArrivalTime {
    /// The kernel's timestamp (NFQA_TIMESTAMP): exact however late the packet is read, so the
    /// emulator may sleep until its next release without watching for arrivals.
    Kernel,
    /// The time the emulator read the packet: it must wake on every arrival. For packets that
    /// another queue on this host held before this one (e.g. a non-TCP packet behind an access
    /// delay line), whose kernel timestamp is when the host received them.
    Read,
}

/// One verdict per packet, or per GSO/GRO aggregate.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Every packet on its own (aggregates are segmented by the kernel first).
    Packet,
    /// Aggregates whole, accounted as the packets they stand for.
    Aggregate,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Packet => "packet",
            Mode::Aggregate => "aggregate",
        }
    }
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
    /// Random extra delay per packet, never reordering packets: the largest (uniform) or the
    /// mean (exponential) in µs.
    #[arg(long, default_value_t = 0)]
    jitter_us: u64,
    #[arg(long, value_enum, default_value_t = JitterDist::Uniform)]
    jitter_dist: JitterDist,
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
    #[arg(long, value_enum, default_value_t = ArrivalTime::Kernel)]
    arrival_time: ArrivalTime,
    #[arg(long, value_enum, default_value_t = Mode::Packet)]
    mode: Mode,
    /// The link's IP MTU: an aggregate stands for segments of this size (`--mode aggregate`).
    #[arg(long, default_value_t = 1500, value_parser = clap::value_parser!(u32).range(68..=65535))]
    mtu: u32,
    /// Real-time priority (SCHED_FIFO, 1-99) of the emulator; 0: the normal scheduler. Measured
    /// on a 2-CPU VM 35-75% busy: normal scheduling left packets 1.4-3.4 ms late at p99, as a
    /// woken emulator waited for a CPU; SCHED_FIFO 0.1-0.25 ms (docs/contracts.md).
    #[arg(long, default_value_t = DEFAULT_RT_PRIORITY, value_parser = clap::value_parser!(u8).range(0..=99))]
    rt_priority: u8,
    /// How long before each release the emulator stops sleeping and spins (µs, at most
    /// MAX_SPIN_US; never more than a SPIN_SHARE of the wait): a timed sleep on this 2-CPU VM
    /// ends 40-90 µs late at p99 even when the emulator gets a CPU at once, so it wakes early
    /// and spins to the release time.
    #[arg(long, default_value_t = DEFAULT_SPIN_US, value_parser = clap::value_parser!(u64).range(0..=MAX_SPIN_US))]
    spin_us: u64,
}

/// Above normal tasks, below the kernel's own real-time threads (priority 50 and up).
const DEFAULT_RT_PRIORITY: u8 = 10;

/// The default and the largest `--spin-us`: the spin is bounded, so a real-time emulator
/// blocks again within this long of every wake-up unless packets keep it busy.
const DEFAULT_SPIN_US: u64 = 60;
const MAX_SPIN_US: u64 = 200;
/// The spin before a release is at most this share of the wait for it, so spinning costs at
/// most ~1/11 of the emulator's time however often it releases: at 100 Mbit/s (a release
/// every ~120 µs) a full spin would double its CPU per packet, while wake-ups that frequent
/// are late by less (the CPU does not idle deeply between them).
const SPIN_SHARE: f64 = 0.1;

/// The spin before a release `wait_us` ahead: `spin_us`, or less for a short wait.
fn spin_margin_us(wait_us: u64, spin_us: u64) -> u64 {
    spin_us.min((wait_us as f64 * SPIN_SHARE) as u64)
}
/// With kernel arrival times: the longest sleep that does not watch for arrivals (they keep
/// their timestamps meanwhile; drop verdicts wait at most this long).
const MAX_BLIND_US: u64 = 2000;

/// Timing errors in whole µs, in bounded memory however long the run (one count per µs up to
/// 100 ms, larger ones in the last bin): release lateness, wake-up lateness, scheduling delay.
struct Histogram {
    counts: Vec<u64>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; HISTOGRAM_US + 1],
            total: 0,
        }
    }
}

/// The histograms' last bin: 100 ms and more.
const HISTOGRAM_US: usize = 100_000;

impl Histogram {
    fn record_us(&mut self, us: u64) {
        self.counts[(us as usize).min(HISTOGRAM_US)] += 1;
        self.total += 1;
    }

    /// The p-th percentile with linear interpolation between closest ranks, as the analysis
    /// computes every percentile (ccbench/analysis/metrics.py: percentile_ranks).
    fn percentile(&self, p: f64) -> Option<f64> {
        if self.total == 0 {
            return None;
        }
        let h = (self.total - 1) as f64 * p / 100.0;
        let lo = h.floor() as u64;
        let hi = (lo + 1).min(self.total - 1);
        let (lo_v, hi_v) = (self.value_at(lo), self.value_at(hi));
        Some(lo_v as f64 + (h - lo as f64) * (hi_v - lo_v) as f64)
    }

    /// The value of 0-based rank `rank` in order.
    fn value_at(&self, rank: u64) -> usize {
        let mut seen = 0;
        for (us, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen > rank {
                return us;
            }
        }
        HISTOGRAM_US
    }

    fn summary(&self, prefix: &str) -> serde_json::Map<String, serde_json::Value> {
        let mut out = serde_json::Map::new();
        for (name, p) in [("p50", 50.0), ("p99", 99.0), ("max", 100.0)] {
            out.insert(format!("{prefix}_{name}"), json!(self.percentile(p)));
        }
        out
    }
}

/// How punctually the emulator kept its schedule, and why not: release lateness (verdict time -
/// release time) per packet; per timed sleep before a release, how late it woke
/// (wake-up lateness: timer slack, timer interrupt, scheduling) and how much of that it spent
/// runnable but waiting for a CPU (the scheduler's delay, from /proc/thread-self/schedstat).
#[derive(Default)]
struct Timing {
    late: Histogram,
    wake_late: Histogram,
    run_delay: Histogram,
    /// Spins before a release (kernel arrival times; with read times the loop polls the
    /// socket instead), and the time they took (µs): the CPU the punctuality costs.
    spins: u64,
    spin_us: u64,
    /// Where the time went in releases more than LATE_NOTE_US late (`LateCauses::attribute`).
    late_causes: LateCauses,
    /// The last timed sleep: when it ended (µs since `started`) and how long of it the
    /// emulator was runnable but had no CPU (µs).
    last_sleep: Option<(u64, u64)>,
}

/// Releases (the first packet of a batch) later than this are attributed to a cause (µs): the
/// tail that decides the p99 (the target is 100 µs idle).
const LATE_NOTE_US: u64 = 100;

/// For the releases later than LATE_NOTE_US, how many and their lateness (µs) split by where
/// the emulator was between the release time and the release:
/// - `timer`: asleep past the release time but not waiting for a CPU (the timer's interrupt
///   came late: timer slack, or on a VM the virtual CPU not running);
/// - `run_delay`: woken but waiting for a CPU (other real-time tasks, or no CPU at all);
/// - `busy`: running its own loop (reading, admitting, sending verdicts, which run the
///   forwarding of accepted packets) or interrupted by softirqs while it did.
#[derive(Default)]
struct LateCauses {
    count: u64,
    timer_us: u64,
    run_delay_us: u64,
    busy_us: u64,
}

impl LateCauses {
    /// A release at `now` of a packet due at `due`, after the last timed sleep
    /// `(ended, run_delay)` (every sleep is set to end by the next release): the part of the
    /// lateness spent in that sleep is run delay (up to what schedstat counted) then timer;
    /// the rest is busy.
    fn attribute(&mut self, due: u64, now: u64, last_sleep: Option<(u64, u64)>) {
        let late = now.saturating_sub(due);
        if late <= LATE_NOTE_US {
            return;
        }
        let asleep = last_sleep.map_or(0, |(ended, _)| ended.min(now).saturating_sub(due));
        let run_delay = last_sleep.map_or(0, |(_, delay)| delay).min(asleep);
        self.count += 1;
        self.run_delay_us += run_delay;
        self.timer_us += asleep - run_delay;
        self.busy_us += late - asleep;
    }

    fn summary(&self) -> serde_json::Value {
        json!({"above_us": LATE_NOTE_US, "count": self.count, "timer_us": self.timer_us,
               "run_delay_us": self.run_delay_us, "busy_us": self.busy_us})
    }
}

#[derive(Default)]
struct Counters {
    /// Arrivals (packets and aggregates: one verdict and one log record each).
    packets: u64,
    /// Of them aggregates, and the packets all arrivals stand for.
    aggregates: u64,
    segments: u64,
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
    /// The last arrival time given to the model (µs since `started`; arrivals never go back).
    last_arrival_us: u64,
    /// When the socket was last read empty: every packet read later arrived after it.
    drained_at_us: u64,
    arrival_time: ArrivalTime,
    /// Packets whose arrival time is the kernel's receive timestamp (the others: read time).
    kernel_stamped: u64,
    log: Option<BufWriter<File>>,
    counters: Counters,
    timing: Timing,
    /// The IP MTU aggregates are cut to (`log::aggregate_size`).
    mtu: u32,
}

impl Emulator {
    fn now_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    /// The packet's arrival at this queue: the kernel's timestamp when it gave one and
    /// `--arrival-time kernel` (so the model sees the true arrival however late the emulator
    /// read the packet), else `now`, the time it was read; never later than `now`, nor before
    /// the last time the socket was read empty, nor before the previous arrival.
    fn arrival_us(&mut self, packet: &Packet, now: u64) -> u64 {
        let stamped = match self.arrival_time {
            ArrivalTime::Kernel => packet
                .kernel_time_us
                .map(|t| t.saturating_sub(self.started_unix_us)),
            ArrivalTime::Read => None,
        };
        self.kernel_stamped += u64::from(stamped.is_some());
        let arrival = stamped
            .unwrap_or(now)
            .min(now)
            .max(self.drained_at_us)
            .max(self.last_arrival_us);
        self.last_arrival_us = arrival;
        arrival
    }

    fn admit(&mut self, queue: &mut NfQueue, packet: &Packet, now: u64) -> std::io::Result<()> {
        let now = self.arrival_us(packet, now);
        let (len, flow) = log::parse_ipv4(packet.head())
            .unwrap_or((packet.head_len as u16, log::FiveTuple::default()));
        // An aggregate's IP length field may not hold its size (BIG TCP writes 0): the
        // kernel's length does.
        let (len, bytes, segs) = if packet.gso {
            let (bytes, segs) = log::aggregate_size(packet.head(), packet.len, self.mtu);
            (packet.len, bytes, segs)
        } else {
            (len as u32, len as u32, 1)
        };
        let outcome = self.link.arrive_aggregate(now, bytes, segs);
        let c = &mut self.counters;
        c.packets += 1;
        c.aggregates += u64::from(packet.gso);
        c.segments += segs as u64;
        c.bytes += bytes as u64;
        let joined = if outcome.fate == Fate::Forwarded {
            segs
        } else {
            0
        };
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
            len: len.min(u16::MAX as u32) as u16,
            fate: outcome.fate.code(),
            due_us: if forwarded {
                self.started_unix_us + outcome.release_us
            } else {
                0
            },
            bytes,
            segs: segs.min(u16::MAX as u32) as u16,
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

    /// Accept every packet whose release time has come, with one batch verdict sent at once
    /// (with any drop verdicts queued before it): `held` is in arrival (= kernel id) order and
    /// releases never reorder, so the packets due are exactly the kernel queue's prefix up to
    /// the last of them (dropped ones already had their verdict). Their log records are
    /// written after the verdict went out, so a log write never delays a release. When the
    /// next release is due (µs since `started`).
    fn release_due(&mut self, queue: &mut NfQueue) -> std::io::Result<Option<u64>> {
        let now = self.now_us();
        let due = self
            .held
            .iter()
            .take_while(|(due, _, _)| *due <= now)
            .count();
        if due > 0 {
            queue.verdict_through(self.held[due - 1].1, NF_ACCEPT);
            queue.flush_verdicts()?;
            let first = self.held[0].0;
            let last_sleep = self.timing.last_sleep;
            self.timing.late_causes.attribute(first, now, last_sleep);
            for (due, _, mut record) in self.held.drain(..due) {
                self.timing.late.record_us(now - due);
                if let Some(out) = self.log.as_mut() {
                    record.release_us = self.started_unix_us + now;
                    out.write_all(&record.encode())?;
                }
            }
        }
        Ok(self.held.front().map(|(due, _, _)| *due))
    }

    /// Spin until `due` (µs since `started`, at most MAX_SPIN_US ahead): the last stretch
    /// before a release, which a timed sleep would overshoot.
    fn spin_until(&mut self, due: u64) {
        let from = self.now_us();
        if from >= due {
            return;
        }
        let mut now = from;
        while now < due {
            std::hint::spin_loop();
            now = self.now_us();
        }
        self.timing.spins += 1;
        self.timing.spin_us += now - from;
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
    let jitter = match (args.jitter_us, args.jitter_dist) {
        (0, _) => Jitter::None,
        (max_us, JitterDist::Uniform) => Jitter::Uniform { max_us },
        (mean_us, JitterDist::Exponential) => Jitter::Exponential { mean_us },
    };
    Ok(LinkConfig {
        rate,
        delay_us: args.delay_us,
        jitter,
        buffer,
        aqm,
        loss: args.loss,
        seed: args.seed,
    })
}

fn describe(
    cfg: &LinkConfig,
    queue_num: u16,
    mode: Mode,
    mtu: u32,
    started_unix: f64,
) -> serde_json::Value {
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
    let (jitter_us, jitter_dist) = match cfg.jitter {
        Jitter::None => (0, json!(null)),
        Jitter::Uniform { max_us } => (max_us, json!("uniform")),
        Jitter::Exponential { mean_us } => (mean_us, json!("exponential")),
    };
    let mtu = (mode == Mode::Aggregate).then_some(mtu);
    json!({"queue_num": queue_num, "mode": mode.name(), "mtu": mtu, "rate": rate, "delay_us": cfg.delay_us,
           "jitter_us": jitter_us, "jitter_dist": jitter_dist, "buffer": buffer, "aqm": aqm,
           "loss": cfg.loss,
           "seed": cfg.seed, "started_unix": started_unix,
           "record_bytes": log::RECORD_BYTES})
}

/// Asks for SCHED_FIFO at `priority` (0: keep the normal scheduler). What the emulator runs
/// with goes into its counters: a host that refuses (no CAP_SYS_NICE, RLIMIT_RTPRIO) still
/// emulates, and its timing check shows the cost.
fn schedule(priority: u8) -> serde_json::Value {
    if priority == 0 {
        return json!({"policy": "other"});
    }
    let param = libc::sched_param {
        sched_priority: i32::from(priority),
    };
    // SAFETY: sched_setscheduler reads the parameter we pass; 0 is this thread's process.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
        json!({"policy": "fifo", "priority": priority})
    } else {
        let error = std::io::Error::last_os_error();
        json!({"policy": "other", "refused": format!("SCHED_FIFO {priority}: {error}")})
    }
}

/// Time this thread spent runnable, waiting for a CPU (ns): /proc/thread-self/schedstat's
/// second field. None where the kernel does not keep it.
fn run_delay_ns(schedstat: &File) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 96];
    let n = schedstat.read_at(&mut buf, 0).ok()?;
    std::str::from_utf8(&buf[..n])
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// How the emulator runs: its scheduling and how it waits for releases.
#[derive(Clone, Copy)]
struct Punctuality {
    rt_priority: u8,
    spin_us: u64,
}

fn run(
    queue_num: u16,
    cfg: LinkConfig,
    log_path: Option<PathBuf>,
    stats_out: Option<PathBuf>,
    arrival_time: ArrivalTime,
    punctuality: Punctuality,
    // Some(the link's MTU): `--mode aggregate`.
    aggregate_mtu: Option<u32>,
) -> Result<(), AgentError> {
    let (mode, mtu) = match aggregate_mtu {
        Some(mtu) => (Mode::Aggregate, mtu),
        None => (Mode::Packet, 0),
    };
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
    let description = describe(&cfg, queue_num, mode, mtu, started_unix);
    if let Some(out) = log_out.as_mut() {
        log::write_header(out, &description)?;
    }
    let mut queue = NfQueue::open(queue_num, 65_536, mode == Mode::Aggregate).map_err(|e| {
        AgentError::usage(format!("cannot bind NFQUEUE {queue_num} (needs root): {e}"))
    })?;
    // Wake-ups as close to the requested time as the kernel allows (default slack: 50 µs;
    // 0 would mean the default): what counts when SCHED_FIFO is refused, as the kernel gives
    // real-time tasks no slack anyway.
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64) };
    let scheduling = schedule(punctuality.rt_priority);
    let spin_us = punctuality.spin_us;
    let schedstat = File::open("/proc/thread-self/schedstat").ok();
    println!("{}", json!({"event": "ready", "queue_num": queue_num}));
    std::io::stdout().flush()?;

    let mut emu = Emulator {
        link,
        started,
        started_unix_us: (started_unix * 1e6) as u64,
        held: VecDeque::new(),
        last_arrival_us: 0,
        drained_at_us: 0,
        arrival_time,
        kernel_stamped: 0,
        log: log_out,
        counters: Counters::default(),
        timing: Timing::default(),
        mtu,
    };
    let mut arrived: Vec<Packet> = Vec::with_capacity(1024);
    // The release the last sleep stopped `margin` short of: its remainder is spun.
    let mut approaching: Option<u64> = None;
    while !stop_requested() {
        // Release first: the loop comes back here from the sleep or spin before a release, and
        // reading what arrived meanwhile can wait until the verdict has gone out.
        emu.release_due(&mut queue)?;
        arrived.clear();
        let reading_at = emu.now_us();
        let drained = match queue.recv_packets(&mut arrived, 8) {
            Ok(drained) => drained,
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                emu.counters.overruns += 1;
                false
            }
            Err(e) => return Err(AgentError::runtime(format!("NFQUEUE receive: {e}"))),
        };
        let now = emu.now_us();
        for packet in &arrived {
            emu.admit(&mut queue, packet, now)?;
        }
        let next_due = emu.release_due(&mut queue)?;
        queue.flush_verdicts()?;
        if !drained {
            continue;
        }
        emu.drained_at_us = reading_at;
        // Every arrival so far had a kernel timestamp: sleep until the next release without
        // waking for arrivals (~5 packets per wake-up at 1 Gbit/s instead of one wake-up or
        // busy poll per packet), then spin the last `spin_us`. Otherwise wake on arrivals and
        // poll the socket for the last `spin_us` (an arrival's time is when it is read).
        let kernel_timed = emu.kernel_stamped == emu.counters.packets;
        // Sleep until `spin_us` before the next release (measured from now, after the verdicts
        // went out: sending them runs the forwarding of the accepted packets), recording how
        // late the sleep ends and how much of that the emulator was runnable but had no CPU.
        let delay_before = schedstat.as_ref().and_then(run_delay_ns);
        let now = emu.now_us();
        let next = next_due.map(|due| (due, due.saturating_sub(now)));
        let margin = next.map_or(0, |(_, us)| spin_margin_us(us, spin_us));
        let (timed, woken_early) = match next {
            // Within the margin, or back from the sleep that stopped short of this release.
            Some((due, us)) if us <= margin || (approaching == Some(due) && us <= spin_us) => {
                if kernel_timed {
                    emu.spin_until(due);
                }
                (None, false)
            }
            Some((due, us)) if kernel_timed => {
                let sleep = us - margin;
                if sleep <= MAX_BLIND_US {
                    approaching = Some(due);
                }
                let sleep = sleep.min(MAX_BLIND_US);
                queue.sleep(Duration::from_micros(sleep));
                (Some(sleep), false)
            }
            Some((due, us)) => {
                let sleep = us - margin;
                approaching = Some(due);
                let arrived = queue.wait(Some(Duration::from_micros(sleep)))?;
                (Some(sleep), arrived)
            }
            None => {
                queue.wait(Some(Duration::from_millis(200)))?;
                (None, false)
            }
        };
        if let (Some(sleep), false) = (timed, woken_early) {
            let woke = emu.now_us();
            emu.timing
                .wake_late
                .record_us(woke.saturating_sub(now + sleep));
            let delay_after = schedstat.as_ref().and_then(run_delay_ns);
            let mut delay_us = 0;
            if let (Some(before), Some(after)) = (delay_before, delay_after) {
                delay_us = after.saturating_sub(before) / 1000;
                emu.timing.run_delay.record_us(delay_us);
            }
            emu.timing.last_sleep = Some((woke, delay_us));
        }
    }
    // Release what is still held so that no packet stays queued in the kernel.
    if let Some((_, id, _)) = emu.held.back() {
        queue.verdict_through(*id, NF_ACCEPT);
    }
    emu.held.clear();
    queue.flush_verdicts()?;
    let verdict_errors = queue.verdict_errors;
    let syscalls = queue.syscalls;
    drop(queue);
    if let Some(out) = emu.log.as_mut() {
        out.flush()?;
    }
    if let Some(path) = stats_out {
        let c = &emu.counters;
        let cpu = cpu_times();
        let stats = json!({
            "config": description,
            "packets": c.packets, "aggregates": c.aggregates, "segments": c.segments,
            "bytes": c.bytes, "forwarded": c.forwarded,
            "dropped_full": c.dropped_full, "dropped_red": c.dropped_red,
            "dropped_loss": c.dropped_loss, "max_qlen_pkts": c.max_qlen_pkts,
            "overruns": c.overruns, "verdict_errors": verdict_errors,
            "late_us_p50": emu.timing.late.percentile(50.0),
            "late_us_p99": emu.timing.late.percentile(99.0),
            "late_us_max": emu.timing.late.percentile(100.0),
            "scheduling": scheduling,
            "wakeups": {
                "count": emu.timing.wake_late.total,
                "late": emu.timing.wake_late.summary("us"),
                "run_delay": emu.timing.run_delay.summary("us"),
            },
            "late_causes": emu.timing.late_causes.summary(),
            "spin": {
                "us": spin_us, "count": emu.timing.spins,
                "cpu_s": emu.timing.spin_us as f64 / 1e6,
            },
            "kernel_stamped": emu.kernel_stamped,
            "cpu_s": cpu.user_s + cpu.system_s,
            "cpu_user_s": cpu.user_s, "cpu_system_s": cpu.system_s,
            "syscalls": {
                "recv_calls": syscalls.recv_calls, "empty_recvs": syscalls.empty_recvs,
                "datagrams": syscalls.datagrams, "verdict_sends": syscalls.verdict_sends,
                "verdict_messages": syscalls.verdict_messages, "waits": syscalls.waits,
            },
        });
        std::fs::write(&path, format!("{stats}\n"))?;
    }
    Ok(())
}

struct CpuTimes {
    user_s: f64,
    /// Kernel time, including the forwarding (and the receiving host's stack) that an accept
    /// verdict runs in this process's context, and the checksums of queued packets.
    system_s: f64,
}

/// CPU time this process used so far.
fn cpu_times() -> CpuTimes {
    // SAFETY: getrusage writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    CpuTimes {
        user_s: tv(usage.ru_utime),
        system_s: tv(usage.ru_stime),
    }
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
            args.arrival_time,
            Punctuality {
                rt_priority: args.rt_priority,
                spin_us: args.spin_us,
            },
            (args.mode == Mode::Aggregate).then_some(args.mtu),
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
    fn the_spin_before_a_release_is_bounded_by_the_wait() {
        // A long wait: the whole `--spin-us`; a short one: a SPIN_SHARE of it.
        assert_eq!(spin_margin_us(5_000, 60), 60);
        assert_eq!(spin_margin_us(600, 60), 60);
        assert_eq!(spin_margin_us(120, 60), 12);
        assert_eq!(spin_margin_us(9, 60), 0);
        assert_eq!(spin_margin_us(5_000, 0), 0);
        let cli = Cli::try_parse_from(["ccbench-link", "run", "--queue-num", "1"]).unwrap();
        let Command::Run(args) = cli.command;
        assert_eq!(
            (args.spin_us, args.rt_priority),
            (DEFAULT_SPIN_US, DEFAULT_RT_PRIORITY)
        );
        for bad in ["201", "-1"] {
            let argv = ["ccbench-link", "run", "--queue-num", "1", "--spin-us", bad];
            assert!(Cli::try_parse_from(argv).is_err(), "--spin-us {bad}");
        }
    }

    #[test]
    fn late_releases_are_split_between_timer_run_delay_and_busy() {
        let mut causes = LateCauses::default();
        // On time, or late by no more than LATE_NOTE_US: not counted.
        causes.attribute(1_000, 1_000 + LATE_NOTE_US, Some((1_050, 0)));
        assert_eq!(causes.count, 0);
        // Due at 1000; the sleep ended at 1300 after 100 µs waiting for a CPU; released at
        // 1350: 200 µs timer, 100 µs run delay, 50 µs busy.
        causes.attribute(1_000, 1_350, Some((1_300, 100)));
        // A sleep that ended before the release time: all busy.
        causes.attribute(1_000, 1_400, Some((900, 30)));
        // Run delay counts for at most the part of the lateness spent asleep.
        causes.attribute(1_000, 1_150, Some((1_120, 500)));
        assert_eq!(
            (
                causes.count,
                causes.timer_us,
                causes.run_delay_us,
                causes.busy_us
            ),
            (3, 200, 220, 50 + 400 + 30)
        );
    }

    #[test]
    fn timing_percentiles_interpolate_between_ranks() {
        let mut late = Histogram::default();
        assert_eq!(late.percentile(50.0), None);
        for us in (1..=100).rev() {
            late.record_us(us);
        }
        // 100 values: h = 99 p / 100, between ranks floor(h) and the next (metrics.py's rule).
        assert_eq!(late.percentile(0.0), Some(1.0));
        assert_eq!(late.percentile(50.0), Some(50.5));
        assert_eq!(late.percentile(99.0), Some(99.01));
        assert_eq!(late.percentile(100.0), Some(100.0));
        // Bounded memory: anything from 100 ms on shares the last bin.
        late.record_us(5_000_000);
        assert_eq!(late.percentile(100.0), Some(HISTOGRAM_US as f64));
        assert_eq!(late.summary("x")["x_max"], json!(HISTOGRAM_US as f64));
    }
}
