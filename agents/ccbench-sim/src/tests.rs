//! The simulator's own behaviour, with a fixed window (no algorithm in the way).

use std::time::Duration;

use ccbench_cc::{Ack, CongestionEvent, Controller, Recovery, Sent, Time};

use crate::{DropKind, EventKind, Flow, Link, Report, RtoConfig, Sim};

/// A window that never changes: the simulator and the transport, with no algorithm in the way.
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
    assert!(rounds.iter().all(
        |r| r.rtt == Some(Duration::from_micros(40_800)) || r.time < Duration::from_millis(100)
    ));
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

/// A paced flow (500 packets/s, 2 ms apart) whose packets wait up to 8 ms before the
/// bottleneck, on a NewReno window of 100 (a reordering would show as duplicate ACKs).
fn jittered(seed: u64) -> Report {
    let mut controller = fixed(100.0, Recovery::NewReno);
    controller.pacing = Some(500_000.0);
    Sim::new(link(100))
        .per_ack_samples(true)
        .flow_with(Flow::new(controller).send_jitter(Duration::from_millis(8), seed))
        .run(Duration::from_secs(5))
}

#[test]
fn send_jitter_delays_packets_within_its_bound_and_keeps_their_order() {
    let report = jittered(1);
    let flow = &report.flows[0];
    let base = link(100).base_rtt(1000);
    let rtts: Vec<Duration> = flow.acks.iter().filter_map(|s| s.rtt).collect();
    assert!(rtts.len() > 2000, "{}", rtts.len());
    // Each packet waits [0, 8] ms (or behind its predecessor, at most 8 ms after the
    // predecessor's own send time + 2 ms gap), then at most a few packets' serialization.
    let bound = base + Duration::from_millis(8) + Duration::from_micros(5 * 800);
    assert!(rtts.iter().all(|&r| r >= base && r <= bound), "{rtts:?}");
    let mean = rtts.iter().sum::<Duration>().as_secs_f64() / rtts.len() as f64;
    let extra_ms = (mean - base.as_secs_f64()) * 1e3;
    assert!(
        (3.0..7.0).contains(&extra_ms),
        "mean extra delay {extra_ms} ms"
    );
    // Order kept: no duplicate ACK, no congestion event, nothing resent.
    assert_eq!(flow.congestion_events().count(), 0);
    assert_eq!(flow.retransmissions, 0);
    assert!(report.drops.is_empty());
    // Seeded: the same seed, the same run; another seed, another one.
    let again = jittered(1);
    assert_eq!(
        format!("{:?}", flow.acks),
        format!("{:?}", again.flows[0].acks)
    );
    assert_ne!(
        format!("{:?}", flow.acks),
        format!("{:?}", jittered(2).flows[0].acks)
    );
}

#[test]
fn delayed_acks_acknowledge_every_second_packet_or_after_40_ms() {
    let run = |delayed: bool| {
        Sim::new(link(100))
            .measure_from(Duration::from_secs(1))
            .flow_with(Flow::new(fixed(20.0, Recovery::NewReno)).delayed_acks(delayed))
            .run(Duration::from_secs(6))
    };
    let (every, delayed) = (run(false), run(true));
    let counts = |r: &Report| {
        let state = &r.flows[0].rounds.last().unwrap().state;
        (state[0], state[1])
    };
    let (acks, sent) = counts(&every);
    assert!(acks > 0.99 * sent, "{acks} ACKs for {sent} packets");
    let (acks, sent) = counts(&delayed);
    assert!(
        (0.45 * sent..0.55 * sent).contains(&acks),
        "{acks} ACKs for {sent} packets"
    );
    // The window still delivers about window/RTT: nothing waits for the 40 ms timer in steady
    // state, the first packet of each pair only for the second (0.8 ms later).
    for (r, slack) in [(&every, 0.0), (&delayed, 0.0008)] {
        let goodput = r.flows[0].goodput_bytes_per_s;
        let (high, low) = (20.0 * 1000.0 / 0.0408, 20.0 * 1000.0 / (0.0408 + slack));
        assert!(
            goodput <= high * 1.005 && goodput >= low * 0.995,
            "{goodput} not in {low}..{high}"
        );
    }
    // A single packet is acknowledged by the timer, 40 ms after it arrived.
    let single = Sim::new(link(100))
        .per_ack_samples(true)
        .flow_with(Flow::new(fixed(1.0, Recovery::NewReno)).delayed_acks(true))
        .run(Duration::from_secs(1));
    let first = single.flows[0].acks[0].rtt.unwrap();
    assert_eq!(first, link(100).base_rtt(1000) + Duration::from_millis(40));
}
