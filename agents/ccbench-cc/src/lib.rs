//! ccbench's userspace congestion controllers (issue 5), written once and driven by the
//! userspace transport (`ccbench-transport`), in production and, for the tests that need a
//! network, on the virtual clock of `ccbench-sim`; unit tests here drive the hooks directly.
//!
//! No I/O and no clock: every hook receives `now` (time since the flow's start, as the caller
//! measures it), the same discipline as quinn-proto's `Controller`. Windows are in packets of
//! the flow's fixed payload size (the seeds reason in packets), rates in bytes per second.
//!
//! Division of labour with the transport: the transport detects losses (duplicate ACKs /
//! selective bitmap, RTO per RFC 6298), retransmits, and decides when one *congestion event*
//! starts (at most one per recovery episode, i.e. per window of data, as TCP does); the
//! controller only decides how much may be in flight (`cwnd`) and how fast to send
//! (`pacing_rate`). Which loss-recovery semantics the transport applies is the controller's
//! `recovery()` (Tahoe, Reno or NewReno).

use std::collections::BTreeMap;
use std::time::Duration;

pub mod params;
pub mod rng;

// Standard TCP and seeds 000 (TCP-BFA), 001 (adaptive AIMD), 002 (Vegas, Dual).
pub mod aaimd;
pub mod bfa;
pub mod dual;
pub mod newreno;
pub mod reno;
pub mod tahoe;
pub mod vegas;
pub mod window;

// Seed 002 (ARB), seed 003 (Westwood family), seed 004 (TFRC).
pub mod alpha_paced_westwood;
pub mod arb;
pub mod paced_newreno;
pub mod paced_westwood;
#[cfg(test)]
mod test_support;
pub mod tfrc;
pub mod westwood;
pub mod westwood_common;

/// Time since the flow started, on the caller's clock (virtual in tests).
pub type Time = Duration;

/// The loss-recovery semantics the transport applies for this controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// After a loss: retransmit, then slow start from one packet (no fast recovery).
    Tahoe,
    /// Fast recovery ends at the first ACK that advances the cumulative ACK point.
    Reno,
    /// Fast recovery ends when everything outstanding at the loss is acknowledged (RFC 6582).
    NewReno,
    /// Rate-based (TFRC): no retransmission; losses are only counted.
    None,
}

/// A packet handed to the network (first transmission or retransmission).
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    pub now: Time,
    pub seq: u64,
    pub bytes: u32,
    /// Packets in flight after this one was sent.
    pub in_flight: u32,
    pub retransmission: bool,
}

/// One ACK as the transport processed it.
#[derive(Clone, Copy, Debug)]
pub struct Ack<'a> {
    pub now: Time,
    /// Sequence number of the packet whose arrival triggered this ACK (echoed by the receiver).
    pub seq: u64,
    /// `now` minus the echoed send time of `seq`; None when `seq` was a retransmission (Karn).
    pub rtt: Option<Duration>,
    /// Sequence numbers this ACK acknowledged for the first time (cumulatively or selectively).
    pub newly_acked: &'a [u64],
    /// Bytes acknowledged for the first time by this ACK.
    pub newly_acked_bytes: u64,
    /// Highest sequence number acknowledged so far (selectively or cumulatively).
    pub highest_acked: u64,
    /// Packets in flight after this ACK.
    pub in_flight: u32,
    /// Bytes delivered since the flow started, after this ACK.
    pub delivered_bytes: u64,
    /// True while the transport is in fast recovery (window growth is suspended).
    pub in_recovery: bool,
    /// Packets this ACK counts for window growth (`window::acked_packets`): those it newly
    /// acknowledged (RFC 3465, as Linux), or with the transport's per-ACK growth (ns-2's TCP,
    /// the seeds' simulations) 1 when it advanced the cumulative point, else 0.
    pub growth_packets: f64,
}

/// A congestion event: the transport detected loss outside an ongoing recovery episode.
#[derive(Clone, Copy, Debug)]
pub struct CongestionEvent {
    pub now: Time,
    /// Packets in flight when the loss was detected.
    pub in_flight: u32,
    /// Send time of the first lost packet (controllers that react once per RTT compare it).
    pub lost_sent_at: Time,
}

/// What a receiver-side controller tells the sender (carried in the ACK's feedback byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feedback {
    /// ARB (seed 002): the receiver's command from its one-way delay measurements.
    Arb(ArbCommand),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArbCommand {
    RateIncrease,
    Restrain,
    RateDecrease,
}

impl Feedback {
    /// The feedback byte on the wire (0 means none).
    pub fn to_wire(self) -> u8 {
        match self {
            Feedback::Arb(ArbCommand::RateIncrease) => 1,
            Feedback::Arb(ArbCommand::Restrain) => 2,
            Feedback::Arb(ArbCommand::RateDecrease) => 3,
        }
    }

    pub fn from_wire(byte: u8) -> Option<Feedback> {
        match byte {
            1 => Some(Feedback::Arb(ArbCommand::RateIncrease)),
            2 => Some(Feedback::Arb(ArbCommand::Restrain)),
            3 => Some(Feedback::Arb(ArbCommand::RateDecrease)),
            _ => None,
        }
    }
}

/// The sender half of an algorithm.
pub trait Controller: Send {
    /// The algorithm id (the same everywhere: schema, BPF file, report legend).
    fn id(&self) -> &'static str;
    fn recovery(&self) -> Recovery;
    /// The window the flow starts with, in packets (the transport's `initial_window`, called
    /// once before the first packet): window-based controllers start their cwnd there
    /// (`window::INITIAL_CWND` until told), rate-based ones ignore it.
    fn set_initial_window(&mut self, _packets: f64) {}
    /// The most packets the receiver lets the flow have outstanding (the transport's
    /// `receive_window`, called before the first packet when there is one): window-based
    /// controllers never grow their cwnd past it, so a loss cuts from what was really in
    /// flight (ns-2 halves min(cwnd_, window_); RFC 5681's FlightSize). Rate-based ones ignore it.
    fn set_max_window(&mut self, _packets: f64) {}
    fn on_sent(&mut self, _sent: &Sent) {}
    fn on_ack(&mut self, ack: &Ack);
    /// Once per congestion event (see the crate docs).
    fn on_congestion_event(&mut self, event: &CongestionEvent);
    /// The retransmission timer fired.
    fn on_timeout(&mut self, now: Time);
    /// Receiver feedback (ARB); others ignore it.
    fn on_feedback(&mut self, _now: Time, _feedback: Feedback) {}
    /// When the controller next needs `on_timer` (TFRC's round ends), if ever.
    fn next_timer(&self) -> Option<Time> {
        None
    }
    fn on_timer(&mut self, _now: Time) {}
    /// Packets allowed in flight (f64::INFINITY for purely rate-based controllers).
    fn cwnd(&self) -> f64;
    /// Slow-start threshold in packets (f64::INFINITY until the first congestion event).
    fn ssthresh(&self) -> f64;
    /// Bytes per second to pace at; None: send as the window allows (ACK clocking).
    fn pacing_rate(&self) -> Option<f64>;
    /// Names of the algorithm's own state variables, as the kernel agent's state trace names
    /// them where the meaning is the same (e.g. `bse_bps`, `diff_pkts`, `beta`).
    fn state_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// Values of `state_names()`, in that order (`out.len() == state_names().len()`).
    fn state_values(&self, _out: &mut [f64]) {}
}

/// The receiver half of an algorithm that needs one (ARB); None for the others.
pub trait ReceiverController: Send {
    /// A data packet arrived: `sent_at` is the sender's timestamp (its clock, not ours: only
    /// differences of one-way delays are meaningful). Returns feedback for the ACK, if any.
    fn on_packet(&mut self, now: Time, seq: u64, sent_at: Time, bytes: u32) -> Option<Feedback>;
}

/// How a flow is configured: payload bytes per packet and the spec's tunables by name (names
/// as in `schemas/algorithms.py`; unspecified ones take the seed's values).
#[derive(Clone, Debug)]
pub struct Config {
    pub mss: u32,
    pub params: BTreeMap<String, f64>,
    /// Seed for controllers that draw random numbers (TFRC's strategy S3).
    pub seed: u64,
}

impl Config {
    /// `mss`-byte packets and these parameters by name (tests and examples).
    pub fn with_params(mss: u32, params: &[(&str, f64)], seed: u64) -> Config {
        let params = params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        Config { mss, params, seed }
    }
}

/// Bad configuration, naming the parameter and the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Every algorithm id this crate implements.
pub const ALGORITHMS: &[&str] = &[
    "tahoe",
    "reno",
    "newreno",
    "bfa",
    "aaimd",
    "vegas",
    "dual",
    "arb",
    "westwood",
    "paced_newreno",
    "paced_westwood",
    "alpha_paced_westwood",
    "tfrc",
];

/// The sender controller for an algorithm id.
pub fn new_controller(id: &str, config: &Config) -> Result<Box<dyn Controller>, ConfigError> {
    Ok(match id {
        "tahoe" => Box::new(tahoe::new(config)?),
        "reno" => Box::new(reno::new(config)?),
        "newreno" => Box::new(newreno::new(config)?),
        "bfa" => Box::new(bfa::Bfa::new(config)?),
        "aaimd" => Box::new(aaimd::Aaimd::new(config)?),
        "vegas" => Box::new(vegas::Vegas::new(config)?),
        "dual" => Box::new(dual::Dual::new(config)?),
        "arb" => Box::new(arb::Arb::new(config)?),
        "westwood" => Box::new(westwood::Westwood::new(config)?),
        "paced_newreno" => Box::new(paced_newreno::PacedNewReno::new(config)?),
        "paced_westwood" => Box::new(paced_westwood::new(config)?),
        "alpha_paced_westwood" => Box::new(alpha_paced_westwood::new(config)?),
        "tfrc" => Box::new(tfrc::Tfrc::new(config)?),
        _ => {
            return Err(ConfigError(format!(
                "algorithm {id:?} has no userspace controller (userspace: {})",
                ALGORITHMS.join(", ")
            )))
        }
    })
}

/// The receiver controller for an algorithm id, for algorithms that have one.
pub fn new_receiver(
    id: &str,
    config: &Config,
) -> Result<Option<Box<dyn ReceiverController>>, ConfigError> {
    Ok(match id {
        "arb" => Some(Box::new(arb::ArbReceiver::new(config)?)),
        _ => None,
    })
}
