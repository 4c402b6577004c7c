//! A deterministic virtual-clock simulator for controller tests: flows of ccbench's userspace
//! transport (the real `ccbench_transport::sender::Sender` and `receiver::FlowReceiver`, each
//! sender driven by a `Box<dyn Controller>`) share one drop-tail bottleneck.
//!
//! Why a crate of its own: `ccbench-transport` depends on `ccbench-cc`, so a simulator driving
//! the transport cannot live in `ccbench-cc`. This dev-only crate (`publish = false`, nothing
//! depends on it) sits above both and holds the simulator and the controller tests that need a
//! network (`tests/controllers/`); controller unit tests that need none stay in `ccbench-cc`.
//! (`ccbench-cc` dev-depending on a simulator crate would be a dependency cycle usable from
//! integration tests only, with `ccbench-cc` built twice; this keeps the graph acyclic.)
//!
//! Model (network times exact in integer nanoseconds, events ordered by (time, insertion order)):
//! - Each sender's access path is infinitely fast: a packet reaches the bottleneck the instant
//!   the sender emits it, or after the flow's `Flow::send_jitter` (order kept). The bottleneck serializes packets at `Link::rate_bytes_per_s`; up to
//!   `Link::buffer_pkts` packets *wait* behind the one being serialized (ns-2's and Linux
//!   pfifo's convention), a packet arriving to a full buffer is dropped (drop tail).
//! - After serialization a packet propagates for `Link::delay` (plus the flow's `extra_delay`)
//!   to its `FlowReceiver`, which ACKs every packet at once (unless `Flow::delayed_acks`) with the
//!   transport's ACK: cumulative point, echoed sequence number and send timestamp, the SACK
//!   bitmap of the 64 packets before it, the receiver controller's feedback (ARB). ACKs travel
//!   `Link::delay` (plus `extra_delay`) back and are never lost or queued.
//! - Everything else is the transport's (`ccbench_transport::sender` documents it): when a
//!   packet may leave (window, pacing), loss detection, Tahoe / Reno / NewReno / None recovery,
//!   the RFC 6298 RTO (initial 1 s, at most 60 s, minimum and granularity from `RtoConfig`).
//!   The simulator asks the sender what to send when its flow starts, after every ACK and
//!   when the sender's next deadline (pacing slot, RTO, controller timer) comes. Flows are bulk
//!   transfers with unlimited data.
//! - The transport sees its flow's time (since the flow started). Send timestamps travel in
//!   whole microseconds, as on the wire: an RTT sample is the exact RTT plus less than 1 µs.
//!
//! Recorded: one sample per round trip per flow (when the sender's cumulative point passes the
//! highest sequence number sent at the round's start), optionally one per ACK, every congestion
//! event and timeout with the controller's state right before and after the transport's call,
//! every drop, and totals over [`Sim::measure_from`, end]: delivered bytes, goodput, link
//! utilization, time-weighted mean queue.

use std::collections::BTreeSet;
use std::time::Duration;

use ccbench_cc::{Controller, ReceiverController};

mod engine;
#[cfg(test)]
mod tests;

/// The bottleneck.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    pub rate_bytes_per_s: f64,
    /// One-way propagation delay (each direction).
    pub delay: Duration,
    /// Packets that may wait behind the one being serialized.
    pub buffer_pkts: usize,
}

impl Link {
    pub fn new(rate_bytes_per_s: f64, delay: Duration, buffer_pkts: usize) -> Link {
        assert!(
            rate_bytes_per_s.is_finite() && rate_bytes_per_s > 0.0,
            "Link rate_bytes_per_s must be positive and finite, got {rate_bytes_per_s}"
        );
        Link {
            rate_bytes_per_s,
            delay,
            buffer_pkts,
        }
    }

    /// A link of `mbit_per_s` megabits per second.
    pub fn mbit(mbit_per_s: f64, delay: Duration, buffer_pkts: usize) -> Link {
        Link::new(mbit_per_s * 1e6 / 8.0, delay, buffer_pkts)
    }

    /// Serialization time of one packet, rounded up to the nanosecond (as the simulator does).
    pub fn serialization(&self, packet_bytes: u32) -> Duration {
        Duration::from_nanos((packet_bytes as f64 * 1e9 / self.rate_bytes_per_s).ceil() as u64)
    }

    /// RTT of a packet through an empty queue: both propagation delays plus its serialization.
    pub fn base_rtt(&self, packet_bytes: u32) -> Duration {
        2 * self.delay + self.serialization(packet_bytes)
    }

    /// Bandwidth-delay product in packets: rate x base RTT / packet size.
    pub fn bdp_pkts(&self, packet_bytes: u32) -> f64 {
        self.rate_bytes_per_s * self.base_rtt(packet_bytes).as_secs_f64() / packet_bytes as f64
    }
}

/// The transport's retransmission timer settings (`ccbench_transport::sender::SenderConfig`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RtoConfig {
    /// Lower bound (RFC 6298 (2.4) says 1 s; Linux uses 200 ms, the default here).
    pub min: Duration,
    /// Clock granularity G: enters the formula and the RTO is rounded up to a multiple of it
    /// (TCP-BFA's 500 ms BSD timer, seed 000 §3).
    pub granularity: Duration,
}

impl Default for RtoConfig {
    fn default() -> RtoConfig {
        RtoConfig {
            min: Duration::from_millis(200),
            granularity: Duration::from_millis(1),
        }
    }
}

/// One flow: a controller, an optional receiver-side controller, and test knobs.
pub struct Flow {
    controller: Box<dyn Controller>,
    receiver: Option<Box<dyn ReceiverController>>,
    start: Duration,
    extra_delay: Duration,
    send_jitter: Option<(Duration, u64)>,
    delayed_acks: bool,
    drop_first_transmission: BTreeSet<u64>,
}

impl Flow {
    pub fn new(controller: Box<dyn Controller>) -> Flow {
        Flow {
            controller,
            receiver: None,
            start: Duration::ZERO,
            extra_delay: Duration::ZERO,
            send_jitter: None,
            delayed_acks: false,
            drop_first_transmission: BTreeSet::new(),
        }
    }

    /// When the flow starts sending (simulation time).
    pub fn start_at(mut self, start: Duration) -> Flow {
        self.start = start;
        self
    }

    /// Extra one-way delay on this flow's path, in both directions (RTT differences).
    pub fn extra_delay(mut self, extra: Duration) -> Flow {
        self.extra_delay = extra;
        self
    }

    /// A random delay before each of this flow's packets reaches the bottleneck, uniform in
    /// [0, `max`] and drawn from `seed`, that never reorders the flow's packets (as
    /// `ccbench-link`'s jitter and a spec's `flows[].send_jitter`): seed 004 §III-A's "small
    /// random delay before each packet is sent", against phase effects.
    pub fn send_jitter(mut self, max: Duration, seed: u64) -> Flow {
        self.send_jitter = Some((max, seed));
        self
    }

    /// The receiver ACKs every second packet or after 40 ms (the transport's
    /// `transport.delayed_acks`); default: every packet at once.
    pub fn delayed_acks(mut self, on: bool) -> Flow {
        self.delayed_acks = on;
        self
    }

    /// The receiver-side controller (ARB); its feedback reaches `on_feedback` with the ACK.
    pub fn receiver(mut self, receiver: Box<dyn ReceiverController>) -> Flow {
        self.receiver = Some(receiver);
        self
    }

    /// Drop the first transmission of these sequence numbers before the bottleneck (exact
    /// loss patterns for tests; retransmissions pass).
    pub fn drop_first_transmission_of(mut self, seqs: impl IntoIterator<Item = u64>) -> Flow {
        self.drop_first_transmission.extend(seqs);
        self
    }
}

/// The simulation: build with `Sim::new(link).flow(controller)`, then `run(duration)`.
pub struct Sim {
    link: Link,
    packet_bytes: u32,
    initial_window: u32,
    rto: RtoConfig,
    per_ack_samples: bool,
    measure_from: Duration,
    flows: Vec<Flow>,
}

impl Sim {
    pub fn new(link: Link) -> Sim {
        Sim {
            link,
            packet_bytes: 1000,
            // The seeds' simulations start every flow at one packet.
            initial_window: 1,
            rto: RtoConfig::default(),
            per_ack_samples: false,
            measure_from: Duration::ZERO,
            flows: Vec::new(),
        }
    }

    /// Payload bytes per packet, all flows (default 1000; use the controllers' `Config::mss`).
    pub fn packet_bytes(mut self, bytes: u16) -> Sim {
        assert!(bytes > 0, "packet_bytes must be positive");
        self.packet_bytes = bytes.into();
        self
    }

    /// Packets every flow's window starts with (default 1, as the seeds' simulations).
    pub fn initial_window(mut self, packets: u32) -> Sim {
        assert!(packets > 0, "initial_window must be positive");
        self.initial_window = packets;
        self
    }

    pub fn rto(mut self, rto: RtoConfig) -> Sim {
        self.rto = rto;
        self
    }

    /// Also record a sample after every ACK (default: once per round trip).
    pub fn per_ack_samples(mut self, on: bool) -> Sim {
        self.per_ack_samples = on;
        self
    }

    /// Totals (goodput, utilization, mean queue) count from this time on.
    pub fn measure_from(mut self, from: Duration) -> Sim {
        self.measure_from = from;
        self
    }

    /// A bulk flow starting at time zero.
    pub fn flow(self, controller: Box<dyn Controller>) -> Sim {
        self.flow_with(Flow::new(controller))
    }

    pub fn flow_with(mut self, flow: Flow) -> Sim {
        self.flows.push(flow);
        self
    }

    pub fn run(self, duration: Duration) -> Report {
        engine::Engine::new(self).run(duration)
    }
}

/// The controller's and the sender's state after one ACK.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Simulation time.
    pub time: Duration,
    pub cwnd: f64,
    pub ssthresh: f64,
    pub pacing_rate: Option<f64>,
    /// The sender's RFC 6298 smoothed RTT.
    pub srtt: Option<Duration>,
    /// The RTT sample of the ACK this sample follows (None: none, or a retransmission).
    pub rtt: Option<Duration>,
    /// The sender's pipe (sent, not acknowledged, not presumed lost).
    pub in_flight: u32,
    /// What the controller's `on_ack` was told.
    pub in_recovery: bool,
    /// Packets waiting at the bottleneck (all flows).
    pub queue_pkts: usize,
    /// This flow's packets dropped so far (bottleneck and injected).
    pub drops: u64,
    pub delivered_bytes: u64,
    /// `state_values()`, in `state_names()` order.
    pub state: Vec<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Congestion,
    Timeout,
}

/// A congestion event or a timeout, with the controller's state right around the transport's
/// `on_congestion_event` / `on_timeout` call.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRecord {
    pub time: Duration,
    pub kind: EventKind,
    /// The first packet the event presumes lost (a timeout: the first unacknowledged one).
    pub lost_seq: u64,
    pub cwnd_before: f64,
    pub ssthresh_before: f64,
    pub cwnd_after: f64,
    pub ssthresh_after: f64,
    pub state_before: Vec<f64>,
    pub state_after: Vec<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropKind {
    /// The bottleneck buffer was full.
    Tail,
    /// `Flow::drop_first_transmission_of`.
    Injected,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropRecord {
    pub time: Duration,
    pub flow: usize,
    pub seq: u64,
    pub kind: DropKind,
    /// Packets waiting at the bottleneck when the packet arrived.
    pub queue_pkts: usize,
    /// Whether a packet was being serialized then.
    pub link_busy: bool,
}

#[derive(Clone, Debug)]
pub struct FlowReport {
    pub algorithm: &'static str,
    pub state_names: &'static [&'static str],
    /// Unique bytes acknowledged over the measurement interval.
    pub delivered_bytes: u64,
    /// `delivered_bytes` per second of the measurement interval.
    pub goodput_bytes_per_s: f64,
    /// Unique bytes acknowledged over the whole run.
    pub total_delivered_bytes: u64,
    /// Unique bytes the receiver got (at least the acknowledged ones: ACKs may be in flight).
    pub receiver_unique_bytes: u64,
    /// Packets that reached the receiver more than once.
    pub receiver_duplicates: u64,
    pub retransmissions: u64,
    /// Packets of this flow dropped (bottleneck and injected), whole run.
    pub drops: u64,
    pub events: Vec<EventRecord>,
    pub rounds: Vec<Sample>,
    /// Empty unless `Sim::per_ack_samples(true)`.
    pub acks: Vec<Sample>,
    /// Packets presumed lost and never retransmitted (Recovery::None).
    pub abandoned: u64,
}

impl FlowReport {
    pub fn congestion_events(&self) -> impl Iterator<Item = &EventRecord> {
        self.events
            .iter()
            .filter(|e| e.kind == EventKind::Congestion)
    }

    pub fn timeouts(&self) -> usize {
        self.events
            .iter()
            .filter(|e| e.kind == EventKind::Timeout)
            .count()
    }

    /// Index of a state variable by name.
    pub fn state_index(&self, name: &str) -> usize {
        self.state_names
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("{} has no state variable {name:?}", self.algorithm))
    }
}

#[derive(Clone, Debug)]
pub struct Report {
    /// Fraction of the measurement interval the bottleneck was serializing.
    pub utilization: f64,
    /// Time-weighted mean of the packets waiting at the bottleneck over the interval.
    pub mean_queue_pkts: f64,
    pub max_queue_pkts: usize,
    /// Every drop of the run.
    pub drops: Vec<DropRecord>,
    pub flows: Vec<FlowReport>,
}
