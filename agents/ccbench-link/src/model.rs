//! The link model: given a packet's arrival time and length, decide whether the link drops it
//! or when it leaves. No I/O and no clock: time is passed in (microseconds), so the same code is
//! driven by NFQUEUE in production and by a virtual clock in tests.
//!
//! Per packet, in order: random loss (on arrival), the queue discipline (drop-tail or RED)
//! against the buffer, serialization at the link rate (constant, or a Mahimahi-style trace of
//! delivery opportunities), then propagation delay with optional jitter (uniform or
//! exponential, drawn per packet) that never reorders.
//!
//! The queue holds every packet that has arrived and not yet finished transmission, including
//! the one being transmitted: a buffer of N packets means at most N such packets.
//!
//! An arrival may be a GSO/GRO aggregate of `segs` packets (`arrive_aggregate`) carrying
//! `bytes`, the sum of its packets' IP lengths: it is serialized in `bytes` at the rate and
//! occupies `segs` packets and `bytes` bytes of the buffer, as its packets back to back would;
//! it joins only if all of it fits, and loss and RED decide once for the whole aggregate.

use std::collections::VecDeque;

/// Bytes one delivery opportunity of a trace carries (one MTU-sized packet, as in Mahimahi).
pub const TRACE_OPPORTUNITY_BYTES: u32 = 1500;

#[derive(Debug, Clone, PartialEq)]
pub enum Rate {
    /// Unlimited: packets are only delayed.
    Unlimited,
    Constant {
        bps: u64,
    },
    /// Delivery opportunities at these offsets (µs, ascending) within a period that repeats.
    Trace {
        opportunities_us: Vec<u64>,
        period_us: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Buffer {
    Packets(u32),
    Bytes(u64),
}

/// RED (Floyd & Jacobson 1993): drop probability grows linearly from 0 at `min_th` to `max_p`
/// at `max_th` of the average queue (packets), spread out by the count since the last drop;
/// above `max_th` every arrival is dropped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedParams {
    pub min_th: f64,
    pub max_th: f64,
    pub max_p: f64,
    pub w_q: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Aqm {
    DropTail,
    Red(RedParams),
}

/// A random extra delay drawn for each forwarded packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Jitter {
    None,
    /// Uniform in [0, max_us].
    Uniform {
        max_us: u64,
    },
    /// Exponential with this mean.
    Exponential {
        mean_us: u64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    pub rate: Rate,
    pub delay_us: u64,
    pub jitter: Jitter,
    pub buffer: Option<Buffer>,
    pub aqm: Aqm,
    pub loss: f64,
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Forwarded,
    DroppedFull,
    DroppedRed,
    DroppedLoss,
}

impl Fate {
    pub fn code(self) -> u8 {
        match self {
            Fate::Forwarded => 0,
            Fate::DroppedFull => 1,
            Fate::DroppedRed => 2,
            Fate::DroppedLoss => 3,
        }
    }
}

/// What happened to one packet (or aggregate). Queue lengths (packets and bytes; an aggregate
/// counts as its packets) are seen by the arrival, before it joins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    pub fate: Fate,
    pub departure_us: u64,
    pub release_us: u64,
    pub qlen_pkts: u32,
    pub qlen_bytes: u64,
}

/// xorshift64*: small, fast, seeded, reproducible.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[derive(Debug, Clone, Default)]
struct RedState {
    avg: f64,
    count: i64,
    idle_since_us: Option<u64>,
}

#[derive(Debug, Clone)]
struct TraceCursor {
    /// Index into the opportunities of the current period and that period's start.
    index: usize,
    period_start_us: u64,
    /// Bytes left in the opportunity at `index` (already partly used by earlier packets).
    bytes_left: u32,
}

#[derive(Debug)]
pub struct Link {
    cfg: LinkConfig,
    /// (departure time, bytes, packets) of the arrivals in the queue, in order.
    queue: VecDeque<(u64, u32, u32)>,
    queued_bytes: u64,
    queued_pkts: u32,
    last_departure_us: u64,
    last_release_us: u64,
    red: RedState,
    trace: Option<TraceCursor>,
    rng: Rng,
}

impl Link {
    pub fn new(cfg: LinkConfig) -> Result<Link, String> {
        if let Rate::Trace {
            opportunities_us,
            period_us,
        } = &cfg.rate
        {
            if opportunities_us.is_empty() || *period_us == 0 {
                return Err("the trace has no delivery opportunity".into());
            }
            if opportunities_us.windows(2).any(|w| w[0] > w[1])
                || opportunities_us.last().is_some_and(|&t| t >= *period_us)
            {
                return Err("trace opportunities must be ascending and within the period".into());
            }
        }
        if let Rate::Constant { bps: 0 } = cfg.rate {
            return Err("the rate must be greater than 0".into());
        }
        if !(0.0..1.0).contains(&cfg.loss) {
            return Err("loss must be in [0, 1)".into());
        }
        if let Aqm::Red(p) = cfg.aqm {
            let valid = 0.0 <= p.min_th
                && p.min_th < p.max_th
                && p.max_p > 0.0
                && p.max_p <= 1.0
                && p.w_q > 0.0
                && p.w_q <= 1.0;
            if !valid {
                return Err("RED needs 0 <= min_th < max_th, 0 < max_p <= 1, 0 < w_q <= 1".into());
            }
        }
        let trace = match &cfg.rate {
            Rate::Trace { .. } => Some(TraceCursor {
                index: 0,
                period_start_us: 0,
                bytes_left: TRACE_OPPORTUNITY_BYTES,
            }),
            _ => None,
        };
        let rng = Rng::new(cfg.seed);
        Ok(Link {
            cfg,
            queue: VecDeque::new(),
            queued_bytes: 0,
            queued_pkts: 0,
            last_departure_us: 0,
            last_release_us: 0,
            red: RedState {
                count: -1,
                ..Default::default()
            },
            trace,
            rng,
        })
    }

    /// Forget packets that finished transmission by `now`.
    fn advance(&mut self, now_us: u64) {
        while let Some(&(departure, bytes, segs)) = self.queue.front() {
            if departure > now_us {
                break;
            }
            self.queue.pop_front();
            self.queued_bytes -= bytes as u64;
            self.queued_pkts -= segs;
            if self.queue.is_empty() {
                self.red.idle_since_us = Some(departure);
            }
        }
    }

    #[cfg(test)]
    pub fn queue_len(&mut self, now_us: u64) -> (u32, u64) {
        self.advance(now_us);
        (self.queued_pkts, self.queued_bytes)
    }

    /// A packet of `len` bytes arrives at `now_us` (non-decreasing across calls).
    #[cfg(test)]
    pub fn arrive(&mut self, now_us: u64, len: u32) -> Outcome {
        self.arrive_aggregate(now_us, len, 1)
    }

    /// `segs` packets (one, or a GSO/GRO aggregate of them) of `len` bytes in all arrive at
    /// `now_us` (non-decreasing across calls).
    pub fn arrive_aggregate(&mut self, now_us: u64, len: u32, segs: u32) -> Outcome {
        let segs = segs.max(1);
        self.advance(now_us);
        let (qlen_pkts, qlen_bytes) = (self.queued_pkts, self.queued_bytes);
        let dropped = |fate| Outcome {
            fate,
            departure_us: 0,
            release_us: 0,
            qlen_pkts,
            qlen_bytes,
        };
        if self.cfg.loss > 0.0 && self.rng.next_f64() < self.cfg.loss {
            return dropped(Fate::DroppedLoss);
        }
        if let Aqm::Red(params) = self.cfg.aqm {
            if self.red_drops(now_us, params, qlen_pkts) {
                return dropped(Fate::DroppedRed);
            }
        }
        let full = match self.cfg.buffer {
            Some(Buffer::Packets(n)) => qlen_pkts + segs > n,
            Some(Buffer::Bytes(b)) => qlen_bytes + len as u64 > b,
            None => false,
        };
        if full {
            return dropped(Fate::DroppedFull);
        }
        let start = now_us.max(self.last_departure_us);
        let departure = self.transmit(start, len);
        self.last_departure_us = departure;
        if !matches!(self.cfg.rate, Rate::Unlimited) {
            self.queue.push_back((departure, len, segs));
            self.queued_bytes += len as u64;
            self.queued_pkts += segs;
        }
        let jitter = match self.cfg.jitter {
            Jitter::None => 0,
            Jitter::Uniform { max_us } => (self.rng.next_f64() * (max_us + 1) as f64) as u64,
            // Inverse transform: -mean ln(1 - u), u in [0, 1), rounded to the nearest µs.
            Jitter::Exponential { mean_us } => {
                (-(mean_us as f64) * (1.0 - self.rng.next_f64()).ln()).round() as u64
            }
        };
        // Jitter never reorders: a packet leaves no earlier than the one before it.
        let release = (departure + self.cfg.delay_us + jitter).max(self.last_release_us);
        self.last_release_us = release;
        Outcome {
            fate: Fate::Forwarded,
            departure_us: departure,
            release_us: release,
            qlen_pkts,
            qlen_bytes,
        }
    }

    /// When a packet whose transmission may start at `start` has been fully sent.
    fn transmit(&mut self, start: u64, len: u32) -> u64 {
        match &self.cfg.rate {
            Rate::Unlimited => start,
            Rate::Constant { bps } => start + (len as u64 * 8 * 1_000_000).div_ceil(*bps),
            Rate::Trace {
                opportunities_us,
                period_us,
            } => {
                let (opportunities, period) = (opportunities_us, *period_us);
                let cursor = self.trace.as_mut().expect("trace cursor");
                let at = |c: &TraceCursor| c.period_start_us + opportunities[c.index];
                let step = |c: &mut TraceCursor| {
                    c.index += 1;
                    if c.index == opportunities.len() {
                        c.index = 0;
                        c.period_start_us += period;
                    }
                    c.bytes_left = TRACE_OPPORTUNITY_BYTES;
                };
                // Opportunities (or what is left of one) that passed while the link had
                // nothing to send are lost.
                if at(cursor) < start {
                    cursor.period_start_us += (start - at(cursor)) / period * period;
                    cursor.bytes_left = TRACE_OPPORTUNITY_BYTES;
                    while at(cursor) < start {
                        step(cursor);
                    }
                } else if cursor.bytes_left == 0 {
                    step(cursor);
                }
                let mut remaining = len;
                loop {
                    let used = remaining.min(cursor.bytes_left);
                    cursor.bytes_left -= used;
                    remaining -= used;
                    if remaining == 0 {
                        return at(cursor);
                    }
                    step(cursor);
                }
            }
        }
    }

    fn red_drops(&mut self, now_us: u64, p: RedParams, qlen_pkts: u32) -> bool {
        let red = &mut self.red;
        if qlen_pkts > 0 || red.idle_since_us.is_none() {
            red.avg = (1.0 - p.w_q) * red.avg + p.w_q * qlen_pkts as f64;
        } else {
            // After an idle period, decay the average as if m empty-queue packets had arrived,
            // m = idle time / transmission time of a typical (1500-byte) packet.
            let idle = now_us.saturating_sub(red.idle_since_us.unwrap_or(now_us));
            let tx_us = match self.cfg.rate {
                Rate::Constant { bps } => (1500 * 8 * 1_000_000 / bps).max(1),
                _ => 1000,
            };
            red.avg *= (1.0 - p.w_q).powf((idle / tx_us) as f64);
            red.idle_since_us = None;
        }
        if red.avg < p.min_th {
            red.count = -1;
            return false;
        }
        if red.avg >= p.max_th {
            red.count = 0;
            return true;
        }
        red.count += 1;
        let p_b = p.max_p * (red.avg - p.min_th) / (p.max_th - p.min_th);
        let denominator = 1.0 - red.count as f64 * p_b;
        let p_a = if denominator <= 0.0 {
            1.0
        } else {
            (p_b / denominator).min(1.0)
        };
        if self.rng.next_f64() < p_a {
            red.count = 0;
            return true;
        }
        false
    }

    #[cfg(test)]
    pub fn red_average(&self) -> f64 {
        self.red.avg
    }
}

/// Parse a Mahimahi trace: one millisecond timestamp per line, each a 1500-byte delivery
/// opportunity; the trace repeats with a period of its last timestamp.
pub fn parse_mahimahi_trace(text: &str) -> Result<Rate, String> {
    let mut opportunities = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let ms: u64 = line
            .parse()
            .map_err(|_| format!("trace line {}: {line:?} is not a whole number of ms", n + 1))?;
        opportunities.push(ms * 1000);
    }
    let period = *opportunities.last().ok_or("the trace is empty")?;
    if period == 0 {
        return Err("the trace's last timestamp must be > 0 ms (it is the period)".into());
    }
    if opportunities.windows(2).any(|w| w[0] > w[1]) {
        return Err("trace timestamps must not decrease".into());
    }
    // The last timestamp is the period: an opportunity at `period` is the next period's 0.
    let opportunities_us: Vec<u64> = opportunities
        .iter()
        .map(|&t| if t == period { 0 } else { t })
        .collect();
    let mut sorted = opportunities_us;
    sorted.sort_unstable();
    Ok(Rate::Trace {
        opportunities_us: sorted,
        period_us: period,
    })
}
