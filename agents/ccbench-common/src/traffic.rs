//! Traffic models: how much data the application has handed to a flow by a given time.
//! Used by the kernel-TCP sender and by the userspace transport alike, so a spec's traffic
//! model means the same thing in both runtimes. Pure: time is passed in, randomness comes
//! from the model's own seeded generator (runs are reproducible from the spec's seed).
//!
//! Calls are expected with non-decreasing `now_s` (senders read a monotonic clock): the
//! random models generate their schedule forward only, and a query for an earlier time than
//! one already answered gets the later answer.

mod args;
mod rng;
#[cfg(test)]
mod tests;

pub use args::{TrafficArgs, TrafficKind};
pub use rng::{exponential, Pareto, SplitMix64};

/// A source of application data for one flow.
pub trait Traffic: Send {
    /// Total bytes the application has made available from the flow's start up to `now_s`
    /// (seconds since the flow's start). Non-decreasing in `now_s`; `u64::MAX` for bulk.
    fn available(&mut self, now_s: f64) -> u64;
    /// The next time after `now_s` at which `available` grows, if it ever does (a sender that
    /// has sent everything available sleeps until then).
    fn next_change(&mut self, now_s: f64) -> Option<f64>;
}

/// Bulk: always more data (the seeds' long-lived FTP-like flows).
pub struct Bulk;

impl Traffic for Bulk {
    fn available(&mut self, _now_s: f64) -> u64 {
        u64::MAX
    }
    fn next_change(&mut self, _now_s: f64) -> Option<f64> {
        None
    }
}

/// A model parameter that was refused, and why (the CLI maps `param` to its flag).
#[derive(Debug, Clone, PartialEq)]
pub struct ParamError {
    pub param: &'static str,
    pub reason: String,
}

fn positive(param: &'static str, value: f64) -> Result<f64, ParamError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(ParamError {
            param,
            reason: format!("must be a finite number > 0, got {value}"),
        })
    }
}

fn positive_int(param: &'static str, value: u64) -> Result<u64, ParamError> {
    if value > 0 {
        Ok(value)
    } else {
        Err(ParamError {
            param,
            reason: "must be > 0, got 0".into(),
        })
    }
}

fn pareto_shape(value: f64) -> Result<f64, ParamError> {
    if value.is_finite() && value > 1.0 {
        Ok(value)
    } else {
        Err(ParamError {
            param: "shape",
            reason: format!(
                "must be > 1 (a Pareto distribution with shape <= 1 has no finite mean), got {value}"
            ),
        })
    }
}

/// Rate-driven models (on/off, CBR) hand data over in whole units rather than byte by byte,
/// so a sender wakes per unit: 1000 bytes, or 1 ms worth of data at high rates (at most 1000
/// hand-overs per second). Remainders carry over, so the long-run rate is exact.
pub fn unit_bytes_for_rate(rate_bps: u64) -> u64 {
    const MIN_UNIT_BYTES: u64 = 1000;
    const MAX_HANDOVERS_PER_S: u64 = 1000;
    MIN_UNIT_BYTES.max((rate_bps / 8).div_ceil(MAX_HANDOVERS_PER_S))
}

/// One hand-over: at `at_s`, `bytes` (> 0) more become available.
#[derive(Debug, Clone, Copy)]
struct Release {
    at_s: f64,
    bytes: u64,
}

/// A model's schedule as a time-ordered stream of hand-overs, generated lazily.
trait Releases {
    fn next_release(&mut self) -> Option<Release>;
}

/// Answers `available` / `next_change` from a release stream, reading it forward only.
#[derive(Debug)]
struct Cursor {
    released: u64,
    pending: Option<Release>,
}

impl Cursor {
    fn start(releases: &mut impl Releases) -> Self {
        Self {
            released: 0,
            pending: releases.next_release(),
        }
    }

    /// Take every release due at or before `now_s`.
    fn advance(&mut self, releases: &mut impl Releases, now_s: f64) {
        while let Some(release) = self.pending {
            if release.at_s > now_s {
                break;
            }
            self.released = self.released.saturating_add(release.bytes);
            self.pending = releases.next_release();
        }
    }

    fn available(&mut self, releases: &mut impl Releases, now_s: f64) -> u64 {
        self.advance(releases, now_s);
        self.released
    }

    /// After `advance`, the pending release is the first one strictly after `now_s`.
    fn next_change(&mut self, releases: &mut impl Releases, now_s: f64) -> Option<f64> {
        self.advance(releases, now_s);
        self.pending.map(|release| release.at_s)
    }
}

/// Everything available at once; the flow ends when it has all been acknowledged.
#[derive(Debug, Clone)]
pub struct FixedSize {
    bytes: u64,
}

impl FixedSize {
    pub fn new(bytes: u64) -> Result<Self, ParamError> {
        Ok(Self {
            bytes: positive_int("bytes", bytes)?,
        })
    }
}

impl Traffic for FixedSize {
    fn available(&mut self, _now_s: f64) -> u64 {
        self.bytes
    }
    fn next_change(&mut self, _now_s: f64) -> Option<f64> {
        None
    }
}

/// Constant bit rate: one unit every unit·8/rate seconds, the first at the flow's start.
#[derive(Debug)]
pub struct Cbr {
    schedule: CbrSchedule,
    cursor: Cursor,
}

#[derive(Debug)]
struct CbrSchedule {
    period_s: f64,
    unit_bytes: u64,
    next_unit: u64,
}

impl Releases for CbrSchedule {
    fn next_release(&mut self) -> Option<Release> {
        // k·period rather than a running sum: no drift over long flows.
        let at_s = self.next_unit as f64 * self.period_s;
        self.next_unit += 1;
        Some(Release {
            at_s,
            bytes: self.unit_bytes,
        })
    }
}

impl Cbr {
    pub fn new(rate_bps: u64) -> Result<Self, ParamError> {
        let rate_bps = positive_int("rate_bps", rate_bps)?;
        let unit_bytes = unit_bytes_for_rate(rate_bps);
        let mut schedule = CbrSchedule {
            period_s: unit_bytes as f64 * 8.0 / rate_bps as f64,
            unit_bytes,
            next_unit: 0,
        };
        let cursor = Cursor::start(&mut schedule);
        Ok(Self { schedule, cursor })
    }
}

impl Traffic for Cbr {
    fn available(&mut self, now_s: f64) -> u64 {
        self.cursor.available(&mut self.schedule, now_s)
    }
    fn next_change(&mut self, now_s: f64) -> Option<f64> {
        self.cursor.next_change(&mut self.schedule, now_s)
    }
}

/// On/off source with Pareto-distributed ON and OFF periods, producing data at `rate_bps`
/// while ON (seed 004 §III-C.4: "ON/OFF UDP sources whose ON/OFF times are drawn from
/// heavy-tailed distributions such as the Pareto distribution", shape 1.2, mean ON 1 s,
/// mean OFF 2 s, 12 kbit/s while ON). Long-run rate: rate·on/(on+off).
/// The flow starts at the beginning of an ON period (it starts when it has data). Unit k
/// (of `unit_bytes_for_rate`) is handed over when the cumulative ON time reaches k·unit·8/rate,
/// so ON periods shorter than a unit's time still add up to the exact long-run rate.
#[derive(Debug)]
pub struct OnOff {
    schedule: OnOffSchedule,
    cursor: Cursor,
}

#[derive(Debug)]
struct OnOffSchedule {
    on: Pareto,
    off: Pareto,
    rng: SplitMix64,
    unit_bytes: u64,
    /// ON time needed to produce one unit.
    unit_on_s: f64,
    /// The current ON period: start, length, and the ON time of all earlier periods.
    period_start_s: f64,
    period_on_s: f64,
    on_before_s: f64,
    next_unit: u64,
}

impl Releases for OnOffSchedule {
    fn next_release(&mut self) -> Option<Release> {
        loop {
            let due_on_s = self.next_unit as f64 * self.unit_on_s;
            if due_on_s <= self.on_before_s + self.period_on_s {
                self.next_unit += 1;
                return Some(Release {
                    at_s: self.period_start_s + (due_on_s - self.on_before_s),
                    bytes: self.unit_bytes,
                });
            }
            // This ON period is used up: an OFF period, then the next ON period.
            self.on_before_s += self.period_on_s;
            self.period_start_s += self.period_on_s + self.off.sample(&mut self.rng);
            self.period_on_s = self.on.sample(&mut self.rng);
        }
    }
}

impl OnOff {
    pub fn new(
        shape: f64,
        on_mean_s: f64,
        off_mean_s: f64,
        rate_bps: u64,
        seed: u64,
    ) -> Result<Self, ParamError> {
        let shape = pareto_shape(shape)?;
        let on_mean_s = positive("on_mean_s", on_mean_s)?;
        let off_mean_s = positive("off_mean_s", off_mean_s)?;
        let rate_bps = positive_int("rate_bps", rate_bps)?;
        let unit_bytes = unit_bytes_for_rate(rate_bps);
        let on = Pareto::with_mean(on_mean_s, shape);
        let mut rng = SplitMix64::new(seed);
        let mut schedule = OnOffSchedule {
            on,
            off: Pareto::with_mean(off_mean_s, shape),
            period_on_s: on.sample(&mut rng),
            rng,
            unit_bytes,
            unit_on_s: unit_bytes as f64 * 8.0 / rate_bps as f64,
            period_start_s: 0.0,
            on_before_s: 0.0,
            next_unit: 0,
        };
        let cursor = Cursor::start(&mut schedule);
        Ok(Self { schedule, cursor })
    }
}

impl Traffic for OnOff {
    fn available(&mut self, now_s: f64) -> u64 {
        self.cursor.available(&mut self.schedule, now_s)
    }
    fn next_change(&mut self, now_s: f64) -> Option<f64> {
        self.cursor.next_change(&mut self.schedule, now_s)
    }
}

/// Web-like traffic (seed 001 §IV-B: "connection sizes are generated according to a Pareto
/// distribution, with exponentially distributed inter-arrival times"; the seed gives no
/// constants). For one sender, each transfer is appended to the flow's backlog when it
/// arrives; the first arrives at the flow's start. Long-run rate: mean size / mean gap.
#[derive(Debug)]
pub struct Web {
    schedule: WebSchedule,
    cursor: Cursor,
}

#[derive(Debug)]
struct WebSchedule {
    sizes: Pareto,
    mean_interarrival_s: f64,
    rng: SplitMix64,
    next_at_s: f64,
}

impl Releases for WebSchedule {
    fn next_release(&mut self) -> Option<Release> {
        let at_s = self.next_at_s;
        // Whole bytes, at least one, so every arrival makes `available` grow.
        let bytes = self.sizes.sample(&mut self.rng).round().max(1.0) as u64;
        self.next_at_s += exponential(self.mean_interarrival_s, &mut self.rng);
        Some(Release { at_s, bytes })
    }
}

impl Web {
    pub fn new(
        mean_size_bytes: f64,
        shape: f64,
        mean_interarrival_s: f64,
        seed: u64,
    ) -> Result<Self, ParamError> {
        let mean_size_bytes = positive("mean_size_bytes", mean_size_bytes)?;
        let shape = pareto_shape(shape)?;
        let mean_interarrival_s = positive("mean_interarrival_s", mean_interarrival_s)?;
        let mut schedule = WebSchedule {
            sizes: Pareto::with_mean(mean_size_bytes, shape),
            mean_interarrival_s,
            rng: SplitMix64::new(seed),
            next_at_s: 0.0,
        };
        let cursor = Cursor::start(&mut schedule);
        Ok(Self { schedule, cursor })
    }
}

impl Traffic for Web {
    fn available(&mut self, now_s: f64) -> u64 {
        self.cursor.available(&mut self.schedule, now_s)
    }
    fn next_change(&mut self, now_s: f64) -> Option<f64> {
        self.cursor.next_change(&mut self.schedule, now_s)
    }
}
