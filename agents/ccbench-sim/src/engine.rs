//! The event loop: the bottleneck and the paths around each flow's transport sender and
//! receiver, and the recordings.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ccbench_cc::{Ack, CongestionEvent, Controller, Feedback, Recovery, Sent, Time};
use ccbench_transport::pattern;
use ccbench_transport::receiver::FlowReceiver;
use ccbench_transport::sender::{AckOutcome, LossKind, Poll, Sender, SenderConfig, Transmit};
use ccbench_transport::wire::{AckPacket, DataHeader};

use crate::{DropKind, DropRecord, EventKind, EventRecord, FlowReport, Link, Report, Sample, Sim};

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).expect("duration fits in u64 nanoseconds")
}

enum Event {
    Start(usize),
    /// The bottleneck finished serializing a packet.
    LinkDone,
    /// A data packet reaches its flow's receiver.
    Deliver(usize, DataHeader),
    /// An ACK reaches its flow's sender.
    Ack(usize, AckPacket),
    /// A receiver's delayed-ACK timer (`Flow::delayed_acks`).
    AckTimer(usize),
    /// A jittered data packet reaches the bottleneck (`Flow::send_jitter`).
    Arrive(usize, DataHeader, bool),
    /// A flow's pacing slot, RTO or controller timer; stale unless it is the flow's `wake_ns`.
    Wake(usize),
}

/// A controller's outputs and state variables at one instant.
struct Snapshot {
    cwnd: f64,
    ssthresh: f64,
    state: Vec<f64>,
}

impl Snapshot {
    fn of(controller: &dyn Controller) -> Snapshot {
        let mut state = vec![0.0; controller.state_names().len()];
        controller.state_values(&mut state);
        Snapshot {
            cwnd: controller.cwnd(),
            ssthresh: controller.ssthresh(),
            state,
        }
    }
}

/// The controller's state right before and after the last `on_congestion_event` or
/// `on_timeout`: the transport calls them inside `Sender::on_ack` (before the ACK's own
/// `on_ack`) and `Sender::on_timer`, out of the simulator's sight.
type Around = Arc<Mutex<Option<(Snapshot, Snapshot)>>>;

/// Passes every call through to the flow's controller, filling `around`.
struct Probe {
    inner: Box<dyn Controller>,
    around: Around,
}

impl Probe {
    fn observe(&mut self, call: impl FnOnce(&mut dyn Controller)) {
        let before = Snapshot::of(self.inner.as_ref());
        call(self.inner.as_mut());
        let after = Snapshot::of(self.inner.as_ref());
        *self.around.lock().expect("probe lock") = Some((before, after));
    }
}

impl Controller for Probe {
    fn id(&self) -> &'static str {
        self.inner.id()
    }
    fn recovery(&self) -> Recovery {
        self.inner.recovery()
    }
    // Every method is forwarded, those with a default body too: the default would swallow it
    // (Sim::initial_window never reached a controller while this one was missing).
    fn set_initial_window(&mut self, packets: f64) {
        self.inner.set_initial_window(packets);
    }
    fn on_sent(&mut self, sent: &Sent) {
        self.inner.on_sent(sent);
    }
    fn on_ack(&mut self, ack: &Ack) {
        self.inner.on_ack(ack);
    }
    fn on_congestion_event(&mut self, event: &CongestionEvent) {
        self.observe(|c| c.on_congestion_event(event));
    }
    fn on_timeout(&mut self, now: Time) {
        self.observe(|c| c.on_timeout(now));
    }
    fn on_feedback(&mut self, now: Time, feedback: Feedback) {
        self.inner.on_feedback(now, feedback);
    }
    fn next_timer(&self) -> Option<Time> {
        self.inner.next_timer()
    }
    fn on_timer(&mut self, now: Time) {
        self.inner.on_timer(now);
    }
    fn cwnd(&self) -> f64 {
        self.inner.cwnd()
    }
    fn ssthresh(&self) -> f64 {
        self.inner.ssthresh()
    }
    fn pacing_rate(&self) -> Option<f64> {
        self.inner.pacing_rate()
    }
    fn state_names(&self) -> &'static [&'static str] {
        self.inner.state_names()
    }
    fn state_values(&self, out: &mut [f64]) {
        self.inner.state_values(out);
    }
}

struct FlowState {
    sender: Sender,
    receiver: FlowReceiver,
    around: Around,
    start_ns: u64,
    extra_delay_ns: u64,
    /// `Flow::send_jitter`: bound (ns), SplitMix64 state, last arrival at the bottleneck.
    jitter: Option<(u64, u64, u64)>,
    drop_first_transmission: BTreeSet<u64>,
    /// When the pending `Wake` is due.
    wake_ns: Option<u64>,
    /// The current round ends when the cumulative point reaches this.
    round_end: u64,
    acked_at_measure_start: u64,
    drops: u64,
    events: Vec<EventRecord>,
    rounds: Vec<Sample>,
    acks: Vec<Sample>,
}

impl FlowState {
    /// The flow's own time, which the transport runs on.
    fn time(&self, now_ns: u64) -> Duration {
        Duration::from_nanos(now_ns - self.start_ns)
    }

    fn record_event(&mut self, now_ns: u64, kind: EventKind, lost_seq: u64) {
        let (before, after) = self
            .around
            .lock()
            .expect("probe lock")
            .take()
            .expect("the transport called the controller");
        self.events.push(EventRecord {
            time: Duration::from_nanos(now_ns),
            kind,
            lost_seq,
            cwnd_before: before.cwnd,
            ssthresh_before: before.ssthresh,
            cwnd_after: after.cwnd,
            ssthresh_after: after.ssthresh,
            state_before: before.state,
            state_after: after.state,
        });
    }
}

struct Bottleneck {
    /// Waiting packets (the one being serialized is not here).
    queue: VecDeque<(usize, DataHeader)>,
    busy: bool,
    busy_since_ns: u64,
    busy_ns: u64,
    queue_integral: f64,
    queue_changed_ns: u64,
    max_queue: usize,
}

pub(crate) struct Engine {
    link: Link,
    per_ack_samples: bool,
    measure_from_ns: u64,
    now_ns: u64,
    /// Keyed by (time, insertion order).
    events: BTreeMap<(u64, u64), Event>,
    order: u64,
    bottleneck: Bottleneck,
    drops: Vec<DropRecord>,
    flows: Vec<FlowState>,
    /// Payload buffer: the receiver checks every byte against the transport's pattern.
    payload: Vec<u8>,
}

impl Engine {
    pub(crate) fn new(sim: Sim) -> Engine {
        let config = SenderConfig {
            mss: sim.packet_bytes,
            min_rto: sim.rto.min,
            rto_granularity: sim.rto.granularity,
            initial_window: sim.initial_window,
            receive_window: None,
            window_growth_per_ack: false,
        };
        let flows = sim
            .flows
            .into_iter()
            .enumerate()
            .map(|(i, flow)| {
                let around = Around::default();
                let probe = Probe {
                    inner: flow.controller,
                    around: Arc::clone(&around),
                };
                let sender = Sender::new(config.clone(), Box::new(probe));
                let (id, reliable) = (i as u32, sender.reliable());
                FlowState {
                    sender,
                    receiver: FlowReceiver::new(
                        id,
                        reliable,
                        sim.packet_bytes,
                        flow.receiver,
                        Duration::ZERO,
                        flow.delayed_acks,
                    ),
                    around,
                    start_ns: ns(flow.start),
                    extra_delay_ns: ns(flow.extra_delay),
                    jitter: flow.send_jitter.map(|(max, seed)| (ns(max), seed, 0)),
                    drop_first_transmission: flow.drop_first_transmission,
                    wake_ns: None,
                    round_end: 0,
                    acked_at_measure_start: 0,
                    drops: 0,
                    events: Vec::new(),
                    rounds: Vec::new(),
                    acks: Vec::new(),
                }
            })
            .collect();
        let mut engine = Engine {
            link: sim.link,
            per_ack_samples: sim.per_ack_samples,
            measure_from_ns: ns(sim.measure_from),
            now_ns: 0,
            events: BTreeMap::new(),
            order: 0,
            bottleneck: Bottleneck {
                queue: VecDeque::new(),
                busy: false,
                busy_since_ns: 0,
                busy_ns: 0,
                queue_integral: 0.0,
                queue_changed_ns: 0,
                max_queue: 0,
            },
            drops: Vec::new(),
            flows,
            payload: vec![0; sim.packet_bytes as usize],
        };
        for flow in 0..engine.flows.len() {
            engine.schedule(engine.flows[flow].start_ns, Event::Start(flow));
        }
        engine
    }

    fn schedule(&mut self, time_ns: u64, event: Event) {
        self.order += 1;
        self.events.insert((time_ns, self.order), event);
    }

    pub(crate) fn run(mut self, duration: Duration) -> Report {
        let end_ns = ns(duration);
        assert!(
            self.measure_from_ns < end_ns,
            "measure_from must be before the end"
        );
        while let Some(entry) = self.events.first_entry() {
            let time_ns = entry.key().0;
            if time_ns > end_ns {
                break;
            }
            let event = entry.remove();
            self.advance_clock(time_ns);
            match event {
                Event::Start(flow) => self.service(flow),
                Event::LinkDone => self.link_done(),
                Event::Deliver(flow, header) => self.deliver(flow, header),
                Event::Ack(flow, ack) => self.ack_arrives(flow, ack),
                Event::Arrive(flow, header, injected) => self.enqueue(flow, header, injected),
                Event::AckTimer(flow) => self.ack_timer(flow),
                Event::Wake(flow) => {
                    if self.flows[flow].wake_ns == Some(time_ns) {
                        self.flows[flow].wake_ns = None;
                        self.service(flow);
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
            for flow in &mut self.flows {
                flow.acked_at_measure_start = flow.sender.stats().bytes_acked;
            }
        }
        self.now_ns = time_ns;
    }

    // --- the network ---

    fn enqueue(&mut self, flow: usize, packet: DataHeader, injected: bool) {
        let b = &mut self.bottleneck;
        let full = b.busy && b.queue.len() >= self.link.buffer_pkts;
        if injected || full {
            self.flows[flow].drops += 1;
            self.drops.push(DropRecord {
                time: Duration::from_nanos(self.now_ns),
                flow,
                seq: packet.seq,
                kind: if injected {
                    DropKind::Injected
                } else {
                    DropKind::Tail
                },
                queue_pkts: b.queue.len(),
                link_busy: b.busy,
            });
        } else if b.busy {
            b.queue.push_back((flow, packet));
            b.max_queue = b.max_queue.max(b.queue.len());
        } else {
            self.start_serializing(flow, packet);
        }
    }

    fn start_serializing(&mut self, flow: usize, packet: DataHeader) {
        self.bottleneck.busy = true;
        self.bottleneck.busy_since_ns = self.now_ns;
        let done = self.now_ns + ns(self.link.serialization(packet.payload_len.into()));
        self.schedule(done, Event::LinkDone);
        // The packet's propagation starts when its last bit leaves.
        let arrival = done + ns(self.link.delay) + self.flows[flow].extra_delay_ns;
        self.schedule(arrival, Event::Deliver(flow, packet));
    }

    fn link_done(&mut self) {
        self.bottleneck.busy = false;
        if let Some((flow, next)) = self.bottleneck.queue.pop_front() {
            self.start_serializing(flow, next);
        }
    }

    fn deliver(&mut self, flow: usize, packet: DataHeader) {
        let now_ns = self.now_ns;
        let f = &mut self.flows[flow];
        let payload = &mut self.payload[..packet.payload_len.into()];
        pattern::fill(packet.flow, packet.seq, payload);
        let deadline_before = f.receiver.ack_deadline();
        let (ack, _) = f.receiver.on_data(f.time(now_ns), &packet, payload);
        match ack {
            Some(ack) => {
                let at = now_ns + ns(self.link.delay) + f.extra_delay_ns;
                self.schedule(at, Event::Ack(flow, ack));
            }
            None => {
                // Held back (delayed ACKs): the receiver's timer sends it at the latest.
                let deadline = f.receiver.ack_deadline();
                if let Some(deadline) = deadline.filter(|_| deadline != deadline_before) {
                    let at = f.start_ns + ns(deadline);
                    self.schedule(at, Event::AckTimer(flow));
                }
            }
        }
    }

    fn ack_timer(&mut self, flow: usize) {
        let now_ns = self.now_ns;
        let f = &mut self.flows[flow];
        if let Some(ack) = f.receiver.poll_delayed_ack(f.time(now_ns)) {
            let at = now_ns + ns(self.link.delay) + f.extra_delay_ns;
            self.schedule(at, Event::Ack(flow, ack));
        }
    }

    // --- the sender ---

    fn transmit(&mut self, flow: usize, tx: Transmit) {
        let f = &mut self.flows[flow];
        let packet = DataHeader {
            flow: flow as u32,
            seq: tx.seq,
            sent_us: tx.sent_us,
            payload_len: u16::try_from(tx.bytes).expect("packet_bytes is a u16"),
        };
        let injected = !tx.retransmission && f.drop_first_transmission.remove(&tx.seq);
        let Some((max_ns, state, last_ns)) = f.jitter else {
            self.enqueue(flow, packet, injected);
            return;
        };
        // SplitMix64, uniform in [0, max_ns]; never before the flow's previous packet.
        let state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
        let delay_ns = (unit * (max_ns + 1) as f64) as u64;
        let at = (self.now_ns + delay_ns).max(last_ns);
        f.jitter = Some((max_ns, state, at));
        if at == self.now_ns {
            self.enqueue(flow, packet, injected);
        } else {
            self.schedule(at, Event::Arrive(flow, packet, injected));
        }
    }

    /// Runs the flow's due timers, sends what the sender allows now and schedules its next
    /// deadline.
    fn service(&mut self, flow: usize) {
        let now_ns = self.now_ns;
        let f = &mut self.flows[flow];
        let now = f.time(now_ns);
        if f.sender.timer_deadline().is_some_and(|d| d <= now) {
            let first_unacked = f.sender.resolved_below();
            if f.sender.on_timer(now) == Some(LossKind::Timeout) {
                f.record_event(now_ns, EventKind::Timeout, first_unacked);
            }
        }
        let pace = loop {
            match self.flows[flow].sender.poll_send(now, u64::MAX) {
                Poll::Send(tx) => self.transmit(flow, tx),
                Poll::PaceUntil(at) => break Some(at),
                Poll::Blocked => break None,
            }
        };
        let f = &mut self.flows[flow];
        let due = pace.into_iter().chain(f.sender.timer_deadline()).min();
        let wake = due.map(|t| (f.start_ns + ns(t)).max(now_ns));
        if wake != f.wake_ns {
            f.wake_ns = wake;
            if let Some(at) = wake {
                self.schedule(at, Event::Wake(flow));
            }
        }
    }

    fn ack_arrives(&mut self, flow: usize, ack: AckPacket) {
        let now_ns = self.now_ns;
        let f = &mut self.flows[flow];
        let cumulative_before = f.sender.resolved_below();
        let outcome = f.sender.on_ack(f.time(now_ns), &ack);
        assert!(outcome.valid, "the sender refused {ack:?}");
        if let Some(lost_seq) = outcome.first_lost {
            f.record_event(now_ns, EventKind::Congestion, lost_seq);
        }
        self.service(flow);

        let f = &mut self.flows[flow];
        let cumulative = f.sender.resolved_below();
        let round_ended = cumulative > cumulative_before && cumulative >= f.round_end;
        if round_ended {
            f.round_end = f.sender.stats().new_pkts;
        }
        if round_ended || self.per_ack_samples {
            let sample = self.sample(flow, &outcome);
            let f = &mut self.flows[flow];
            if round_ended {
                f.rounds.push(sample.clone());
            }
            if self.per_ack_samples {
                f.acks.push(sample);
            }
        }
    }

    fn sample(&self, flow: usize, outcome: &AckOutcome) -> Sample {
        let f = &self.flows[flow];
        let controller = Snapshot::of(f.sender.controller());
        Sample {
            time: Duration::from_nanos(self.now_ns),
            cwnd: controller.cwnd,
            ssthresh: controller.ssthresh,
            pacing_rate: f.sender.controller().pacing_rate(),
            srtt: f.sender.rtt().srtt(),
            rtt: outcome.rtt,
            in_flight: f.sender.in_flight(),
            in_recovery: outcome.in_recovery,
            queue_pkts: self.bottleneck.queue.len(),
            drops: f.drops,
            delivered_bytes: f.sender.stats().bytes_acked,
            state: controller.state,
        }
    }

    fn report(self, end_ns: u64) -> Report {
        let measured_ns = (end_ns - self.measure_from_ns) as f64;
        let flows = self
            .flows
            .into_iter()
            .map(|f| {
                let stats = f.sender.stats();
                let delivered = stats.bytes_acked - f.acked_at_measure_start;
                let controller = f.sender.controller();
                FlowReport {
                    algorithm: controller.id(),
                    state_names: controller.state_names(),
                    delivered_bytes: delivered,
                    goodput_bytes_per_s: delivered as f64 / (measured_ns / 1e9),
                    total_delivered_bytes: stats.bytes_acked,
                    receiver_unique_bytes: f.receiver.unique_bytes(),
                    receiver_duplicates: f.receiver.duplicates(),
                    retransmissions: stats.retransmits,
                    drops: f.drops,
                    abandoned: if f.sender.reliable() {
                        0
                    } else {
                        stats.lost_pkts
                    },
                    events: f.events,
                    rounds: f.rounds,
                    acks: f.acks,
                }
            })
            .collect();
        Report {
            utilization: self.bottleneck.busy_ns as f64 / measured_ns,
            mean_queue_pkts: self.bottleneck.queue_integral / measured_ns,
            max_queue_pkts: self.bottleneck.max_queue,
            drops: self.drops,
            flows,
        }
    }
}
