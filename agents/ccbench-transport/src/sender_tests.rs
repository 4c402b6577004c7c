//! The sender on a virtual clock against the real receiver state machine, through a simulated
//! link (fixed one-way delay, a serialization rate, scripted drops).

use super::*;
use crate::pattern;
use crate::receiver::FlowReceiver;
use crate::wire::{DataHeader, Fin};
use ccbench_cc::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};

const MSS: u32 = 1000;

#[derive(Default)]
struct CcLog {
    congestion_events: Vec<(Duration, u32)>,
    timeouts: Vec<Duration>,
    /// (now, in_recovery) per ACK.
    acks_in_recovery: u32,
}

/// A small Reno-like window controller with a chosen recovery semantics (and optional fixed
/// pacing rate), logging what the transport calls.
struct TestCc {
    recovery: Recovery,
    cwnd: f64,
    ssthresh: f64,
    rate: Option<f64>,
    log: Arc<Mutex<CcLog>>,
}

impl Controller for TestCc {
    fn id(&self) -> &'static str {
        "test"
    }
    fn recovery(&self) -> Recovery {
        self.recovery
    }
    fn on_ack(&mut self, ack: &Ack) {
        if ack.in_recovery {
            self.log.lock().unwrap().acks_in_recovery += 1;
            return;
        }
        let n = ack.newly_acked.len() as f64;
        if self.cwnd < self.ssthresh {
            self.cwnd += n;
        } else {
            self.cwnd += n / self.cwnd;
        }
    }
    fn on_congestion_event(&mut self, event: &CongestionEvent) {
        self.log
            .lock()
            .unwrap()
            .congestion_events
            .push((event.now, event.in_flight));
        self.ssthresh = (event.in_flight as f64 / 2.0).max(2.0);
        self.cwnd = if self.recovery == Recovery::Tahoe {
            1.0
        } else {
            self.ssthresh
        };
    }
    fn on_timeout(&mut self, now: Time) {
        self.log.lock().unwrap().timeouts.push(now);
        self.ssthresh = (self.cwnd / 2.0).max(2.0);
        self.cwnd = 1.0;
    }
    fn cwnd(&self) -> f64 {
        if self.rate.is_some() {
            f64::INFINITY
        } else {
            self.cwnd
        }
    }
    fn ssthresh(&self) -> f64 {
        self.ssthresh
    }
    fn pacing_rate(&self) -> Option<f64> {
        self.rate
    }
}

/// The tests' transport: 1000-byte packets, RFC 6298's timer with a 200 ms floor, a window
/// starting at one packet, growth per packet, no receive window.
fn test_config() -> SenderConfig {
    SenderConfig {
        mss: MSS,
        min_rto: Duration::from_millis(200),
        rto_granularity: Duration::from_millis(1),
        initial_window: 1,
        receive_window: None,
        window_growth_per_ack: false,
    }
}

fn sender(recovery: Recovery, rate: Option<f64>) -> (Sender, Arc<Mutex<CcLog>>) {
    let log = Arc::new(Mutex::new(CcLog::default()));
    let cc = TestCc {
        recovery,
        cwnd: 10.0,
        ssthresh: f64::INFINITY,
        rate,
        log: Arc::clone(&log),
    };
    let config = test_config();
    (Sender::new(config, Box::new(cc)), log)
}

enum Event {
    Data(DataHeader),
    Ack(AckPacket),
}

/// Which data transmissions the link drops: (seq, how many times it was sent before).
type DropRule = Box<dyn FnMut(Duration, u64, u32) -> bool>;

struct Link {
    one_way: Duration,
    /// Bytes per second of the bottleneck (data direction).
    rate: f64,
    drop: DropRule,
}

#[derive(Default, Debug)]
struct Trace {
    /// (time, seq, retransmission)
    sent: Vec<(Duration, u64, bool)>,
    /// When the first ACK echoing each sequence number arrived.
    acked_at: std::collections::HashMap<u64, Duration>,
    end: Duration,
}

/// An ACK echoing `echo_seq`, with the cumulative point and SACK bits given.
fn ack(echo_seq: u64, cum_ack: u64, sack: u64) -> AckPacket {
    AckPacket {
        flow: 0,
        echo_seq,
        echo_sent_us: 0,
        cum_ack,
        sack,
        feedback: 0,
        duplicate: false,
    }
}

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}
fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Runs until everything the application offers is acknowledged (or `limit`), then closes the
/// flow at the receiver with the FIN the sender would send.
fn run(
    s: &mut Sender,
    r: &mut FlowReceiver,
    link: &mut Link,
    app_total: u64,
    limit: Duration,
) -> Trace {
    let mut events: BinaryHeap<Reverse<(Duration, u64)>> = BinaryHeap::new();
    let mut payloads: std::collections::HashMap<u64, Event> = Default::default();
    let mut counter = 0u64;
    let mut times_sent: std::collections::HashMap<u64, u32> = Default::default();
    let mut link_free = Duration::ZERO;
    let mut trace = Trace::default();
    let mut now = Duration::ZERO;
    let mut buf = vec![0u8; MSS as usize];
    while now <= limit {
        while let Some(&Reverse((t, id))) = events.peek() {
            if t > now {
                break;
            }
            events.pop();
            match payloads.remove(&id).unwrap() {
                Event::Data(h) => {
                    let payload = &mut buf[..h.payload_len as usize];
                    pattern::fill(0, h.seq, payload);
                    if let (Some(ack), _) = r.on_data(now, &h, payload) {
                        counter += 1;
                        payloads.insert(counter, Event::Ack(ack));
                        events.push(Reverse((now + link.one_way, counter)));
                    }
                }
                Event::Ack(a) => {
                    trace.acked_at.entry(a.echo_seq).or_insert(now);
                    assert!(s.on_ack(now, &a).valid);
                }
            }
        }
        // A delayed ACK whose timer ran out (receivers that delay their ACKs).
        if let Some(ack) = r.poll_delayed_ack(now) {
            counter += 1;
            payloads.insert(counter, Event::Ack(ack));
            events.push(Reverse((now + link.one_way, counter)));
        }
        s.on_timer(now);
        let mut pace = None;
        loop {
            match s.poll_send(now, app_total) {
                Poll::Send(tx) => {
                    trace.sent.push((now, tx.seq, tx.retransmission));
                    let n = times_sent.entry(tx.seq).or_default();
                    let dropped = (link.drop)(now, tx.seq, *n);
                    *n += 1;
                    let departure =
                        link_free.max(now) + Duration::from_secs_f64(tx.bytes as f64 / link.rate);
                    link_free = departure;
                    if !dropped {
                        counter += 1;
                        payloads.insert(
                            counter,
                            Event::Data(DataHeader {
                                flow: 0,
                                seq: tx.seq,
                                sent_us: tx.sent_us,
                                payload_len: tx.bytes as u16,
                            }),
                        );
                        events.push(Reverse((departure + link.one_way, counter)));
                    }
                }
                Poll::PaceUntil(t) => {
                    pace = Some(t);
                    break;
                }
                Poll::Blocked => break,
            }
        }
        if s.stats().new_bytes == app_total && s.all_resolved() {
            break;
        }
        let next = [
            events.peek().map(|Reverse((t, _))| *t),
            s.timer_deadline(),
            r.ack_deadline(),
            pace,
        ]
        .into_iter()
        .flatten()
        .min();
        match next {
            Some(t) => now = t.max(now),
            None => panic!("stalled at {now:?} with nothing scheduled"),
        }
    }
    trace.end = now;
    r.on_fin(&Fin {
        flow: 0,
        total_pkts: s.stats().new_pkts,
        total_bytes: s.stats().new_bytes,
        complete: s.all_resolved(),
        sent_us: 0,
    });
    trace
}

fn receiver(reliable: bool) -> FlowReceiver {
    FlowReceiver::new(0, reliable, MSS, None, Duration::ZERO, false)
}

fn drop_first_transmission_of(seqs: &'static [u64]) -> DropRule {
    Box::new(move |_, seq, times| times == 0 && seqs.contains(&seq))
}

fn link(drop: DropRule) -> Link {
    // 10 ms each way, 1000 packets/s: a 20-packet BDP.
    Link {
        one_way: ms(10),
        rate: 1e6,
        drop,
    }
}

/// A link that never queues (100 MB/s) and drops nothing.
fn fast_link(one_way: Duration) -> Link {
    Link {
        one_way,
        rate: 1e8,
        drop: Box::new(|_, _, _| false),
    }
}

fn retransmitted(trace: &Trace) -> Vec<u64> {
    trace
        .sent
        .iter()
        .filter(|(_, _, rtx)| *rtx)
        .map(|(_, s, _)| *s)
        .collect()
}

#[test]
fn a_single_loss_is_retransmitted_after_three_packets_above_it_are_acknowledged() {
    for recovery in [Recovery::Reno, Recovery::NewReno] {
        let (mut s, log) = sender(recovery, None);
        let mut r = receiver(true);
        let trace = run(
            &mut s,
            &mut r,
            &mut link(drop_first_transmission_of(&[40])),
            300 * MSS as u64,
            Duration::from_secs(10),
        );
        assert_eq!(retransmitted(&trace), vec![40], "{recovery:?}");
        let log = log.lock().unwrap();
        assert_eq!(log.congestion_events.len(), 1);
        assert!(log.timeouts.is_empty());
        assert!(log.acks_in_recovery > 0);
        // The retransmission leaves when the ACK of packet 43 arrives.
        let rtx_at = trace.sent.iter().find(|e| e.2).unwrap().0;
        assert_eq!(rtx_at, trace.acked_at[&43], "{recovery:?}");
        let stats = s.stats();
        assert_eq!(
            (stats.lost_pkts, stats.retransmits, stats.timeouts),
            (1, 1, 0)
        );
        assert_eq!(stats.bytes_acked, 300 * MSS as u64);
        assert_eq!(r.integrity(), "ok");
        assert_eq!(r.duplicates(), 0);
    }
}

#[test]
fn several_losses_in_one_window_reno_newreno_tahoe() {
    let drops: &'static [u64] = &[60, 63, 66];
    let run_with = |recovery| {
        let (mut s, log) = sender(recovery, None);
        let mut r = receiver(true);
        let trace = run(
            &mut s,
            &mut r,
            &mut link(drop_first_transmission_of(drops)),
            400 * MSS as u64,
            Duration::from_secs(20),
        );
        assert_eq!(r.integrity(), "ok", "{recovery:?}");
        let log = log.lock().unwrap();
        assert!(log.timeouts.is_empty(), "{recovery:?}: {:?}", log.timeouts);
        (s, trace, log.congestion_events.clone())
    };
    // Reno: fast recovery ends at the first partial ACK; each further hole is a new episode.
    let (s, trace, events) = run_with(Recovery::Reno);
    assert_eq!(events.len(), 3);
    assert_eq!(retransmitted(&trace), vec![60, 63, 66]);
    assert_eq!(s.stats().congestion_events, 3);
    // NewReno: one episode; each partial ACK retransmits the next hole.
    let (_, trace, events) = run_with(Recovery::NewReno);
    assert_eq!(events.len(), 1);
    assert_eq!(retransmitted(&trace), vec![60, 63, 66]);
    // The window was halved once: half of what was in flight.
    let (_, in_flight) = events[0];
    assert!(in_flight > 20, "{in_flight}");
    // Tahoe: one episode, go back N: every unacknowledged packet is sent again (the losses
    // first), starting from a window of one.
    let (s, trace, events) = run_with(Recovery::Tahoe);
    assert_eq!(events.len(), 1);
    let rtx = retransmitted(&trace);
    assert_eq!(rtx[0], 60);
    assert!(rtx.contains(&63) && rtx.contains(&66));
    assert_eq!(s.stats().retransmits as usize, rtx.len());
    let first_rtx = trace.sent.iter().position(|e| e.2).unwrap();
    // Window of one: nothing else leaves until the first retransmission is acknowledged.
    assert!(trace.sent[first_rtx + 1].0 >= trace.sent[first_rtx].0 + ms(20));
}

#[test]
fn a_fast_retransmission_behind_a_full_queue_gets_a_whole_rto() {
    // A window of 300 packets through a 20-packet path: ~280 wait in the link's queue, so
    // every RTT is ~0.3 s and RTTVAR small. The retransmission of packet 3000 waits behind
    // that queue too; a timer still counting from the last new ACK (3 packet times before the
    // retransmission) would fire before it is acknowledged. Restarted when the first
    // unacknowledged packet is retransmitted (as Linux's tcp_xmit_retransmit_queue does), it
    // does not.
    for recovery in [Recovery::Reno, Recovery::NewReno] {
        let log = Arc::new(Mutex::new(CcLog::default()));
        let cc = TestCc {
            recovery,
            cwnd: 300.0,
            ssthresh: 300.0,
            rate: None,
            log: Arc::clone(&log),
        };
        let config = test_config();
        let mut s = Sender::new(config, Box::new(cc));
        let mut r = receiver(true);
        let trace = run(
            &mut s,
            &mut r,
            &mut link(drop_first_transmission_of(&[3000])),
            4000 * MSS as u64,
            Duration::from_secs(30),
        );
        assert_eq!(retransmitted(&trace), vec![3000], "{recovery:?}");
        let log = log.lock().unwrap();
        assert!(log.timeouts.is_empty(), "{recovery:?}: {:?}", log.timeouts);
        assert_eq!(log.congestion_events.len(), 1);
        assert_eq!(r.integrity(), "ok");
    }
}

#[test]
fn rto_backs_off_exponentially_and_recovers() {
    let (mut s, log) = sender(Recovery::NewReno, None);
    let mut r = receiver(true);
    // Everything sent between 0.5 s and 3.5 s is lost: a blackout.
    let blackout: DropRule = Box::new(|t, _, _| t >= ms(500) && t < ms(3500));
    let trace = run(
        &mut s,
        &mut r,
        &mut link(blackout),
        2000 * MSS as u64,
        Duration::from_secs(30),
    );
    let timeouts = log.lock().unwrap().timeouts.clone();
    assert!(timeouts.len() >= 3, "{timeouts:?}");
    let gaps: Vec<Duration> = timeouts.windows(2).map(|w| w[1] - w[0]).collect();
    // Each timeout waits twice as long as the previous one (RFC 6298 (5.5)).
    for w in gaps.windows(2) {
        assert_eq!(w[1], w[0] * 2, "{gaps:?}");
    }
    // The minimum RTO binds the first one (RTT ~21 ms).
    assert!(gaps[0] >= ms(400), "{gaps:?}");
    assert_eq!(r.integrity(), "ok");
    assert!(trace.end < Duration::from_secs(30));
    assert_eq!(s.stats().timeouts as usize, timeouts.len());
}

#[test]
fn pacing_sends_on_an_exact_schedule() {
    // 1 MB/s with 1000-byte packets: one every millisecond, on a faster link.
    let (mut s, _) = sender(Recovery::Reno, Some(1e6));
    let mut r = receiver(true);
    let mut fast = fast_link(ms(5));
    let trace = run(
        &mut s,
        &mut r,
        &mut fast,
        500 * MSS as u64,
        Duration::from_secs(5),
    );
    assert_eq!(trace.sent.len(), 500);
    for (i, (t, seq, _)) in trace.sent.iter().enumerate() {
        assert_eq!((*t, *seq), (ms(i as u64), i as u64));
    }
    assert_eq!(r.integrity(), "ok");
}

#[test]
fn pacing_keeps_its_schedule_when_woken_late_and_does_not_burst_after_idle() {
    let (mut s, _) = sender(Recovery::Reno, Some(1e6));
    assert!(matches!(s.poll_send(ms(0), u64::MAX), Poll::Send(_)));
    assert_eq!(s.poll_send(ms(0), u64::MAX), Poll::PaceUntil(ms(1)));
    // 300 µs late: the next slot is still 2 ms, not 2.3 ms.
    assert!(matches!(s.poll_send(us(1300), u64::MAX), Poll::Send(_)));
    assert_eq!(s.poll_send(us(1300), u64::MAX), Poll::PaceUntil(ms(2)));
    // After an idle second, one packet now and the next one a gap later.
    assert!(matches!(s.poll_send(ms(1002), u64::MAX), Poll::Send(_)));
    assert_eq!(s.poll_send(ms(1002), u64::MAX), Poll::PaceUntil(ms(1003)));
}

#[test]
fn a_slot_that_passed_while_blocked_is_not_kept() {
    // 1 ms per packet. The application offers one packet, then the next only at 1.9 ms: the
    // 1 ms slot passed while there was nothing to send (as when the window is full), so the
    // schedule restarts from that packet instead of crediting it: the one after follows
    // a whole gap later, at 2.9 ms, not at 2 ms (0.1 ms after it).
    let (mut s, _) = sender(Recovery::Reno, Some(1e6));
    let mss = MSS as u64;
    assert!(matches!(s.poll_send(ms(0), mss), Poll::Send(_)));
    assert_eq!(s.poll_send(ms(0), mss), Poll::Blocked);
    assert!(matches!(s.poll_send(us(1900), 3 * mss), Poll::Send(_)));
    assert_eq!(s.poll_send(us(1900), 3 * mss), Poll::PaceUntil(us(2900)));
}

/// A rate controller whose rate the test sets between calls (TFRC's round ends).
struct SharedRateCc(Arc<Mutex<f64>>);

impl Controller for SharedRateCc {
    fn id(&self) -> &'static str {
        "shared-rate"
    }
    fn recovery(&self) -> Recovery {
        Recovery::None
    }
    fn on_ack(&mut self, _ack: &Ack) {}
    fn on_congestion_event(&mut self, _event: &CongestionEvent) {}
    fn on_timeout(&mut self, _now: Time) {}
    fn cwnd(&self) -> f64 {
        f64::INFINITY
    }
    fn ssthresh(&self) -> f64 {
        f64::INFINITY
    }
    fn pacing_rate(&self) -> Option<f64> {
        Some(*self.0.lock().unwrap())
    }
}

#[test]
fn a_pacing_rate_that_rises_applies_at_once_and_one_that_falls_keeps_the_slot() {
    // 100 bytes/s with 1000-byte packets: one every 10 s, as TFRC after a heavy loss round.
    let rate = Arc::new(Mutex::new(100.0));
    let config = test_config();
    let mut s = Sender::new(config, Box::new(SharedRateCc(Arc::clone(&rate))));
    assert!(matches!(s.poll_send(ms(0), u64::MAX), Poll::Send(_)));
    assert_eq!(s.poll_send(ms(0), u64::MAX), Poll::PaceUntil(ms(10_000)));
    // A round end at 1 s sets 2 packets/s: the next packet is due 0.5 s after the last one,
    // i.e. now, not at 10 s (seed 004 §II-B: round i is sent at r_i).
    *rate.lock().unwrap() = 2000.0;
    assert!(matches!(s.poll_send(ms(1000), u64::MAX), Poll::Send(_)));
    assert_eq!(s.poll_send(ms(1000), u64::MAX), Poll::PaceUntil(ms(1500)));
    // The rate rises again before that slot: 4 packets/s, due 250 ms after the last one.
    *rate.lock().unwrap() = 4000.0;
    assert_eq!(s.poll_send(ms(1100), u64::MAX), Poll::PaceUntil(ms(1250)));
    // A rate that falls keeps the slot already given, the gap after it is the new one.
    *rate.lock().unwrap() = 1000.0;
    assert_eq!(s.poll_send(ms(1100), u64::MAX), Poll::PaceUntil(ms(1250)));
    assert!(matches!(s.poll_send(ms(1250), u64::MAX), Poll::Send(_)));
    assert_eq!(s.poll_send(ms(1250), u64::MAX), Poll::PaceUntil(ms(2250)));
}

#[test]
fn recovery_none_never_retransmits_and_counts_each_loss() {
    let (mut s, log) = sender(Recovery::None, Some(2e5));
    let mut r = receiver(false);
    let trace = run(
        &mut s,
        &mut r,
        &mut link(drop_first_transmission_of(&[10, 11, 50, 120])),
        200 * MSS as u64,
        Duration::from_secs(10),
    );
    assert!(retransmitted(&trace).is_empty());
    let stats = s.stats();
    assert_eq!((stats.lost_pkts, stats.retransmits), (4, 0));
    assert_eq!(stats.bytes_acked, 196 * MSS as u64);
    // One event per window: 10 and 11 together, then 50, then 120.
    assert_eq!(log.lock().unwrap().congestion_events.len(), 3);
    assert_eq!(r.missing_pkts(), Some(4));
    assert_eq!(r.integrity(), "ok");
}

#[test]
fn random_loss_of_data_and_retransmissions_still_delivers_every_byte_exactly_once() {
    for recovery in [Recovery::Tahoe, Recovery::Reno, Recovery::NewReno] {
        let (mut s, _) = sender(recovery, None);
        let mut r = receiver(true);
        // 5% loss from a fixed LCG, retransmissions included.
        let mut state = 12345u64;
        let lossy: DropRule = Box::new(move |_, _, _| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % 100 < 5
        });
        let total = 3000 * MSS as u64 + 123;
        run(
            &mut s,
            &mut r,
            &mut link(lossy),
            total,
            Duration::from_secs(600),
        );
        assert!(s.all_resolved(), "{recovery:?}");
        assert_eq!(r.integrity(), "ok", "{recovery:?}");
        assert_eq!(r.unique_bytes(), total);
        assert!(s.stats().lost_pkts >= 100, "{recovery:?} {:?}", s.stats());
        assert!(s.stats().retransmits >= s.stats().lost_pkts.min(150));
    }
}

#[test]
fn acks_for_packets_never_sent_are_ignored() {
    let (mut s, _) = sender(Recovery::Reno, None);
    assert!(matches!(s.poll_send(ms(0), u64::MAX), Poll::Send(_)));
    let bogus = AckPacket {
        flow: 0,
        echo_seq: 5,
        echo_sent_us: 0,
        cum_ack: 6,
        sack: 0,
        feedback: 0,
        duplicate: false,
    };
    assert!(!s.on_ack(ms(10), &bogus).valid);
    assert_eq!(s.stats().bytes_acked, 0);
}

#[test]
fn an_ack_that_starts_an_event_names_the_first_lost_packet_and_the_recovery_flag() {
    for recovery in [Recovery::Reno, Recovery::NewReno, Recovery::Tahoe] {
        let (mut s, _) = sender(recovery, None);
        for _ in 0..6 {
            assert!(matches!(s.poll_send(ms(0), u64::MAX), Poll::Send(_)));
        }
        let first = s.on_ack(ms(20), &ack(0, 1, 0));
        assert_eq!(
            (first.loss, first.first_lost, first.in_recovery),
            (None, None, false)
        );
        assert_eq!(s.resolved_below(), 1);
        // 1 and 2 are lost, 3 and 4 arrive: 4 is DUPTHRESH above 1, so 1 is presumed lost.
        let second = s.on_ack(ms(21), &ack(3, 1, 0));
        assert_eq!((second.loss, second.in_recovery), (None, false));
        let third = s.on_ack(ms(22), &ack(4, 1, 0b1));
        assert_eq!(third.loss, Some(LossKind::Congestion), "{recovery:?}");
        assert_eq!(third.first_lost, Some(1));
        assert!(third.in_recovery);
        // 2 is lost in the same episode: no second event.
        let fourth = s.on_ack(ms(23), &ack(5, 1, 0b11));
        assert_eq!((fourth.loss, fourth.first_lost), (None, None));
        assert_eq!(s.resolved_below(), 1);
    }
}

#[test]
fn an_rtt_sample_ends_when_the_kernel_received_the_ack_not_when_it_was_read() {
    let (mut s, _) = sender(Recovery::Reno, None);
    for _ in 0..2 {
        assert!(matches!(s.poll_send(ms(0), u64::MAX), Poll::Send(_)));
    }
    let ack = |echo_seq: u64| AckPacket {
        flow: 0,
        echo_seq,
        echo_sent_us: 0,
        cum_ack: echo_seq + 1,
        sack: 0,
        feedback: 0,
        duplicate: false,
    };
    // Arrived at 60 ms, read at 95 ms (the sender was not running meanwhile): 60 ms.
    let late = s.on_ack_received(ms(95), ms(60), &ack(0));
    assert_eq!(late.rtt, Some(ms(60)));
    // Without a receive time the sample ends when the ACK is read.
    assert_eq!(s.on_ack(ms(97), &ack(1)).rtt, Some(ms(97)));
}

#[test]
fn the_receive_window_holds_new_packets_but_not_retransmissions() {
    let cc = TestCc {
        recovery: Recovery::NewReno,
        cwnd: 10.0,
        ssthresh: f64::INFINITY,
        rate: None,
        log: Arc::new(Mutex::new(CcLog::default())),
    };
    let config = SenderConfig {
        receive_window: Some(4),
        ..test_config()
    };
    let mut s = Sender::new(config, Box::new(cc));
    let sent = |p: Poll| match p {
        Poll::Send(t) => Some((t.seq, t.retransmission)),
        _ => None,
    };
    // A window of 10 but 4 packets advertised: 0-3 go, then nothing.
    for seq in 0..4 {
        assert_eq!(sent(s.poll_send(ms(0), u64::MAX)), Some((seq, false)));
    }
    assert_eq!(s.poll_send(ms(0), u64::MAX), Poll::Blocked);
    // The cumulative point moves to 1: one more (4), then the window is full again.
    s.on_ack(ms(50), &ack(0, 1, 0));
    assert_eq!(sent(s.poll_send(ms(50), u64::MAX)), Some((4, false)));
    assert_eq!(s.poll_send(ms(50), u64::MAX), Poll::Blocked);
    // 1 is lost (2, 3 and 4 arrive): the cumulative point stays at 1, so no new packet may
    // go, but the retransmission of 1 does.
    s.on_ack(ms(60), &ack(2, 1, 0));
    s.on_ack(ms(61), &ack(3, 1, 0b1));
    s.on_ack(ms(62), &ack(4, 1, 0b11));
    assert_eq!(sent(s.poll_send(ms(62), u64::MAX)), Some((1, true)));
    assert_eq!(s.poll_send(ms(62), u64::MAX), Poll::Blocked);
    // Once it is acknowledged, every packet up to 5 is: new packets go again (as many as the
    // controller's window, cut by the loss, allows).
    s.on_ack(ms(120), &ack(1, 5, 0b111));
    assert_eq!(sent(s.poll_send(ms(120), u64::MAX)), Some((5, false)));
}

#[test]
fn per_ack_growth_counts_each_cumulative_ack_once() {
    // Reno in slow start through a fast link to a receiver that delays its ACKs (one per two
    // packets): per packet, 30 packets acknowledged take the window from 1 to 31; per ACK
    // (ns-2's TCP) it grows by one per ACK, about half of that.
    let mut windows = Vec::new();
    for per_ack in [false, true] {
        let config = SenderConfig {
            window_growth_per_ack: per_ack,
            ..test_config()
        };
        let cc = ccbench_cc::new_controller("reno", &ccbench_cc::Config::with_params(MSS, &[], 1))
            .unwrap();
        let mut s = Sender::new(config, cc);
        let mut r = FlowReceiver::new(0, true, MSS, None, Duration::ZERO, true);
        let mut fast = fast_link(ms(10));
        let trace = run(
            &mut s,
            &mut r,
            &mut fast,
            30 * MSS as u64,
            Duration::from_secs(2),
        );
        assert_eq!(s.stats().bytes_acked, 30 * MSS as u64);
        // ACKs, keyed by the packet each echoes: no loss, so each advanced the cumulative point.
        windows.push((s.controller().cwnd(), trace.acked_at.len() as f64));
    }
    let [(per_packet, _), (per_ack, acks)] = windows[..] else {
        unreachable!()
    };
    assert_eq!(per_packet, 31.0, "per packet: one per packet acknowledged");
    assert!(
        acks < 20.0,
        "the receiver delayed its ACKs: {acks} for 30 packets"
    );
    assert_eq!(per_ack, 1.0 + acks, "per ACK: one per ACK");
}
