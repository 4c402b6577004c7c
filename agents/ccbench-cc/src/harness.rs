//! A deterministic virtual-clock simulator for controller tests: senders driven by
//! `Box<dyn Controller>` share one drop-tail bottleneck.
//!
//! Model (everything exact, integer nanoseconds, events ordered by (time, insertion order)):
//! - Each sender's access path is infinitely fast: a packet reaches the bottleneck the instant
//!   it is sent. The bottleneck serializes packets at `Link::rate_bytes_per_s`; up to
//!   `Link::buffer_pkts` packets *wait* behind the one being serialized (ns-2's and Linux
//!   pfifo's convention), a packet arriving to a full buffer is dropped (drop tail).
//! - After serialization a packet propagates for `Link::delay` (plus the flow's `extra_delay`)
//!   to its receiver, which ACKs every packet at once: the ACK carries the cumulative ACK point
//!   (next expected sequence number) and echoes the arriving packet's sequence number and send
//!   time. ACKs travel `Link::delay` (plus `extra_delay`) back and are never lost or queued.
//! - The sender keeps a per-packet scoreboard (the echo tells it exactly which packet arrived,
//!   as the UDP transport's selective bitmap does). Packets in flight ("pipe", RFC 6675) are
//!   those sent and neither acknowledged nor marked lost; it sends while pipe < floor(cwnd)
//!   (at least one) and, when `pacing_rate()` is Some, no faster than that rate.
//! - Loss detection: a duplicate ACK is one that acknowledges a new packet without advancing
//!   the cumulative point; the third one starts a congestion event (one `on_congestion_event`
//!   per recovery episode), with the recovery semantics of `Controller::recovery()`:
//!   * Tahoe: every packet outstanding is marked lost and resent in order as the window
//!     allows (go-back-N, skipping packets known to have arrived); no new event until all of
//!     them are acknowledged.
//!   * Reno: the first unacknowledged packet is retransmitted at once; fast recovery ends at
//!     the first ACK that advances the cumulative point; a further hole needs three new
//!     duplicate ACKs (a second event, as in classic Reno).
//!   * NewReno (RFC 6582): a partial ACK retransmits the next hole and stays in recovery;
//!     recovery ends when everything outstanding at the event is acknowledged.
//!   * None: nothing is retransmitted; a packet is declared lost after three duplicate ACKs,
//!     an event is raised for the first loss after the previous event's window.
//!
//!   ACKs processed in an episode are passed with `in_recovery = true` (the ACK that starts or
//!   ends the episode too), except cumulative-advancing ACKs after a Tahoe event or a timeout,
//!   which open the window (slow start).
//! - RTO (RFC 6298) for all but `Recovery::None`: SRTT/RTTVAR from non-retransmitted packets
//!   (Karn), RTO = max(min, SRTT + max(G, 4 RTTVAR)) rounded up to a multiple of the timer
//!   granularity G, initial 1 s, doubled on expiry up to `max`; started when a packet is sent
//!   and none is outstanding, restarted when the cumulative point advances. On expiry every
//!   outstanding packet is marked lost (go-back-N) and `on_timeout` is called.
//!
//! Recorded: one sample per round trip per flow (when the cumulative point passes the highest
//! sequence number sent at the round's start), optionally one per ACK, every congestion event
//! and timeout with the controller's state before and after, every drop, and totals over
//! [`Sim::measure_from`, end]: delivered bytes, goodput, link utilization, time-weighted mean
//! queue.

use std::cmp::Ordering;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use std::time::Duration;

use crate::{Ack, CongestionEvent, Controller, Feedback, ReceiverController, Recovery, Sent, Time};

const NS_PER_S: f64 = 1e9;

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
        Duration::from_nanos(serialization_ns(self.rate_bytes_per_s, packet_bytes))
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

fn serialization_ns(rate_bytes_per_s: f64, bytes: u32) -> u64 {
    (bytes as f64 * NS_PER_S / rate_bytes_per_s).ceil() as u64
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).expect("duration fits in u64 nanoseconds")
}

/// RFC 6298 retransmission timer settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RtoConfig {
    /// Lower bound (RFC 6298 (2.4) says 1 s; Linux uses 200 ms, the default here).
    pub min: Duration,
    /// Upper bound (RFC 6298 (2.5): at least 60 s).
    pub max: Duration,
    /// RTO before the first RTT sample (RFC 6298 (2.1): 1 s).
    pub initial: Duration,
    /// Clock granularity G: enters the formula and the RTO is rounded up to a multiple of it
    /// (TCP-BFA's 500 ms BSD timer, seed 000 §3). Zero: exact.
    pub granularity: Duration,
}

impl Default for RtoConfig {
    fn default() -> RtoConfig {
        RtoConfig {
            min: Duration::from_millis(200),
            max: Duration::from_secs(60),
            initial: Duration::from_secs(1),
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
    drop_first_transmission: BTreeSet<u64>,
    size_pkts: Option<u64>,
}

impl Flow {
    pub fn new(controller: Box<dyn Controller>) -> Flow {
        Flow {
            controller,
            receiver: None,
            start: Duration::ZERO,
            extra_delay: Duration::ZERO,
            drop_first_transmission: BTreeSet::new(),
            size_pkts: None,
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

    /// Send only this many packets (default: unlimited bulk transfer).
    pub fn size_pkts(mut self, packets: u64) -> Flow {
        self.size_pkts = Some(packets);
        self
    }
}

/// The simulation: build with `Sim::new(link).flow(controller)`, then `run(duration)`.
pub struct Sim {
    link: Link,
    packet_bytes: u32,
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
            rto: RtoConfig::default(),
            per_ack_samples: false,
            measure_from: Duration::ZERO,
            flows: Vec::new(),
        }
    }

    /// Bytes per packet, all flows (default 1000; use the controllers' `Config::mss`).
    pub fn packet_bytes(mut self, bytes: u32) -> Sim {
        assert!(bytes > 0, "packet_bytes must be positive");
        self.packet_bytes = bytes;
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

    /// Totals (goodput, utilization, mean queue, drops) count from this time on.
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
        Engine::new(self).run(duration)
    }
}

/// The controller's state at one instant.
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
    pub in_flight: u32,
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

/// A congestion event or a timeout, with the controller's state around it.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRecord {
    pub time: Duration,
    pub kind: EventKind,
    pub in_flight: u32,
    /// Sequence number of the first packet the event treats as lost.
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
    /// Unique bytes the receiver got (must equal the acknowledged ones at the end, but for
    /// ACKs still in flight).
    pub receiver_unique_bytes: u64,
    /// Packets that reached the receiver more than once.
    pub receiver_duplicates: u64,
    pub packets_sent: u64,
    pub retransmissions: u64,
    /// Packets of this flow dropped (bottleneck and injected), whole run.
    pub drops: u64,
    pub events: Vec<EventRecord>,
    pub rounds: Vec<Sample>,
    /// Empty unless `Sim::per_ack_samples(true)`.
    pub acks: Vec<Sample>,
    /// Packets declared lost and never retransmitted (Recovery::None).
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
    pub duration: Duration,
    pub measure_from: Duration,
    /// Fraction of the measurement interval the bottleneck was serializing.
    pub utilization: f64,
    /// Time-weighted mean of the packets waiting at the bottleneck over the interval.
    pub mean_queue_pkts: f64,
    pub max_queue_pkts: usize,
    /// Drops at the full buffer during the measurement interval.
    pub tail_drops: u64,
    /// Every drop of the run.
    pub drops: Vec<DropRecord>,
    pub flows: Vec<FlowReport>,
}

// --- engine -----------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct DataPacket {
    flow: usize,
    seq: u64,
    sent_at_ns: u64,
    retransmission: bool,
}

#[derive(Clone, Copy, Debug)]
struct AckPacket {
    echo_seq: u64,
    echo_sent_at_ns: u64,
    echo_retransmission: bool,
    cumulative: u64,
    feedback: Option<Feedback>,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    FlowStart(usize),
    LinkDone,
    Deliver(DataPacket),
    AckArrives(usize, AckPacket),
    Rto(usize, u64),
    Pace(usize, u64),
    ControllerTimer(usize, u64),
}

struct Scheduled {
    time_ns: u64,
    order: u64,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.time_ns, self.order) == (other.time_ns, other.order)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    /// Reversed: BinaryHeap is a max-heap and the earliest (time, order) must come out first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time_ns, other.order).cmp(&(self.time_ns, self.order))
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct PacketState {
    /// Send time of the latest transmission.
    sent_at_ns: u64,
    retransmitted: bool,
    received: bool,
    /// Counted in the pipe (sent, not acknowledged, not marked lost).
    in_pipe: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Open,
    /// Reno / NewReno fast recovery; `recover` is the highest sequence sent at the event.
    FastRecovery {
        recover: u64,
    },
    /// After a Tahoe event or a timeout: go-back-N until `recover` is acknowledged.
    LossEpisode {
        recover: u64,
    },
}

struct Receiver {
    next_expected: u64,
    out_of_order: BTreeSet<u64>,
    unique_bytes: u64,
    duplicates: u64,
    controller: Option<Box<dyn ReceiverController>>,
}

struct Sender {
    controller: Box<dyn Controller>,
    recovery: Recovery,
    start_ns: u64,
    extra_delay_ns: u64,
    drop_first_transmission: BTreeSet<u64>,
    size_pkts: Option<u64>,
    started: bool,
    next_seq: u64,
    /// Lowest sequence number neither received nor abandoned (the sender's cumulative point).
    base: u64,
    /// Scoreboard of [base, next_seq).
    packets: VecDeque<PacketState>,
    in_flight: u32,
    /// Marked lost, waiting for retransmission (Tahoe / timeout go-back-N).
    retransmit_queue: BTreeSet<u64>,
    /// Fast retransmission to send at once, regardless of the window.
    forced: Option<u64>,
    dupacks: u32,
    phase: Phase,
    /// Recovery::None: highest sequence sent at the last event.
    none_recover: Option<u64>,
    srtt_ns: Option<f64>,
    rttvar_ns: f64,
    rto_ns: u64,
    rto_generation: u64,
    rto_deadline: Option<u64>,
    pace_next_ns: u64,
    pace_generation: u64,
    pace_pending: Option<u64>,
    timer_generation: u64,
    timer_pending: Option<u64>,
    round_end_seq: u64,
    /// Highest sequence number acknowledged so far.
    highest_acked: u64,
    // statistics
    delivered_bytes: u64,
    delivered_at_measure_start: Option<u64>,
    packets_sent: u64,
    retransmissions: u64,
    drops: u64,
    abandoned: u64,
    events: Vec<EventRecord>,
    rounds: Vec<Sample>,
    acks: Vec<Sample>,
    receiver: Receiver,
}

impl Sender {
    fn packet(&mut self, seq: u64) -> &mut PacketState {
        let index = usize::try_from(seq - self.base).expect("scoreboard index");
        &mut self.packets[index]
    }

    fn flow_time(&self, now_ns: u64) -> Time {
        Duration::from_nanos(now_ns.saturating_sub(self.start_ns))
    }

    fn state(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.controller.state_names().len()];
        self.controller.state_values(&mut out);
        out
    }

    /// Take a packet out of the pipe (acknowledged or marked lost).
    fn leave_pipe(&mut self, seq: u64) {
        let packet = self.packet(seq);
        if packet.in_pipe {
            packet.in_pipe = false;
            self.in_flight -= 1;
        }
    }

    /// Go-back-N: every outstanding packet not known to have arrived is marked lost.
    fn mark_all_lost(&mut self) {
        for seq in self.base..self.next_seq {
            if !self.packet(seq).received {
                self.leave_pipe(seq);
                self.retransmit_queue.insert(seq);
            }
        }
        self.forced = None;
    }

    fn outstanding(&self) -> bool {
        self.base < self.next_seq
    }

    /// RFC 6298 (2.2)-(2.3) and the RTO of (2.4) with the granularity rounding.
    fn rtt_sample(&mut self, rtt_ns: u64, rto: &RtoConfig) {
        let r = rtt_ns as f64;
        match self.srtt_ns {
            None => {
                self.srtt_ns = Some(r);
                self.rttvar_ns = r / 2.0;
            }
            Some(srtt) => {
                self.rttvar_ns = 0.75 * self.rttvar_ns + 0.25 * (srtt - r).abs();
                self.srtt_ns = Some(0.875 * srtt + 0.125 * r);
            }
        }
        let g = ns(rto.granularity) as f64;
        let mut value = self.srtt_ns.unwrap_or(r) + g.max(4.0 * self.rttvar_ns);
        if g > 0.0 {
            value = (value / g).ceil() * g;
        }
        self.rto_ns = (value as u64).clamp(ns(rto.min), ns(rto.max));
    }
}

struct Bottleneck {
    queue: VecDeque<DataPacket>,
    busy: bool,
    busy_since_ns: u64,
    busy_ns: u64,
    queue_integral: f64,
    queue_changed_ns: u64,
    max_queue: usize,
    tail_drops: u64,
}

struct Engine {
    link: Link,
    packet_bytes: u32,
    rto: RtoConfig,
    per_ack_samples: bool,
    measure_from_ns: u64,
    now_ns: u64,
    order: u64,
    heap: BinaryHeap<Scheduled>,
    bottleneck: Bottleneck,
    drops: Vec<DropRecord>,
    senders: Vec<Sender>,
}

impl Engine {
    fn new(sim: Sim) -> Engine {
        let rto = sim.rto;
        let senders: Vec<Sender> = sim
            .flows
            .into_iter()
            .map(|flow| Sender {
                recovery: flow.controller.recovery(),
                controller: flow.controller,
                start_ns: ns(flow.start),
                extra_delay_ns: ns(flow.extra_delay),
                drop_first_transmission: flow.drop_first_transmission,
                size_pkts: flow.size_pkts,
                started: false,
                next_seq: 0,
                base: 0,
                packets: VecDeque::new(),
                in_flight: 0,
                retransmit_queue: BTreeSet::new(),
                forced: None,
                dupacks: 0,
                phase: Phase::Open,
                none_recover: None,
                srtt_ns: None,
                rttvar_ns: 0.0,
                rto_ns: ns(rto.initial),
                rto_generation: 0,
                rto_deadline: None,
                pace_next_ns: 0,
                pace_generation: 0,
                pace_pending: None,
                timer_generation: 0,
                timer_pending: None,
                round_end_seq: 0,
                highest_acked: 0,
                delivered_bytes: 0,
                delivered_at_measure_start: None,
                packets_sent: 0,
                retransmissions: 0,
                drops: 0,
                abandoned: 0,
                events: Vec::new(),
                rounds: Vec::new(),
                acks: Vec::new(),
                receiver: Receiver {
                    next_expected: 0,
                    out_of_order: BTreeSet::new(),
                    unique_bytes: 0,
                    duplicates: 0,
                    controller: flow.receiver,
                },
            })
            .collect();
        let mut engine = Engine {
            link: sim.link,
            packet_bytes: sim.packet_bytes,
            rto,
            per_ack_samples: sim.per_ack_samples,
            measure_from_ns: ns(sim.measure_from),
            now_ns: 0,
            order: 0,
            heap: BinaryHeap::new(),
            bottleneck: Bottleneck {
                queue: VecDeque::new(),
                busy: false,
                busy_since_ns: 0,
                busy_ns: 0,
                queue_integral: 0.0,
                queue_changed_ns: 0,
                max_queue: 0,
                tail_drops: 0,
            },
            drops: Vec::new(),
            senders,
        };
        for flow in 0..engine.senders.len() {
            let start = engine.senders[flow].start_ns;
            engine.schedule(start, Event::FlowStart(flow));
        }
        engine
    }

    fn schedule(&mut self, time_ns: u64, event: Event) {
        self.order += 1;
        self.heap.push(Scheduled {
            time_ns,
            order: self.order,
            event,
        });
    }

    fn run(mut self, duration: Duration) -> Report {
        let end_ns = ns(duration);
        assert!(
            self.measure_from_ns < end_ns,
            "measure_from must be before the end"
        );
        while let Some(next) = self.heap.peek() {
            if next.time_ns > end_ns {
                break;
            }
            let Scheduled { time_ns, event, .. } = self.heap.pop().expect("peeked");
            self.advance_clock(time_ns);
            match event {
                Event::FlowStart(flow) => {
                    self.senders[flow].started = true;
                    self.after_controller_hook(flow);
                }
                Event::LinkDone => self.link_done(),
                Event::Deliver(packet) => self.deliver(packet),
                Event::AckArrives(flow, ack) => self.ack_arrives(flow, ack),
                Event::Rto(flow, generation) => {
                    if self.senders[flow].rto_generation == generation {
                        self.rto_fires(flow);
                    }
                }
                Event::Pace(flow, generation) => {
                    if self.senders[flow].pace_generation == generation {
                        self.senders[flow].pace_pending = None;
                        self.try_send(flow);
                    }
                }
                Event::ControllerTimer(flow, generation) => {
                    if self.senders[flow].timer_generation == generation {
                        self.senders[flow].timer_pending = None;
                        let now = self.senders[flow].flow_time(self.now_ns);
                        self.senders[flow].controller.on_timer(now);
                        self.after_controller_hook(flow);
                    }
                }
            }
        }
        self.advance_clock(end_ns);
        self.report(end_ns)
    }

    /// Integrates the queue and busy time up to `time_ns` (only the measured part).
    fn advance_clock(&mut self, time_ns: u64) {
        debug_assert!(time_ns >= self.now_ns, "time went backwards");
        let b = &mut self.bottleneck;
        let from = b.queue_changed_ns.max(self.measure_from_ns);
        if time_ns > from {
            b.queue_integral += b.queue.len() as f64 * (time_ns - from) as f64;
        }
        b.queue_changed_ns = time_ns;
        if b.busy {
            let from = b.busy_since_ns.max(self.measure_from_ns);
            if time_ns > from {
                b.busy_ns += time_ns - from;
            }
            b.busy_since_ns = time_ns;
        }
        if self.now_ns < self.measure_from_ns && time_ns >= self.measure_from_ns {
            for sender in &mut self.senders {
                sender.delivered_at_measure_start = Some(sender.delivered_bytes);
            }
        }
        self.now_ns = time_ns;
    }

    fn queue_len(&self) -> usize {
        self.bottleneck.queue.len()
    }

    // --- bottleneck ---

    fn enqueue(&mut self, packet: DataPacket, first_transmission: bool) {
        let sender = &mut self.senders[packet.flow];
        let injected = first_transmission && sender.drop_first_transmission.remove(&packet.seq);
        let full = self.bottleneck.busy && self.bottleneck.queue.len() >= self.link.buffer_pkts;
        if injected || full {
            sender.drops += 1;
            let kind = if injected {
                DropKind::Injected
            } else {
                if self.now_ns >= self.measure_from_ns {
                    self.bottleneck.tail_drops += 1;
                }
                DropKind::Tail
            };
            self.drops.push(DropRecord {
                time: Duration::from_nanos(self.now_ns),
                flow: packet.flow,
                seq: packet.seq,
                kind,
                queue_pkts: self.bottleneck.queue.len(),
                link_busy: self.bottleneck.busy,
            });
            return;
        }
        if self.bottleneck.busy {
            self.bottleneck.queue.push_back(packet);
            self.bottleneck.max_queue = self.bottleneck.max_queue.max(self.queue_len());
        } else {
            self.start_serializing(packet);
        }
    }

    fn start_serializing(&mut self, packet: DataPacket) {
        self.bottleneck.busy = true;
        self.bottleneck.busy_since_ns = self.now_ns;
        let done = self.now_ns + serialization_ns(self.link.rate_bytes_per_s, self.packet_bytes);
        self.schedule(done, Event::LinkDone);
        // The packet's propagation starts when its last bit leaves.
        let arrival = done + ns(self.link.delay) + self.senders[packet.flow].extra_delay_ns;
        self.schedule(arrival, Event::Deliver(packet));
    }

    fn link_done(&mut self) {
        self.bottleneck.busy = false;
        if let Some(next) = self.bottleneck.queue.pop_front() {
            self.start_serializing(next);
        }
    }

    // --- receiver ---

    fn deliver(&mut self, packet: DataPacket) {
        let bytes = self.packet_bytes;
        let sender = &mut self.senders[packet.flow];
        let receiver = &mut sender.receiver;
        let duplicate =
            packet.seq < receiver.next_expected || receiver.out_of_order.contains(&packet.seq);
        if duplicate {
            receiver.duplicates += 1;
        } else {
            receiver.unique_bytes += bytes as u64;
            if packet.seq == receiver.next_expected {
                receiver.next_expected += 1;
                while receiver.out_of_order.remove(&receiver.next_expected) {
                    receiver.next_expected += 1;
                }
            } else {
                receiver.out_of_order.insert(packet.seq);
            }
        }
        let now = Duration::from_nanos(self.now_ns.saturating_sub(sender.start_ns));
        let sent_at = Duration::from_nanos(packet.sent_at_ns.saturating_sub(sender.start_ns));
        let feedback = match receiver.controller.as_mut() {
            Some(controller) => controller.on_packet(now, packet.seq, sent_at, bytes),
            None => None,
        };
        let ack = AckPacket {
            echo_seq: packet.seq,
            echo_sent_at_ns: packet.sent_at_ns,
            echo_retransmission: packet.retransmission,
            cumulative: receiver.next_expected,
            feedback,
        };
        let at = self.now_ns + ns(self.link.delay) + sender.extra_delay_ns;
        self.schedule(at, Event::AckArrives(packet.flow, ack));
    }

    // --- sender ---

    fn ack_arrives(&mut self, flow: usize, ack: AckPacket) {
        let bytes = self.packet_bytes as u64;
        let rto_config = self.rto;
        let now_ns = self.now_ns;
        let s = &mut self.senders[flow];
        let now = s.flow_time(now_ns);
        let base_before = s.base;

        // Scoreboard: what this ACK acknowledges for the first time.
        let mut newly_acked: Vec<u64> = Vec::new();
        let cumulative_end = ack.cumulative.min(s.next_seq);
        let mut candidates: Vec<u64> = (s.base..cumulative_end).collect();
        if ack.echo_seq >= cumulative_end && ack.echo_seq >= s.base && ack.echo_seq < s.next_seq {
            candidates.push(ack.echo_seq);
        }
        for seq in candidates {
            if !s.packet(seq).received {
                s.leave_pipe(seq);
                s.packet(seq).received = true;
                s.retransmit_queue.remove(&seq);
                if s.forced == Some(seq) {
                    s.forced = None;
                }
                s.delivered_bytes += bytes;
                newly_acked.push(seq);
            }
        }
        if let Some(&highest) = newly_acked.iter().max() {
            s.highest_acked = s.highest_acked.max(highest);
        }

        // RTT (Karn: not from a retransmitted copy).
        let rtt = if ack.echo_retransmission {
            None
        } else {
            Some(Duration::from_nanos(now_ns - ack.echo_sent_at_ns))
        };
        if let Some(rtt) = rtt {
            s.rtt_sample(ns(rtt), &rto_config);
        }

        // Advance the cumulative point over received packets.
        while s.packets.front().is_some_and(|p| p.received) {
            s.packets.pop_front();
            s.base += 1;
        }
        let advanced = s.base > base_before;
        let duplicate_ack = !advanced && !newly_acked.is_empty();

        // Recovery semantics.
        let mut start_event = false;
        let mut in_recovery;
        // Recovery::None: the packet abandoned by this ACK and its send time.
        let mut abandoned: Option<(u64, u64)> = None;
        match (s.recovery, s.phase) {
            (Recovery::None, _) => {
                in_recovery = false;
                if advanced {
                    s.dupacks = 0;
                } else if duplicate_ack {
                    s.dupacks += 1;
                    if s.dupacks >= 3 && s.outstanding() {
                        // The hole at base is lost: abandon it (nothing is retransmitted).
                        let lost = s.base;
                        abandoned = Some((lost, s.packet(lost).sent_at_ns));
                        s.leave_pipe(lost);
                        s.abandoned += 1;
                        s.packets.pop_front();
                        s.base += 1;
                        while s.packets.front().is_some_and(|p| p.received) {
                            s.packets.pop_front();
                            s.base += 1;
                        }
                        s.dupacks = 0;
                        if s.none_recover.is_none_or(|recover| lost > recover) {
                            start_event = true;
                        }
                    }
                }
            }
            (_, Phase::Open) => {
                if advanced {
                    s.dupacks = 0;
                } else if duplicate_ack {
                    s.dupacks += 1;
                    start_event = s.dupacks == 3 && s.outstanding();
                }
                in_recovery = start_event;
            }
            (recovery, Phase::FastRecovery { recover }) => {
                in_recovery = true;
                if advanced {
                    s.dupacks = 0;
                    if recovery == Recovery::Reno || s.base > recover {
                        s.phase = Phase::Open;
                    } else if s.outstanding() {
                        // NewReno partial ACK: retransmit the next hole at once.
                        s.forced = Some(s.base);
                    }
                }
            }
            (_, Phase::LossEpisode { recover }) => {
                in_recovery = !advanced;
                if advanced {
                    s.dupacks = 0;
                    if s.base > recover {
                        s.phase = Phase::Open;
                    }
                }
            }
        }
        if start_event && s.recovery != Recovery::None {
            in_recovery = true;
        }

        // RTO timer (RFC 6298 (5.2), (5.3)).
        let mut restart_rto = false;
        if s.recovery != Recovery::None && advanced {
            if s.outstanding() {
                restart_rto = true;
            } else {
                s.rto_generation += 1;
                s.rto_deadline = None;
            }
        }

        let ack_view = Ack {
            now,
            seq: ack.echo_seq,
            rtt,
            newly_acked: &newly_acked,
            newly_acked_bytes: newly_acked.len() as u64 * bytes,
            highest_acked: s.highest_acked,
            in_flight: s.in_flight,
            delivered_bytes: s.delivered_bytes,
            in_recovery,
        };
        s.controller.on_ack(&ack_view);
        if let Some(feedback) = ack.feedback {
            s.controller.on_feedback(now, feedback);
        }

        if start_event {
            let (lost_seq, lost_sent_at_ns) = match abandoned {
                Some(lost) => lost,
                None => (s.base, s.packet(s.base).sent_at_ns),
            };
            let lost_sent_at = s.flow_time(lost_sent_at_ns);
            let event = CongestionEvent {
                now,
                in_flight: s.in_flight,
                lost_sent_at,
            };
            let (cwnd_before, ssthresh_before) = (s.controller.cwnd(), s.controller.ssthresh());
            let state_before = s.state();
            s.controller.on_congestion_event(&event);
            let recover = s.next_seq - 1;
            match s.recovery {
                Recovery::None => s.none_recover = Some(recover),
                Recovery::Tahoe => {
                    s.phase = Phase::LossEpisode { recover };
                    s.mark_all_lost();
                }
                Recovery::Reno | Recovery::NewReno => {
                    s.phase = Phase::FastRecovery { recover };
                    s.forced = Some(s.base);
                }
            }
            s.events.push(EventRecord {
                time: Duration::from_nanos(now_ns),
                kind: EventKind::Congestion,
                in_flight: event.in_flight,
                lost_seq,
                cwnd_before,
                ssthresh_before,
                cwnd_after: s.controller.cwnd(),
                ssthresh_after: s.controller.ssthresh(),
                state_before,
                state_after: s.state(),
            });
        }
        if restart_rto {
            self.arm_rto(flow);
        }

        self.after_controller_hook(flow);

        let s = &mut self.senders[flow];
        let round_ended = s.base >= s.round_end_seq && advanced;
        if round_ended {
            s.round_end_seq = s.next_seq;
        }
        if round_ended || self.per_ack_samples {
            let sample = self.sample(flow, rtt, in_recovery);
            let s = &mut self.senders[flow];
            if round_ended {
                s.rounds.push(sample.clone());
            }
            if self.per_ack_samples {
                s.acks.push(sample);
            }
        }
    }

    fn sample(&self, flow: usize, rtt: Option<Duration>, in_recovery: bool) -> Sample {
        let s = &self.senders[flow];
        Sample {
            time: Duration::from_nanos(self.now_ns),
            cwnd: s.controller.cwnd(),
            ssthresh: s.controller.ssthresh(),
            pacing_rate: s.controller.pacing_rate(),
            srtt: s.srtt_ns.map(|v| Duration::from_nanos(v as u64)),
            rtt,
            in_flight: s.in_flight,
            in_recovery,
            queue_pkts: self.queue_len(),
            drops: s.drops,
            delivered_bytes: s.delivered_bytes,
            state: s.state(),
        }
    }

    fn arm_rto(&mut self, flow: usize) {
        let s = &mut self.senders[flow];
        s.rto_generation += 1;
        let deadline = self.now_ns + s.rto_ns;
        s.rto_deadline = Some(deadline);
        let generation = s.rto_generation;
        self.schedule(deadline, Event::Rto(flow, generation));
    }

    fn rto_fires(&mut self, flow: usize) {
        let now_ns = self.now_ns;
        let max_rto = ns(self.rto.max);
        let s = &mut self.senders[flow];
        s.rto_deadline = None;
        if !s.outstanding() {
            return;
        }
        let now = s.flow_time(now_ns);
        let (cwnd_before, ssthresh_before) = (s.controller.cwnd(), s.controller.ssthresh());
        let state_before = s.state();
        let in_flight = s.in_flight;
        s.controller.on_timeout(now);
        s.mark_all_lost();
        s.phase = Phase::LossEpisode {
            recover: s.next_seq - 1,
        };
        s.dupacks = 0;
        // RFC 6298 (5.5): back off.
        s.rto_ns = (s.rto_ns * 2).min(max_rto);
        s.events.push(EventRecord {
            time: Duration::from_nanos(now_ns),
            kind: EventKind::Timeout,
            in_flight,
            lost_seq: s.base,
            cwnd_before,
            ssthresh_before,
            cwnd_after: s.controller.cwnd(),
            ssthresh_after: s.controller.ssthresh(),
            state_before,
            state_after: s.state(),
        });
        self.arm_rto(flow);
        self.after_controller_hook(flow);
    }

    /// After any hook: send what the controller now allows and re-arm its timer.
    fn after_controller_hook(&mut self, flow: usize) {
        if !self.senders[flow].started {
            return;
        }
        self.try_send(flow);
        let s = &mut self.senders[flow];
        let wanted = s
            .controller
            .next_timer()
            .map(|t| s.start_ns + ns(t).max(self.now_ns.saturating_sub(s.start_ns)));
        if wanted != s.timer_pending {
            s.timer_generation += 1;
            s.timer_pending = wanted;
            if let Some(at) = wanted {
                let generation = s.timer_generation;
                self.schedule(at, Event::ControllerTimer(flow, generation));
            }
        }
    }

    fn try_send(&mut self, flow: usize) {
        loop {
            let now_ns = self.now_ns;
            let s = &mut self.senders[flow];
            let (seq, forced) = if let Some(seq) = s.forced {
                (seq, true)
            } else if let Some(&seq) = s.retransmit_queue.first() {
                (seq, false)
            } else if s.size_pkts.is_none_or(|size| s.next_seq < size) {
                (s.next_seq, false)
            } else {
                return;
            };
            let cwnd = s.controller.cwnd();
            if !forced && cwnd.is_finite() {
                let allowed = cwnd.floor().max(1.0);
                if s.in_flight as f64 >= allowed {
                    return;
                }
            }
            match s.controller.pacing_rate() {
                Some(rate) if rate.is_finite() && rate > 0.0 => {
                    if now_ns < s.pace_next_ns {
                        if s.pace_pending != Some(s.pace_next_ns) {
                            s.pace_generation += 1;
                            s.pace_pending = Some(s.pace_next_ns);
                            let (at, generation) = (s.pace_next_ns, s.pace_generation);
                            self.schedule(at, Event::Pace(flow, generation));
                        }
                        return;
                    }
                    s.pace_next_ns = now_ns + serialization_ns(rate, self.packet_bytes);
                }
                Some(_) => return, // a zero rate: wait for the controller to change it
                None => assert!(
                    cwnd.is_finite(),
                    "{}: an infinite cwnd needs a pacing rate",
                    s.controller.id()
                ),
            }
            self.send(flow, seq, forced);
        }
    }

    fn send(&mut self, flow: usize, seq: u64, forced: bool) {
        let now_ns = self.now_ns;
        let s = &mut self.senders[flow];
        let retransmission = seq < s.next_seq;
        if retransmission {
            if forced {
                s.forced = None;
                s.leave_pipe(seq); // marked lost, then sent again
            }
            s.retransmit_queue.remove(&seq);
            s.retransmissions += 1;
            let packet = s.packet(seq);
            packet.retransmitted = true;
        } else {
            s.next_seq += 1;
            s.packets.push_back(PacketState::default());
        }
        let packet = s.packet(seq);
        packet.sent_at_ns = now_ns;
        packet.in_pipe = true;
        s.in_flight += 1;
        s.packets_sent += 1;
        let sent = Sent {
            now: s.flow_time(now_ns),
            seq,
            bytes: self.packet_bytes,
            in_flight: s.in_flight,
            retransmission,
        };
        s.controller.on_sent(&sent);
        let arm = s.recovery != Recovery::None && s.rto_deadline.is_none();
        let data = DataPacket {
            flow,
            seq,
            sent_at_ns: now_ns,
            retransmission,
        };
        if arm {
            self.arm_rto(flow);
        }
        self.enqueue(data, !retransmission);
    }

    fn report(self, end_ns: u64) -> Report {
        let measured_ns = (end_ns - self.measure_from_ns) as f64;
        let measured_s = measured_ns / NS_PER_S;
        let flows = self
            .senders
            .into_iter()
            .map(|s| {
                let delivered = s.delivered_bytes - s.delivered_at_measure_start.unwrap_or(0);
                FlowReport {
                    algorithm: s.controller.id(),
                    state_names: s.controller.state_names(),
                    delivered_bytes: delivered,
                    goodput_bytes_per_s: delivered as f64 / measured_s,
                    total_delivered_bytes: s.delivered_bytes,
                    receiver_unique_bytes: s.receiver.unique_bytes,
                    receiver_duplicates: s.receiver.duplicates,
                    packets_sent: s.packets_sent,
                    retransmissions: s.retransmissions,
                    drops: s.drops,
                    events: s.events,
                    rounds: s.rounds,
                    acks: s.acks,
                    abandoned: s.abandoned,
                }
            })
            .collect();
        Report {
            duration: Duration::from_nanos(end_ns),
            measure_from: Duration::from_nanos(self.measure_from_ns),
            utilization: self.bottleneck.busy_ns as f64 / measured_ns,
            mean_queue_pkts: self.bottleneck.queue_integral / measured_ns,
            max_queue_pkts: self.bottleneck.max_queue,
            tail_drops: self.bottleneck.tail_drops,
            drops: self.drops,
            flows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sent;

    /// A window that never changes: the harness's own behaviour, with no algorithm in the way.
    struct FixedWindow {
        window: f64,
        recovery: Recovery,
        pacing: Option<f64>,
        /// The window after a congestion event (None: unchanged).
        window_after_event: Option<f64>,
        acks: u64,
        sent: u64,
    }

    fn fixed(window: f64, recovery: Recovery) -> Box<FixedWindow> {
        Box::new(FixedWindow {
            window,
            recovery,
            pacing: None,
            window_after_event: None,
            acks: 0,
            sent: 0,
        })
    }

    impl Controller for FixedWindow {
        fn id(&self) -> &'static str {
            "fixed"
        }
        fn recovery(&self) -> Recovery {
            self.recovery
        }
        fn on_sent(&mut self, _sent: &Sent) {
            self.sent += 1;
        }
        fn on_ack(&mut self, _ack: &Ack) {
            self.acks += 1;
        }
        fn on_congestion_event(&mut self, _event: &CongestionEvent) {
            self.window = self.window_after_event.unwrap_or(self.window);
        }
        fn on_timeout(&mut self, _now: Time) {}
        fn cwnd(&self) -> f64 {
            self.window
        }
        fn ssthresh(&self) -> f64 {
            f64::INFINITY
        }
        fn pacing_rate(&self) -> Option<f64> {
            self.pacing
        }
        fn state_names(&self) -> &'static [&'static str] {
            &["acks", "sent"]
        }
        fn state_values(&self, out: &mut [f64]) {
            out[0] = self.acks as f64;
            out[1] = self.sent as f64;
        }
    }

    /// 10 Mbit/s, 20 ms each way, 1000-byte packets: 0.8 ms per packet, base RTT 40.8 ms,
    /// BDP 51 packets.
    fn link(buffer_pkts: usize) -> Link {
        Link::mbit(10.0, Duration::from_millis(20), buffer_pkts)
    }

    #[test]
    fn link_arithmetic() {
        let l = link(10);
        assert_eq!(l.serialization(1000), Duration::from_micros(800));
        assert_eq!(l.base_rtt(1000), Duration::from_micros(40_800));
        assert!((l.bdp_pkts(1000) - 51.0).abs() < 1e-9);
    }

    #[test]
    fn window_below_bdp_gives_window_over_rtt_and_no_queue() {
        let report = Sim::new(link(100))
            .measure_from(Duration::from_secs(1))
            .flow(fixed(20.0, Recovery::NewReno))
            .run(Duration::from_secs(11));
        let expected = 20.0 * 1000.0 / 0.0408;
        let flow = &report.flows[0];
        let error = (flow.goodput_bytes_per_s - expected).abs() / expected;
        assert!(
            error < 0.003,
            "goodput {} vs {expected}",
            flow.goodput_bytes_per_s
        );
        assert!(
            (report.utilization - 20.0 / 51.0).abs() < 0.003,
            "{}",
            report.utilization
        );
        assert_eq!(report.mean_queue_pkts, 0.0);
        assert!(report.drops.is_empty());
        // One round sample per RTT, each exactly one base RTT apart once ACK-clocked.
        let rounds = &flow.rounds;
        for pair in rounds[5..].windows(2) {
            assert_eq!(pair[1].time - pair[0].time, Duration::from_micros(40_800));
        }
        assert!(rounds
            .iter()
            .all(|r| r.rtt == Some(Duration::from_micros(40_800))
                || r.time < Duration::from_millis(100)));
    }

    #[test]
    fn window_above_bdp_saturates_the_link_with_a_standing_queue() {
        let report = Sim::new(link(100))
            .measure_from(Duration::from_secs(1))
            .flow(fixed(60.0, Recovery::NewReno))
            .run(Duration::from_secs(6));
        // 60 packets in the system: 50 propagating, 1 serialized, 9 waiting.
        assert!(
            (report.mean_queue_pkts - 9.0).abs() < 0.05,
            "{}",
            report.mean_queue_pkts
        );
        assert!(report.utilization > 0.9999, "{}", report.utilization);
        assert!(report.drops.is_empty());
        let expected = 1.25e6;
        let goodput = report.flows[0].goodput_bytes_per_s;
        assert!((goodput - expected).abs() / expected < 0.001, "{goodput}");
    }

    #[test]
    fn drops_happen_exactly_when_the_buffer_is_full() {
        // A 100-packet burst into 1 + 20 places, then a window that keeps the buffer full.
        let report = Sim::new(link(20))
            .per_ack_samples(true)
            .flow(fixed(100.0, Recovery::NewReno))
            .run(Duration::from_secs(20));
        assert_eq!(report.max_queue_pkts, 20);
        assert!(!report.drops.is_empty());
        for drop in &report.drops {
            assert_eq!(drop.kind, DropKind::Tail);
            assert_eq!(drop.queue_pkts, 20, "{drop:?}");
            assert!(drop.link_busy);
        }
        // The first burst: 1 serialized, 20 queued, 79 dropped.
        let at_zero = report.drops.iter().filter(|d| d.time.is_zero()).count();
        assert_eq!(at_zero, 79);
        let flow = &report.flows[0];
        assert!(flow.acks.iter().all(|a| a.queue_pkts <= 20));
        // Every packet eventually arrives once; the sender knows it (up to ACKs in flight).
        assert!(flow.receiver_unique_bytes >= flow.total_delivered_bytes);
        assert!(flow.receiver_unique_bytes - flow.total_delivered_bytes <= 100 * 1000);
        assert!(report.utilization > 0.95, "{}", report.utilization);
    }

    fn injected(recovery: Recovery, drops: &[u64]) -> Report {
        injected_with(fixed(30.0, recovery), drops)
    }

    fn injected_with(controller: Box<FixedWindow>, drops: &[u64]) -> Report {
        Sim::new(link(100))
            .flow_with(Flow::new(controller).drop_first_transmission_of(drops.iter().copied()))
            .run(Duration::from_secs(5))
    }

    #[test]
    fn newreno_recovers_several_losses_of_one_window_in_one_episode() {
        let report = injected(Recovery::NewReno, &[100, 105, 110]);
        let flow = &report.flows[0];
        assert_eq!(flow.congestion_events().count(), 1);
        assert_eq!(flow.events[0].lost_seq, 100);
        assert_eq!(flow.timeouts(), 0);
        assert_eq!(flow.retransmissions, 3);
        assert_eq!(flow.receiver_duplicates, 0);
    }

    #[test]
    fn reno_needs_new_duplicate_acks_for_each_hole() {
        let report = injected(Recovery::Reno, &[100, 105, 110]);
        let flow = &report.flows[0];
        // The fixed window keeps sending in recovery, so each hole gets its own three
        // duplicate ACKs: one event per hole, as classic Reno.
        let lost: Vec<u64> = flow.congestion_events().map(|e| e.lost_seq).collect();
        assert_eq!(lost, vec![100, 105, 110]);
        assert_eq!(flow.timeouts(), 0);
        assert_eq!(flow.retransmissions, 3);
    }

    #[test]
    fn tahoe_goes_back_n_without_resending_what_arrived() {
        // With Tahoe's window of one after the event, packets still in flight arrive before
        // their turn comes: only the three holes are resent.
        let mut tahoe = fixed(30.0, Recovery::Tahoe);
        tahoe.window_after_event = Some(1.0);
        let report = injected_with(tahoe, &[100, 105, 110]);
        let flow = &report.flows[0];
        assert_eq!(flow.congestion_events().count(), 1);
        assert_eq!(flow.timeouts(), 0);
        assert_eq!(flow.retransmissions, 3);
        assert_eq!(flow.receiver_duplicates, 0);
        // A window that stays at 30 resends everything outstanding at once (go-back-N): the
        // copies of packets that were still in flight arrive twice.
        let report = injected(Recovery::Tahoe, &[100, 105, 110]);
        let flow = &report.flows[0];
        assert_eq!(flow.congestion_events().count(), 1);
        assert_eq!(flow.receiver_duplicates, flow.retransmissions - 3);
    }

    #[test]
    fn timeout_without_samples_fires_at_the_initial_rto() {
        let report = Sim::new(link(100))
            .flow_with(Flow::new(fixed(4.0, Recovery::NewReno)).drop_first_transmission_of(0..4))
            .run(Duration::from_secs(3));
        let flow = &report.flows[0];
        assert_eq!(flow.events[0].kind, EventKind::Timeout);
        assert_eq!(flow.events[0].time, Duration::from_secs(1));
        assert_eq!(flow.timeouts(), 1);
        assert!(flow.total_delivered_bytes > 100 * 1000);
    }

    #[test]
    fn timeout_after_samples_is_min_rto_or_rounded_to_the_granularity() {
        for (rto, expected) in [
            (RtoConfig::default(), Duration::from_millis(200)),
            (
                RtoConfig {
                    granularity: Duration::from_millis(500),
                    ..RtoConfig::default()
                },
                // 40.8 ms + max(G, 4 RTTVAR) = 540.8 ms, rounded up to 2 ticks.
                Duration::from_millis(1000),
            ),
        ] {
            let report = Sim::new(link(100))
                .rto(rto)
                .per_ack_samples(true)
                .flow_with(
                    Flow::new(fixed(4.0, Recovery::NewReno)).drop_first_transmission_of(100..104),
                )
                .run(Duration::from_secs(5));
            let flow = &report.flows[0];
            let timeout = &flow.events[0];
            assert_eq!(timeout.kind, EventKind::Timeout);
            let last_ack = flow.acks.iter().rfind(|a| a.time < timeout.time).unwrap();
            assert_eq!(timeout.time - last_ack.time, expected);
        }
    }

    #[test]
    fn pacing_only_sends_at_the_rate_and_recovery_none_abandons_losses() {
        let mut controller = fixed(f64::INFINITY, Recovery::None);
        controller.pacing = Some(500_000.0);
        let report = Sim::new(link(100))
            .measure_from(Duration::from_secs(1))
            .flow_with(Flow::new(controller).drop_first_transmission_of([2000, 3000, 3001]))
            .run(Duration::from_secs(11));
        let flow = &report.flows[0];
        // 500 packets/s exactly, minus the 3 lost ones.
        assert_eq!(flow.delivered_bytes, (5000 - 3) * 1000);
        assert_eq!(report.mean_queue_pkts, 0.0);
        assert_eq!(flow.retransmissions, 0);
        assert_eq!(flow.abandoned, 3);
        // 3000 and 3001 are one window: one event; 2000 another.
        assert_eq!(flow.congestion_events().count(), 2);
    }

    #[test]
    fn two_flows_share_the_link_and_runs_are_deterministic() {
        let run = || {
            Sim::new(link(30))
                .measure_from(Duration::from_secs(2))
                .flow(fixed(40.0, Recovery::NewReno))
                .flow_with(
                    Flow::new(fixed(40.0, Recovery::NewReno))
                        .start_at(Duration::from_millis(500))
                        .extra_delay(Duration::from_millis(5)),
                )
                .run(Duration::from_secs(10))
        };
        let (a, b) = (run(), run());
        assert_eq!(
            format!("{:?}", a.flows[0].rounds),
            format!("{:?}", b.flows[0].rounds)
        );
        assert_eq!(a.drops, b.drops);
        // 80 packets against 51 (+ 2 x 6.25 for the second flow's extra delay) + 30: no drops
        // after the start-up bursts, the link is saturated and shared.
        assert!(a.utilization > 0.999, "{}", a.utilization);
        let total: f64 = a.flows.iter().map(|f| f.goodput_bytes_per_s).sum();
        assert!((total - 1.25e6).abs() / 1.25e6 < 0.002, "{total}");
        assert!(a.flows.iter().all(|f| f.goodput_bytes_per_s > 0.4 * 1.25e6));
    }
}
