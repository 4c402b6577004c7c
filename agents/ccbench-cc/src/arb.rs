//! arb: TCP/Arb, seed 002 §"ARB": TCP with the congestion detection and the receiver's control
//! decision of IBM's Adaptive Rate-Based protocol.
//!
//! Receiver (`ArbReceiver`): every `measurement_interval` of the sender's clock, one data packet
//! serves as the seed's measurement request (probe). For each probe the receiver computes
//! - delay = receivers_measurement_interval - senders_measurement_interval (the arrival gap
//!   minus the send-timestamp gap of two successive probes), accumulated in total_delay;
//! - throughput = byte_count / receivers_measurement_interval, the bytes received since the
//!   previous probe, and max_bandwidth, the highest throughput observed;
//! - queueing_estimate = total_delay · max_bandwidth, in packets of the flow's payload size
//!   (the seed writes "total_delay / max_bandwidth" but means the product: bytes queued is delay
//!   times rate; RTP counts 1000-byte packets, TCP/Arb the connection's segments);
//! - the command: queueing_estimate <= 1 packet: RATEINCREASE; up to 10: RESTRAIN; above 10:
//!   RATEDECREASE; above 40 the original ARB "assumes that this is noise and tells the sender to
//!   restrain". The three thresholds are parameters.
//!
//! Choices the seed leaves open:
//! - The seed's sender issues probes "on the order of a round trip time", at least 0.1 s apart
//!   in RTP products; here every data packet carries the sender's timestamp, so the receiver
//!   picks the first packet sent at least `measurement_interval` (default 0.1 s) after the
//!   previous probe. Only probes produce a command; other ACKs carry no feedback.
//! - total_delay is kept at or above zero: a negative running total only means the first probe
//!   waited in a queue that has drained since, and zero is the seed's "no congestion" level.
//!
//! Sender (`Arb`): "keep all aspects of TCP/Reno and TCP/Vegas except remove CAM": Reno's window
//! and loss response with Reno recovery (seed 002's Vegas is ns's, built on Reno), and
//! - RATEINCREASE: grow as normal, except that slow start doubles every other round trip, as
//!   Vegas does; RESTRAIN: the window stays; RATEDECREASE: cwnd is halved, and in slow start
//!   ssthresh = 2 moves the sender to congestion avoidance (in congestion avoidance ssthresh
//!   is lowered to the halved window so that it stays there). Before the first command the
//!   sender grows as after a RATEINCREASE.
//! - At most one RATEDECREASE per smoothed RTT: the seed's probes are about one RTT apart, ours
//!   may be closer, and a halving shows in the delay only one RTT later.
//! - "Probe packets are not issued during periods of recovery": commands that arrive while the
//!   transport is in fast recovery (or before the first ACK after a timeout) are ignored, so the
//!   scheme digresses to Reno there.
//! - Losses: Reno's ssthresh = max(cwnd/2, 2), cwnd = ssthresh; a timeout sets cwnd = 1.

use std::time::Duration;

use crate::params::Params;
use crate::window::{acked_packets, Rounds, Window, MIN_CWND_AFTER_DECREASE};
use crate::{
    Ack, ArbCommand, Config, ConfigError, CongestionEvent, Controller, Feedback,
    ReceiverController, Recovery, Sent, Time,
};

/// The receiver's tunables (seed 002 §ARB).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArbReceiverParams {
    /// Least sender-clock time between two probes (RTP's minimum, about 0.1 s).
    pub measurement_interval: Duration,
    /// Packets: at or below, RATEINCREASE (1).
    pub increase_max_pkts: f64,
    /// Packets: above, RATEDECREASE (10).
    pub decrease_min_pkts: f64,
    /// Packets: above, the estimate is taken for noise and the command is RESTRAIN (40).
    pub noise_min_pkts: f64,
}

impl ArbReceiverParams {
    fn from_params(p: &mut Params) -> Result<ArbReceiverParams, ConfigError> {
        let interval_s = p.real("measurement_interval", 0.1, 0.001, 10.0)?;
        let increase_max_pkts = p.real("increase_threshold", 1.0, 0.0, 1e6)?;
        let decrease_min_pkts = p.real("decrease_threshold", 10.0, 0.0, 1e6)?;
        let noise_min_pkts = p.real("noise_threshold", 40.0, 0.0, 1e9)?;
        if !(increase_max_pkts <= decrease_min_pkts && decrease_min_pkts <= noise_min_pkts) {
            return Err(ConfigError(format!(
                "arb: params.increase_threshold ({increase_max_pkts}) <= \
                 params.decrease_threshold ({decrease_min_pkts}) <= \
                 params.noise_threshold ({noise_min_pkts}) must hold"
            )));
        }
        Ok(ArbReceiverParams {
            measurement_interval: Duration::from_secs_f64(interval_s),
            increase_max_pkts,
            decrease_min_pkts,
            noise_min_pkts,
        })
    }

    /// The receiver's control decision for a queueing estimate in packets.
    pub fn command_for(&self, queueing_estimate_pkts: f64) -> ArbCommand {
        if queueing_estimate_pkts <= self.increase_max_pkts {
            ArbCommand::RateIncrease
        } else if queueing_estimate_pkts <= self.decrease_min_pkts {
            ArbCommand::Restrain
        } else if queueing_estimate_pkts <= self.noise_min_pkts {
            ArbCommand::RateDecrease
        } else {
            ArbCommand::Restrain
        }
    }
}

/// Parses every ARB parameter once: the sender and the receiver read the same spec, and an
/// unknown name is refused whichever half is built.
fn arb_params(config: &Config) -> Result<ArbReceiverParams, ConfigError> {
    let mut p = Params::new("arb", config);
    let receiver = ArbReceiverParams::from_params(&mut p)?;
    p.finish()?;
    Ok(receiver)
}

#[derive(Clone, Copy, Debug)]
struct Probe {
    sent_at: Time,
    arrived_at: Time,
}

/// The receiver half of TCP/Arb.
pub struct ArbReceiver {
    params: ArbReceiverParams,
    mss: u32,
    last_probe: Option<Probe>,
    /// byte_count: bytes received since the last probe (this probe included).
    byte_count: u64,
    total_delay_s: f64,
    max_bandwidth_bps: f64,
    queueing_estimate_pkts: f64,
}

impl ArbReceiver {
    pub fn new(config: &Config) -> Result<ArbReceiver, ConfigError> {
        Ok(ArbReceiver::with_params(arb_params(config)?, config.mss))
    }

    pub fn with_params(params: ArbReceiverParams, mss: u32) -> ArbReceiver {
        ArbReceiver {
            params,
            mss,
            last_probe: None,
            byte_count: 0,
            total_delay_s: 0.0,
            max_bandwidth_bps: 0.0,
            queueing_estimate_pkts: 0.0,
        }
    }

    pub fn total_delay(&self) -> f64 {
        self.total_delay_s
    }

    /// Bytes per second.
    pub fn max_bandwidth(&self) -> f64 {
        self.max_bandwidth_bps
    }

    pub fn queueing_estimate_pkts(&self) -> f64 {
        self.queueing_estimate_pkts
    }
}

impl ReceiverController for ArbReceiver {
    fn on_packet(&mut self, now: Time, _seq: u64, sent_at: Time, bytes: u32) -> Option<Feedback> {
        let Some(previous) = self.last_probe else {
            self.last_probe = Some(Probe {
                sent_at,
                arrived_at: now,
            });
            return None;
        };
        self.byte_count += u64::from(bytes);
        if sent_at < previous.sent_at + self.params.measurement_interval {
            return None;
        }
        let senders_interval = (sent_at - previous.sent_at).as_secs_f64();
        let receivers_interval = now.saturating_sub(previous.arrived_at).as_secs_f64();
        self.total_delay_s = (self.total_delay_s + receivers_interval - senders_interval).max(0.0);
        if receivers_interval > 0.0 {
            let throughput = self.byte_count as f64 / receivers_interval;
            self.max_bandwidth_bps = self.max_bandwidth_bps.max(throughput);
        }
        self.queueing_estimate_pkts =
            self.total_delay_s * self.max_bandwidth_bps / f64::from(self.mss.max(1));
        self.byte_count = 0;
        self.last_probe = Some(Probe {
            sent_at,
            arrived_at: now,
        });
        Some(Feedback::Arb(
            self.params.command_for(self.queueing_estimate_pkts),
        ))
    }
}

/// The sender half of TCP/Arb.
pub struct Arb {
    window: Window,
    command: Option<ArbCommand>,
    in_recovery: bool,
    srtt: Option<Duration>,
    last_decrease: Option<Time>,
    rounds: Rounds,
    /// Slow start grows only in every other round trip (as Vegas's). The first ACK opens the
    /// first round, which grows.
    doubling: bool,
}

impl Arb {
    pub fn new(config: &Config) -> Result<Arb, ConfigError> {
        arb_params(config)?;
        Ok(Arb {
            window: Window::new(),
            command: None,
            in_recovery: false,
            srtt: None,
            last_decrease: None,
            rounds: Rounds::default(),
            doubling: false,
        })
    }

    pub fn last_command(&self) -> Option<ArbCommand> {
        self.command
    }
}

impl Controller for Arb {
    fn id(&self) -> &'static str {
        "arb"
    }

    fn recovery(&self) -> Recovery {
        Recovery::Reno
    }

    fn set_initial_window(&mut self, packets: f64) {
        self.window.set_initial(packets);
    }

    fn set_max_window(&mut self, packets: f64) {
        self.window.set_max(packets);
    }

    fn on_sent(&mut self, sent: &Sent) {
        self.rounds.on_sent(sent);
    }

    fn on_ack(&mut self, ack: &Ack) {
        if let Some(rtt) = ack.rtt {
            // The kernel's SRTT gain, 1/8.
            self.srtt = Some(match self.srtt {
                None => rtt,
                Some(srtt) => srtt.mul_f64(0.875) + rtt.mul_f64(0.125),
            });
        }
        self.in_recovery = ack.in_recovery;
        // The ACK that ends a round is the first of the next one.
        if self.rounds.ended(ack) {
            self.doubling = !self.doubling;
        }
        if ack.in_recovery {
            return;
        }
        if !matches!(self.command, None | Some(ArbCommand::RateIncrease)) {
            return; // RESTRAIN: the window stays (a decrease was applied in on_feedback).
        }
        let acked = acked_packets(ack);
        if self.window.in_slow_start() {
            if self.doubling {
                self.window.slow_start(acked);
            }
        } else {
            self.window.reno_grow(acked);
        }
    }

    fn on_congestion_event(&mut self, _event: &CongestionEvent) {
        self.window.halve();
        self.in_recovery = true;
    }

    fn on_timeout(&mut self, _now: Time) {
        self.window.timeout(0.5);
        // Until the next ACK says otherwise: the probes of a connection in loss recovery do not
        // steer it.
        self.in_recovery = true;
    }

    fn on_feedback(&mut self, now: Time, feedback: Feedback) {
        let Feedback::Arb(command) = feedback;
        if self.in_recovery {
            return;
        }
        self.command = Some(command);
        if command != ArbCommand::RateDecrease {
            return;
        }
        let srtt = self.srtt.unwrap_or(Duration::ZERO);
        if self
            .last_decrease
            .is_some_and(|last| now.saturating_sub(last) < srtt)
        {
            return;
        }
        self.last_decrease = Some(now);
        let w = &mut self.window;
        let was_slow_start = w.in_slow_start();
        w.cwnd = (w.cwnd / 2.0).max(MIN_CWND_AFTER_DECREASE);
        w.ssthresh = if was_slow_start {
            2.0
        } else {
            w.ssthresh.min(w.cwnd)
        };
    }

    fn cwnd(&self) -> f64 {
        self.window.cwnd
    }

    fn ssthresh(&self) -> f64 {
        self.window.ssthresh
    }

    fn pacing_rate(&self) -> Option<f64> {
        None
    }

    fn state_names(&self) -> &'static [&'static str] {
        &["arb_command"]
    }

    /// 0: no command yet; otherwise the feedback byte (1 increase, 2 restrain, 3 decrease).
    fn state_values(&self, out: &mut [f64]) {
        out[0] = self
            .command
            .map_or(0.0, |c| f64::from(Feedback::Arb(c).to_wire()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::config;

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1000.0)
    }

    #[test]
    fn commands_follow_the_1_10_40_packet_thresholds() {
        let receiver = ArbReceiver::new(&config(&[])).unwrap();
        let p = receiver.params;
        use ArbCommand::*;
        for (queue, want) in [
            (0.0, RateIncrease),
            (1.0, RateIncrease),
            (1.001, Restrain),
            (10.0, Restrain),
            (10.001, RateDecrease),
            (40.0, RateDecrease),
            (40.001, Restrain),
            (500.0, Restrain),
        ] {
            assert_eq!(p.command_for(queue), want, "queue {queue}");
        }
        // Overridable: thresholds 2 / 5 / 20.
        let params = [
            ("increase_threshold", 2.0),
            ("decrease_threshold", 5.0),
            ("noise_threshold", 20.0),
        ];
        let p = ArbReceiver::new(&config(&params)).unwrap().params;
        assert_eq!(p.command_for(1.5), RateIncrease);
        assert_eq!(p.command_for(4.0), Restrain);
        assert_eq!(p.command_for(6.0), RateDecrease);
        assert_eq!(p.command_for(25.0), Restrain);
        let err = ArbReceiver::new(&config(&[("decrease_threshold", 0.5)]))
            .err()
            .unwrap();
        assert!(err.0.contains("decrease_threshold"), "{err}");
        let err = Arb::new(&config(&[("bogus", 1.0)])).err().unwrap();
        assert!(err.0.contains("params.bogus"), "{err}");
    }

    /// Packets of 1000 bytes every 1 ms (1e6 bytes/s) with a one-way delay of 50 ms plus
    /// `extra(t)` (seconds of sender time -> ms), arriving on a receiver clock 7 s ahead of the
    /// sender's. Returns the receiver and its last command.
    fn receive(extra: impl Fn(f64) -> f64, until_s: f64) -> (ArbReceiver, Option<ArbCommand>) {
        let mut receiver = ArbReceiver::new(&config(&[])).unwrap();
        let mut last = None;
        let mut seq = 0u64;
        loop {
            let sent_s = seq as f64 / 1000.0;
            if sent_s > until_s {
                return (receiver, last);
            }
            let arrival = Duration::from_secs(7) + ms(sent_s * 1000.0 + 50.0 + extra(sent_s));
            if let Some(Feedback::Arb(command)) =
                receiver.on_packet(arrival, seq, ms(sent_s * 1000.0), 1000)
            {
                last = Some(command);
            }
            seq += 1;
        }
    }

    #[test]
    fn the_receiver_turns_accumulated_delay_into_packets_at_the_max_bandwidth() {
        // 0.5 s at the base delay (max_bandwidth = 1e6 bytes/s), then the one-way delay grows
        // by `queue_ms` over 0.5 s (arrivals slower than 1e6 bytes/s: the maximum stays) and
        // holds: `queue_ms` of delay at 1000 packets/s is `queue_ms` packets.
        use ArbCommand::*;
        for (queue_ms, want) in [
            (0.5, RateIncrease),
            (5.0, Restrain),
            (25.0, RateDecrease),
            (60.0, Restrain),
        ] {
            let ramp = move |t: f64| queue_ms * ((t - 0.5) / 0.5).clamp(0.0, 1.0);
            let (receiver, last) = receive(ramp, 1.5);
            assert!(
                (receiver.max_bandwidth() - 1e6).abs() < 1.0,
                "{}",
                receiver.max_bandwidth()
            );
            assert!((receiver.total_delay() - queue_ms / 1000.0).abs() < 1e-6);
            assert!((receiver.queueing_estimate_pkts() - queue_ms).abs() < 1e-3);
            assert_eq!(last, Some(want), "queue of {queue_ms} packets");
        }
        // The first probe waited 20 ms in a queue that then drained: total_delay stops at 0.
        let (receiver, last) = receive(|t| if t < 0.3 { 20.0 } else { 0.0 }, 1.0);
        assert_eq!(receiver.total_delay(), 0.0);
        assert_eq!(last, Some(RateIncrease));
    }

    #[test]
    fn only_probes_carry_commands() {
        let mut receiver = ArbReceiver::new(&config(&[("measurement_interval", 0.05)])).unwrap();
        let commands = (0..1000u64)
            .filter(|&i| {
                let t = ms(i as f64);
                receiver.on_packet(t + ms(30.0), i, t, 1000).is_some()
            })
            .count();
        assert_eq!(
            commands, 19,
            "one per 50 ms after the first packet, over 0..999 ms"
        );
    }

    fn ack<'a>(now_ms: u64, seq: u64, newly: &'a [u64], in_recovery: bool) -> Ack<'a> {
        Ack {
            now: Duration::from_millis(now_ms),
            seq,
            rtt: Some(Duration::from_millis(100)),
            newly_acked: newly,
            newly_acked_bytes: 1000 * newly.len() as u64,
            highest_acked: seq,
            in_flight: 0,
            delivered_bytes: 0,
            in_recovery,
            growth_packets: newly.len() as f64,
        }
    }

    fn sent(now_ms: u64, seq: u64) -> Sent {
        Sent {
            now: Duration::from_millis(now_ms),
            seq,
            bytes: 1000,
            in_flight: 0,
            retransmission: false,
        }
    }

    #[test]
    fn the_sender_follows_the_commands() {
        use ArbCommand::*;
        let mut arb = Arb::new(&config(&[])).unwrap();
        // Slow start doubles every other round trip: round 1 (ack of 0) grows, round 2
        // (acks of 1, 2) does not, round 3 (acks of 3..=4) grows.
        arb.on_sent(&sent(0, 0));
        arb.on_ack(&ack(100, 0, &[0], false));
        assert_eq!(arb.cwnd(), 2.0);
        arb.on_sent(&sent(100, 1));
        arb.on_sent(&sent(100, 2));
        arb.on_ack(&ack(200, 1, &[1], false));
        arb.on_ack(&ack(200, 2, &[2], false));
        assert_eq!(arb.cwnd(), 2.0);
        arb.on_sent(&sent(200, 3));
        arb.on_sent(&sent(200, 4));
        arb.on_ack(&ack(300, 3, &[3], false));
        arb.on_ack(&ack(300, 4, &[4], false));
        assert_eq!(arb.cwnd(), 4.0);
        // RESTRAIN: the window stays, in any round.
        arb.on_feedback(Duration::from_millis(300), Feedback::Arb(Restrain));
        for seq in 5..9 {
            arb.on_sent(&sent(300, seq));
        }
        for seq in 5..9 {
            arb.on_ack(&ack(400, seq, &[seq], false));
        }
        assert_eq!(arb.cwnd(), 4.0);
        assert_eq!(arb.last_command(), Some(Restrain));
        // RATEDECREASE in slow start: halve, ssthresh = 2 (congestion avoidance).
        arb.on_feedback(Duration::from_millis(400), Feedback::Arb(RateDecrease));
        assert_eq!((arb.cwnd(), arb.ssthresh()), (2.0, 2.0));
        // Another within an SRTT (100 ms) is ignored; one after it halves (floor 2).
        arb.window.cwnd = 10.0;
        arb.on_feedback(Duration::from_millis(450), Feedback::Arb(RateDecrease));
        assert_eq!(arb.cwnd(), 10.0);
        arb.on_feedback(Duration::from_millis(500), Feedback::Arb(RateDecrease));
        assert_eq!((arb.cwnd(), arb.ssthresh()), (5.0, 2.0));
        // RATEINCREASE in congestion avoidance: one packet per window.
        arb.on_feedback(Duration::from_millis(510), Feedback::Arb(RateIncrease));
        for seq in 9..14 {
            arb.on_ack(&ack(600, seq, &[seq], false));
        }
        let want = (0..5).fold(5.0, |c: f64, _| c + 1.0 / c);
        assert!(
            (arb.cwnd() - want).abs() < 1e-12,
            "{} vs {want}",
            arb.cwnd()
        );
        // Commands during fast recovery are ignored.
        arb.on_congestion_event(&CongestionEvent {
            now: Duration::from_millis(700),
            in_flight: 6,
            lost_sent_at: Duration::from_millis(600),
        });
        let (cwnd, ssthresh) = (arb.cwnd(), arb.ssthresh());
        assert_eq!(cwnd, ssthresh);
        arb.on_ack(&ack(710, 14, &[14], true));
        arb.on_feedback(Duration::from_millis(900), Feedback::Arb(RateDecrease));
        assert_eq!(arb.cwnd(), cwnd);
        // A timeout: cwnd = 1.
        arb.on_timeout(Duration::from_millis(2000));
        assert_eq!(arb.cwnd(), 1.0);
    }
}
