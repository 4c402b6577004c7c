//! tfrc: the TCP-friendly rate control protocol (TFRCP) of seed 004 §II-B, with the throughput
//! formula of its Appendix (Padhye et al.'s model of TCP Reno, with timeouts).
//!
//! The sender works in rounds (the "recomputation interval" M). At the start of round i it
//! sends at rate r_i, i.e. n_i = r_i·M packets clocked out uniformly: `pacing_rate()` is r_i,
//! `cwnd()` is infinite and there is no retransmission (`Recovery::None`). It keeps a log of the
//! packets it sent, each with its *received status* (received / presumed lost / unknown) and its
//! *timeout limit* (send time + the base timeout B at sending). At the end of round i (time t_i),
//! with j the smallest sequence number still unknown at the end of round i-1, l the last packet
//! sent and a the highest sequence number acknowledged:
//! - every unknown packet in j..=l whose timeout limit is below t_i is marked lost;
//! - every unknown packet in j..=a is marked lost;
//! - x_i = packets received, y_i = packets lost; y_i = 0: r_{i+1} = 2·r_i, otherwise
//!   r_{i+1} = f(W_max, R, p_i, B) with p_i = y_i / (x_i + y_i) (Appendix).
//!
//! Choices the seed leaves open, each documented where it is made:
//! - Round lengths: S1 fixed M; S2 K·rtt_i (rtt_i the smoothed RTT at the start of the round);
//!   S3 a constant plus a uniform random number drawn at the start of the round (§III-C.1). The
//!   first round starts at the flow's start (time 0).
//! - The 8-bit ACK vector (k-7..k) maps onto this crate's `Ack`: the transport acknowledges with
//!   a cumulative point and a selective bitmap, and reports every packet it learns was received
//!   in `Ack::newly_acked` (plus `Ack::seq`, the packet k that triggered the ACK); the 1-bits of
//!   the seed's vector are thus marked received when they first appear. A 0-bit (not received
//!   yet) needs no action before the round ends: the seed lets a later ACK's vector flip the
//!   status to received, and at the round end every unknown packet at or below a is marked
//!   lost, which is exactly what the 0-bits left standing amount to. The transport's bitmap only
//!   has to cover k-7..k (cumulative point + bitmap), as the seed's vector does.
//! - Each resolved packet is counted in exactly one round (the first round end after its status
//!   was decided). For packets at or below a this is the seed's x_i / y_i over j..=a; packets
//!   beyond a that timed out are counted too, which the seed's j..=a would skip forever once j
//!   moves past them. Without this a total outage (a stalls, every packet times out) would look
//!   like a loss-free round and double the rate, against the seed's "self-limitation" (§II-B).
//! - A round in which no packet was resolved keeps the rate when packets are still unknown
//!   (nothing acknowledged nor timed out yet: no evidence of a loss-free round to double on),
//!   and when the round was empty although its rate allowed a packet (the application sent
//!   nothing: no doubling while idle). A round empty because its rate was below one packet per
//!   round (the seed's n_i = r_i·M < 1, §II-B) has y_i = 0 and doubles, as the seed says:
//!   otherwise a rate cut to, say, 0.1 packets/s with M = 1 s would wait ~10 s for a packet to
//!   resolve before each doubling, while the seed's rounds recover it in a few M.
//! - R and B "exactly as in TCP": RFC 6298 (SRTT, RTTVAR with gains 1/8 and 1/4,
//!   B = max(rto_min, SRTT + 4·RTTVAR), at most 60 s), from every ACK's RTT sample t_k - s_k.
//!   Before the first sample B is 1 s (RFC 6298 (2.1)) and R is taken equal to it.

use std::collections::VecDeque;
use std::time::Duration;

use crate::params::Params;
use crate::rng::SplitMix64;
use crate::{Ack, Config, ConfigError, CongestionEvent, Controller, Recovery, Sent, Time};

/// Numeric ceiling of the rate (packets per second): doubling is unbounded in the seed, and a
/// long loss-free stretch must not overflow to infinity.
const MAX_RATE_PPS: f64 = 1e9;
/// RFC 6298 (2.1): the RTO before the first RTT sample, and (2.5) its upper bound.
const INITIAL_RTO_S: f64 = 1.0;
const MAX_RTO_S: f64 = 60.0;

/// How the length of each round (the recomputation interval) is chosen, seed 004 §III-C.1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RoundStrategy {
    /// S1: fixed M seconds.
    Fixed { m_s: f64 },
    /// S2: K times the round trip time at the start of the round.
    RttMultiple { k: f64 },
    /// S3: a constant plus a uniform random number in [0, random_s), drawn per round.
    ConstantPlusRandom { constant_s: f64, random_s: f64 },
}

/// The seed's tunables (seed 004 §II-B, §III-C, §IV).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TfrcParams {
    pub strategy: RoundStrategy,
    /// r_0, packets per second (40 in all the seed's experiments).
    pub r0_pps: f64,
    /// W_max, the receiver's declared window in packets (100 in §IV).
    pub w_max_pkts: f64,
    /// Lower bound of the base timeout B, seconds (RFC 6298 (2.4): 1 s).
    pub rto_min_s: f64,
}

impl TfrcParams {
    pub fn from_config(config: &Config) -> Result<TfrcParams, ConfigError> {
        let mut p = Params::new("tfrc", config);
        // Seed 004 §IV (implementation): M = 3 s, W_max = 100 packets, r_0 ~ 40 packets/s.
        let strategy = p.integer("strategy", 1, 1, 3)?;
        let m_s = p.real("m", 3.0, 0.01, 600.0)?;
        // §III-C.1 studies K between 10 and 60.
        let k = p.real("k", 10.0, 0.1, 1000.0)?;
        // §III-C.1's S3 pairs are 0.3 + [0, 5.4], 1.5 + [0, 3] and 2.7 + [0, 0.6] (all of mean 3 s).
        let s3_constant_s = p.real("s3_constant", 1.5, 0.01, 600.0)?;
        let s3_random_s = p.real("s3_random", 3.0, 0.0, 600.0)?;
        let r0_pps = p.real("r0", 40.0, 0.01, 1e7)?;
        let w_max_pkts = p.real("w_max", 100.0, 1.0, 1e6)?;
        let rto_min_s = p.real("rto_min", 1.0, 0.001, 60.0)?;
        p.finish()?;
        let strategy = match strategy {
            1 => RoundStrategy::Fixed { m_s },
            2 => RoundStrategy::RttMultiple { k },
            _ => RoundStrategy::ConstantPlusRandom {
                constant_s: s3_constant_s,
                random_s: s3_random_s,
            },
        };
        Ok(TfrcParams {
            strategy,
            r0_pps,
            w_max_pkts,
            rto_min_s,
        })
    }
}

/// The throughput f(W_m, p, R, B) of seed 004's Appendix, in packets per second: `w_max` in
/// packets, `p` the frequency of loss indications per packet (0 < p <= 1), `rtt_s` and
/// `base_timeout_s` in seconds.
pub fn padhye_rate_pps(w_max: f64, p: f64, rtt_s: f64, base_timeout_s: f64) -> f64 {
    assert!(
        p > 0.0 && p <= 1.0,
        "loss frequency p must be in (0, 1], got {p}"
    );
    let g = 1.0
        + p
        + 2.0 * p.powi(2)
        + 4.0 * p.powi(3)
        + 8.0 * p.powi(4)
        + 16.0 * p.powi(5)
        + 32.0 * p.powi(6);
    if p >= 1.0 {
        // Every term with 1/(1-p) dominates as p -> 1 and Q -> 1: f -> 1 / (G(1)·B).
        return 1.0 / (g * base_timeout_s);
    }
    let w_p = 2.0 / 3.0 + (4.0 * (1.0 - p) / (3.0 * p) + 4.0 / 9.0).sqrt();
    let q = |w: f64| {
        let s = 1.0 - p;
        let value =
            (1.0 - s.powi(3)) * (1.0 + s.powi(3) * (1.0 - s.powf(w - 3.0))) / (1.0 - s.powf(w));
        value.min(1.0)
    };
    if w_p < w_max {
        let q_w = q(w_p);
        ((1.0 - p) / p + w_p + q_w / (1.0 - p))
            / (rtt_s * (w_p + 1.0) + q_w * g * base_timeout_s / (1.0 - p))
    } else {
        let q_w = q(w_max);
        ((1.0 - p) / p + w_max + q_w / (1.0 - p))
            / (rtt_s * (w_max / 4.0 + (1.0 - p) / (p * w_max) + 2.0)
                + q_w * g * base_timeout_s / (1.0 - p))
    }
}

/// The received status of a logged packet (seed 004 §II-B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceivedStatus {
    Unknown,
    Received,
    Lost,
}

#[derive(Clone, Copy, Debug)]
struct LogEntry {
    seq: u64,
    /// Send time plus the base timeout B at sending.
    timeout_limit: Time,
    status: ReceivedStatus,
    /// Already counted in some round's x_i / y_i.
    counted: bool,
}

/// What the last round end decided (for traces and tests).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundOutcome {
    pub ended_at: Time,
    pub received: u64,
    pub lost: u64,
    /// p_i, when the round had losses.
    pub loss_p: Option<f64>,
    pub next_rate_pps: f64,
    pub next_round_len: Duration,
}

pub struct Tfrc {
    params: TfrcParams,
    mss: u32,
    rate_pps: f64,
    round_end: Time,
    round_len: Duration,
    /// Packets from j (the smallest unknown at the last round end) to l, in sequence order.
    log: VecDeque<LogEntry>,
    /// a: highest sequence number acknowledged.
    highest_acked: Option<u64>,
    srtt_s: Option<f64>,
    rttvar_s: f64,
    /// B, the base timeout, seconds.
    rto_s: f64,
    last_loss_p: f64,
    last_round: Option<RoundOutcome>,
    rng: SplitMix64,
}

impl Tfrc {
    pub fn new(config: &Config) -> Result<Tfrc, ConfigError> {
        Ok(Tfrc::with_params(
            TfrcParams::from_config(config)?,
            config.mss,
            config.seed,
        ))
    }

    pub fn with_params(params: TfrcParams, mss: u32, seed: u64) -> Tfrc {
        let mut tfrc = Tfrc {
            params,
            mss,
            rate_pps: params.r0_pps,
            round_end: Duration::ZERO,
            round_len: Duration::ZERO,
            log: VecDeque::new(),
            highest_acked: None,
            srtt_s: None,
            rttvar_s: 0.0,
            rto_s: INITIAL_RTO_S.max(params.rto_min_s),
            last_loss_p: 0.0,
            last_round: None,
            rng: SplitMix64::new(seed),
        };
        tfrc.round_len = tfrc.draw_round_len();
        tfrc.round_end = tfrc.round_len;
        tfrc
    }

    pub fn rate_pps(&self) -> f64 {
        self.rate_pps
    }

    /// R: the smoothed RTT, or the initial RTO before any sample.
    pub fn rtt_estimate_s(&self) -> f64 {
        self.srtt_s.unwrap_or(self.rto_s)
    }

    /// B: the base timeout.
    pub fn base_timeout_s(&self) -> f64 {
        self.rto_s
    }

    pub fn last_round(&self) -> Option<RoundOutcome> {
        self.last_round
    }

    pub fn current_round_len(&self) -> Duration {
        self.round_len
    }

    /// The received status of a logged packet (None when it left the log or was never sent).
    pub fn status_of(&self, seq: u64) -> Option<ReceivedStatus> {
        self.entry_index(seq).map(|i| self.log[i].status)
    }

    fn entry_index(&self, seq: u64) -> Option<usize> {
        self.log.binary_search_by_key(&seq, |entry| entry.seq).ok()
    }

    fn draw_round_len(&mut self) -> Duration {
        let seconds = match self.params.strategy {
            RoundStrategy::Fixed { m_s } => m_s,
            RoundStrategy::RttMultiple { k } => k * self.rtt_estimate_s(),
            RoundStrategy::ConstantPlusRandom {
                constant_s,
                random_s,
            } => constant_s + random_s * self.rng.next_unit(),
        };
        // At least 1 µs so that rounds always advance the clock.
        Duration::from_secs_f64(seconds.max(1e-6))
    }

    /// RFC 6298 §2 with one sample.
    fn update_rtt(&mut self, sample: Duration) {
        let r = sample.as_secs_f64();
        match self.srtt_s {
            None => {
                self.srtt_s = Some(r);
                self.rttvar_s = r / 2.0;
            }
            Some(srtt) => {
                self.rttvar_s = 0.75 * self.rttvar_s + 0.25 * (srtt - r).abs();
                self.srtt_s = Some(0.875 * srtt + 0.125 * r);
            }
        }
        let srtt = self.srtt_s.unwrap_or(r);
        self.rto_s = (srtt + 4.0 * self.rttvar_s).clamp(self.params.rto_min_s, MAX_RTO_S);
    }

    fn mark_received(&mut self, seq: u64) {
        if let Some(i) = self.entry_index(seq) {
            let entry = &mut self.log[i];
            // A packet already counted as lost stays lost (its round is decided); one merely
            // unknown becomes received.
            if entry.status == ReceivedStatus::Unknown {
                entry.status = ReceivedStatus::Received;
            }
        }
    }

    /// Whether the round ending now had nothing to resolve only because its rate was below one
    /// packet per round (seed 004 §II-B: n_i = r_i·M < 1, so y_i = 0 and the rate doubles).
    /// Called after the round's packets were marked: no packet may still be unknown.
    fn empty_for_want_of_rate(&self) -> bool {
        let nothing_unknown = self
            .log
            .iter()
            .all(|entry| entry.status != ReceivedStatus::Unknown);
        nothing_unknown && self.rate_pps * self.round_len.as_secs_f64() < 1.0
    }

    /// The end of a round at `now` (seed 004 §II-B).
    fn end_round(&mut self, now: Time) {
        let a = self.highest_acked;
        let (mut received, mut lost) = (0u64, 0u64);
        for entry in self.log.iter_mut() {
            if entry.status == ReceivedStatus::Unknown
                && (entry.timeout_limit < now || a.is_some_and(|a| entry.seq <= a))
            {
                entry.status = ReceivedStatus::Lost;
            }
            if !entry.counted && entry.status != ReceivedStatus::Unknown {
                entry.counted = true;
                match entry.status {
                    ReceivedStatus::Received => received += 1,
                    ReceivedStatus::Lost => lost += 1,
                    ReceivedStatus::Unknown => {}
                }
            }
        }
        let mut loss_p = None;
        if lost > 0 {
            let p = lost as f64 / (received + lost) as f64;
            loss_p = Some(p);
            self.last_loss_p = p;
            self.rate_pps =
                padhye_rate_pps(self.params.w_max_pkts, p, self.rtt_estimate_s(), self.rto_s);
        } else if received > 0 || self.empty_for_want_of_rate() {
            self.rate_pps *= 2.0;
        }
        self.rate_pps = self.rate_pps.min(MAX_RATE_PPS);
        // The next round's j: drop everything before the smallest still-unknown packet.
        while self
            .log
            .front()
            .is_some_and(|entry| entry.status != ReceivedStatus::Unknown)
        {
            self.log.pop_front();
        }
        self.round_len = self.draw_round_len();
        self.round_end = now + self.round_len;
        self.last_round = Some(RoundOutcome {
            ended_at: now,
            received,
            lost,
            loss_p,
            next_rate_pps: self.rate_pps,
            next_round_len: self.round_len,
        });
    }
}

impl Controller for Tfrc {
    fn id(&self) -> &'static str {
        "tfrc"
    }

    fn recovery(&self) -> Recovery {
        Recovery::None
    }

    fn on_sent(&mut self, sent: &Sent) {
        let entry = LogEntry {
            seq: sent.seq,
            timeout_limit: sent.now + Duration::from_secs_f64(self.rto_s),
            status: ReceivedStatus::Unknown,
            counted: false,
        };
        match self.log.back() {
            Some(last) if last.seq >= sent.seq => {
                // Not expected (TFRC never retransmits); keep the log sorted and unique.
                if let Err(i) = self.log.binary_search_by_key(&sent.seq, |e| e.seq) {
                    self.log.insert(i, entry);
                }
            }
            _ => self.log.push_back(entry),
        }
    }

    fn on_ack(&mut self, ack: &Ack) {
        if let Some(rtt) = ack.rtt {
            self.update_rtt(rtt);
        }
        let a = ack.highest_acked.max(ack.seq);
        self.highest_acked = Some(self.highest_acked.map_or(a, |old| old.max(a)));
        self.mark_received(ack.seq);
        for &seq in ack.newly_acked {
            self.mark_received(seq);
        }
    }

    /// TFRC does its own loss accounting at round ends; the transport's loss events are ignored.
    fn on_congestion_event(&mut self, _event: &CongestionEvent) {}

    /// No retransmission timer applies to TFRC (its timeouts are the log's timeout limits).
    fn on_timeout(&mut self, _now: Time) {}

    fn next_timer(&self) -> Option<Time> {
        Some(self.round_end)
    }

    fn on_timer(&mut self, now: Time) {
        if now >= self.round_end {
            self.end_round(now);
        }
    }

    fn cwnd(&self) -> f64 {
        f64::INFINITY
    }

    fn ssthresh(&self) -> f64 {
        f64::INFINITY
    }

    fn pacing_rate(&self) -> Option<f64> {
        Some(self.rate_pps * self.mss as f64)
    }

    fn state_names(&self) -> &'static [&'static str] {
        &["rate_bps", "loss_p", "srtt_us", "rto_us", "round_us"]
    }

    fn state_values(&self, out: &mut [f64]) {
        out[0] = self.rate_pps * self.mss as f64 * 8.0;
        out[1] = self.last_loss_p;
        out[2] = self.srtt_s.map_or(0.0, |s| s * 1e6);
        out[3] = self.rto_s * 1e6;
        out[4] = self.round_len.as_secs_f64() * 1e6;
    }
}

#[cfg(test)]
#[path = "tfrc_appendix.rs"]
mod appendix;

#[cfg(test)]
mod tests {
    use super::appendix::appendix_f;
    use super::*;

    /// The tests' usual `Config` with a seed of its own.
    fn config(params: &[(&str, f64)], seed: u64) -> Config {
        Config::with_params(1000, params, seed)
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn sent(now: Time, seq: u64) -> Sent {
        Sent {
            now,
            seq,
            bytes: 1000,
            in_flight: 0,
            retransmission: false,
        }
    }

    /// An ACK for packet `seq` reporting `newly` as received for the first time.
    fn ack<'a>(now: Time, seq: u64, rtt: Duration, newly: &'a [u64], highest: u64) -> Ack<'a> {
        Ack {
            now,
            seq,
            rtt: Some(rtt),
            newly_acked: newly,
            newly_acked_bytes: 1000 * newly.len() as u64,
            highest_acked: highest,
            in_flight: 0,
            delivered_bytes: 0,
            in_recovery: false,
            growth_packets: newly.len() as f64,
        }
    }

    /// A virtual-clock path: packets leave at the controller's pacing rate, each one not
    /// `dropped` is acknowledged by its own ACK after `rtt` (the ACK's vector is implied by
    /// `newly_acked`), and round timers fire; at equal times ACKs come first, then sends, then
    /// the timer.
    struct Path {
        rtt: Duration,
        next_send: Time,
        seq: u64,
        pending: std::collections::VecDeque<(Time, u64)>,
        highest: u64,
    }

    impl Path {
        fn new(rtt: Duration) -> Path {
            Path {
                rtt,
                next_send: Duration::ZERO,
                seq: 0,
                pending: Default::default(),
                highest: 0,
            }
        }

        /// Runs until `until` (inclusive).
        fn run(&mut self, tfrc: &mut Tfrc, until: Time, dropped: impl Fn(u64) -> bool) {
            loop {
                let next_ack = self.pending.front().map_or(Duration::MAX, |&(t, _)| t);
                let timer = tfrc.next_timer().unwrap();
                let now = next_ack.min(self.next_send).min(timer);
                if now > until {
                    return;
                }
                if next_ack == now {
                    let (_, s) = self.pending.pop_front().unwrap();
                    self.highest = self.highest.max(s);
                    tfrc.on_ack(&ack(now, s, self.rtt, &[s], self.highest));
                } else if self.next_send == now {
                    tfrc.on_sent(&sent(now, self.seq));
                    if !dropped(self.seq) {
                        self.pending.push_back((now + self.rtt, self.seq));
                    }
                    self.seq += 1;
                    let rate_pps = tfrc.pacing_rate().unwrap() / 1000.0;
                    self.next_send = now + Duration::from_secs_f64(1.0 / rate_pps);
                } else {
                    tfrc.on_timer(now);
                }
            }
        }
    }

    #[test]
    fn formula_matches_the_appendix_for_given_p_r_b() {
        // Reference values computed separately (Python, the Appendix as printed).
        let cases = [
            (100.0, 0.05, 0.1, 1.0, 18.602895645832334),
            (100.0, 0.01, 0.2, 1.0, 38.161905543946844),
            (10.0, 0.001, 0.1, 1.0, 93.94328073291325), // W(p) = 37.2 >= W_max: second case
            (100.0, 0.5, 0.05, 1.2, 0.5128205128205128),
            (100.0, 0.2, 0.3, 1.5, 2.247189646721566),
        ];
        for (wm, p, r, b, expected) in cases {
            let got = padhye_rate_pps(wm, p, r, b);
            assert!(
                (got - expected).abs() < 1e-9 * expected,
                "f({wm},{p},{r},{b}) = {got}, want {expected}"
            );
            assert!((got - appendix_f(wm, p, r, b)).abs() < 1e-9 * expected);
        }
        // p = 1 is the limit 1/(G(1)·B) = 1/(64·B), continuous with p just below 1.
        assert!((padhye_rate_pps(100.0, 1.0, 0.1, 2.0) - 1.0 / 128.0).abs() < 1e-12);
        let near = padhye_rate_pps(100.0, 1.0 - 1e-9, 0.1, 2.0);
        assert!((near - 1.0 / 128.0).abs() < 1e-6, "{near}");
    }

    #[test]
    fn lossy_round_sets_the_rate_from_the_formula_with_measured_p_r_b() {
        // S1, M = 3 s, r_0 = 40 packets/s: 120 packets 25 ms apart, RTT 100 ms, every packet
        // whose seq ends in 3 dropped.
        let mut tfrc = Tfrc::new(&config(&[], 1)).unwrap();
        assert_eq!(tfrc.rate_pps(), 40.0);
        Path::new(ms(100)).run(&mut tfrc, ms(3000), |seq| seq % 10 == 3);
        let round = tfrc.last_round().expect("one round ended at 3 s");
        assert_eq!(round.ended_at, ms(3000));
        // At t = 3 s the ACKs of packets sent up to 2.9 s are in: seq 0..=116, so a = 116 and
        // packets 117..=119 are still unknown (their timeout limit is 4 s away). In 0..=116 the
        // 12 packets 3, 13, ..., 113 are unknown and at or below a: lost.
        assert_eq!((round.received, round.lost), (105, 12));
        let p = 12.0 / 117.0;
        assert_eq!(round.loss_p, Some(p));
        // Equal RTT samples: SRTT = 0.1 s; RTTVAR decays from 0.05 s; B = max(1 s, ...) = 1 s.
        assert!((tfrc.rtt_estimate_s() - 0.1).abs() < 1e-12);
        assert_eq!(tfrc.base_timeout_s(), 1.0);
        let expected = appendix_f(100.0, p, 0.1, 1.0);
        assert!(
            (tfrc.rate_pps() - expected).abs() < 1e-9 * expected,
            "{} vs {expected}",
            tfrc.rate_pps()
        );
        assert_eq!(tfrc.pacing_rate(), Some(tfrc.rate_pps() * 1000.0));
        assert_eq!(tfrc.cwnd(), f64::INFINITY);
        // 117..=119 carried over: 117 is the next round's j.
        assert_eq!(tfrc.status_of(117), Some(ReceivedStatus::Unknown));
        assert_eq!(
            tfrc.status_of(116),
            None,
            "resolved packets before j leave the log"
        );
    }

    #[test]
    fn loss_free_round_doubles_the_rate() {
        let mut tfrc = Tfrc::new(&config(&[("m", 2.0), ("r0", 50.0)], 1)).unwrap();
        let mut path = Path::new(ms(40));
        path.run(&mut tfrc, ms(2000), |_| false);
        let round = tfrc.last_round().unwrap();
        assert_eq!(round.lost, 0);
        assert_eq!(round.received, 99, "packets sent up to 1.96 s"); // 50/s, 20 ms apart
        assert_eq!(tfrc.rate_pps(), 100.0);
        path.run(&mut tfrc, ms(4000), |_| false);
        // 99 (sent at 1.98 s), 100 (2.0 s) and 101 (2.02 s, spaced at the old rate), then every
        // 10 ms from 2.03 s to 3.96 s, whose ACK arrives at the round end.
        assert_eq!(tfrc.last_round().unwrap().received, 3 + 194);
        assert_eq!(tfrc.rate_pps(), 200.0);
        // A single loss in the third round: the formula takes over.
        path.run(&mut tfrc, ms(6000), |seq| seq == 350);
        let round = tfrc.last_round().unwrap();
        assert_eq!(round.lost, 1);
        let p = round.loss_p.unwrap();
        assert_eq!(p, 1.0 / (round.received + 1) as f64);
        let expected = appendix_f(100.0, p, tfrc.rtt_estimate_s(), 1.0);
        assert!((tfrc.rate_pps() - expected).abs() < 1e-9 * expected);
    }

    #[test]
    fn loss_marking_rules_at_the_round_end() {
        // B = 1 s (no RTT sample yet). Round end at M = 3 s.
        let mut tfrc = Tfrc::new(&config(&[], 1)).unwrap();
        let r = ms(100);
        // 0 received; 1 never acknowledged, sent at 0.1 s: timeout limit 1.1 s < 3 s -> lost
        // although beyond a; 2 received (a = 2 after it); 3 unknown below a... see below.
        tfrc.on_sent(&sent(ms(0), 0));
        tfrc.on_sent(&sent(ms(1500), 1));
        tfrc.on_sent(&sent(ms(2500), 2));
        tfrc.on_sent(&sent(ms(2600), 3));
        tfrc.on_sent(&sent(ms(2700), 4));
        tfrc.on_sent(&sent(ms(2800), 5));
        tfrc.on_ack(&ack(ms(100), 0, r, &[0], 0));
        // Packet 3 is acknowledged: 1 and 2 (at or below a = 3, unknown) are lost even though
        // their timeout limits (2.5 s + ~0.4 s, 3.5 s) have not passed, 4 and 5 are beyond a and
        // within their timeout limits: unknown.
        tfrc.on_ack(&ack(ms(2700), 3, r, &[3], 3));
        assert_eq!(tfrc.status_of(1), Some(ReceivedStatus::Unknown));
        tfrc.on_timer(ms(3000));
        assert_eq!(tfrc.status_of(0), None);
        let round = tfrc.last_round().unwrap();
        assert_eq!((round.received, round.lost), (2, 2));
        assert_eq!(round.loss_p, Some(0.5));
        assert_eq!(tfrc.status_of(4), Some(ReceivedStatus::Unknown));
        assert_eq!(tfrc.status_of(5), Some(ReceivedStatus::Unknown));

        // Next round: 4 is reported received by a later ACK's vector (the ACK of 6), 5 never:
        // it is at or below a when the round ends, so lost; 7 was sent but its timeout limit
        // passes before the round ends and it is beyond a: lost by the timeout rule.
        tfrc.on_sent(&sent(ms(3100), 6));
        tfrc.on_sent(&sent(ms(3200), 7));
        tfrc.on_ack(&ack(ms(3300), 6, r, &[4, 6], 6));
        let end = tfrc.next_timer().unwrap();
        assert_eq!(end, ms(6000));
        tfrc.on_timer(end);
        let round = tfrc.last_round().unwrap();
        assert_eq!(
            (round.received, round.lost),
            (2, 2),
            "4, 6 received; 5, 7 lost"
        );
    }

    #[test]
    fn blackout_reads_as_p_one_and_limits_the_rate() {
        let mut tfrc = Tfrc::new(&config(&[], 1)).unwrap();
        Path::new(ms(100)).run(&mut tfrc, ms(3000), |_| true);
        let round = tfrc.last_round().unwrap();
        assert_eq!(round.received, 0);
        assert!(round.lost > 70, "{round:?}"); // those sent before 2 s timed out
        assert_eq!(round.loss_p, Some(1.0));
        assert!((tfrc.rate_pps() - 1.0 / 64.0).abs() < 1e-12);
    }

    #[test]
    fn s2_rounds_last_k_times_the_rtt() {
        let mut tfrc = Tfrc::new(&config(&[("strategy", 2.0), ("k", 20.0)], 1)).unwrap();
        // Before any RTT sample, R is the initial RTO (1 s): the first round is 20 s.
        assert_eq!(tfrc.next_timer(), Some(ms(20_000)));
        Path::new(ms(150)).run(&mut tfrc, ms(20_000), |_| false);
        let round = tfrc.last_round().unwrap();
        assert!(
            (round.next_round_len.as_secs_f64() - 20.0 * 0.15).abs() < 1e-9,
            "{round:?}"
        );
        assert_eq!(tfrc.next_timer(), Some(ms(20_000) + round.next_round_len));
    }

    #[test]
    fn s3_rounds_are_a_constant_plus_a_seeded_uniform_draw() {
        let lengths = |seed: u64| -> Vec<f64> {
            let params = [("strategy", 3.0), ("s3_constant", 0.3), ("s3_random", 5.4)];
            let mut tfrc = Tfrc::new(&config(&params, seed)).unwrap();
            let mut out = vec![tfrc.current_round_len().as_secs_f64()];
            for _ in 0..199 {
                let end = tfrc.next_timer().unwrap();
                tfrc.on_timer(end);
                out.push(tfrc.current_round_len().as_secs_f64());
            }
            out
        };
        let a = lengths(7);
        assert_eq!(a, lengths(7), "the same seed gives the same rounds");
        assert_ne!(a, lengths(8));
        assert!(a.iter().all(|&l| (0.3..0.3 + 5.4).contains(&l)));
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        assert!((mean - 3.0).abs() < 0.4, "mean {mean}"); // 0.3 + 5.4/2
        let (min, max) = a
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), &l| (lo.min(l), hi.max(l)));
        assert!(min < 0.8 && max > 5.2, "spread {min}..{max}");
    }

    #[test]
    fn rounds_without_any_resolved_packet_keep_the_rate() {
        let mut tfrc = Tfrc::new(&config(&[], 1)).unwrap();
        tfrc.on_timer(ms(3000));
        assert_eq!(tfrc.rate_pps(), 40.0);
    }

    #[test]
    fn rounds_empty_for_want_of_rate_double_as_the_seed_says() {
        // Seed 004 §II-B: y_i = 0 doubles the rate, also when r_i·M < 1 left the round empty.
        // M = 1 s, r_0 = 0.1 packets/s (as after a heavy loss round), RTT 100 ms.
        let mut tfrc = Tfrc::new(&config(&[("m", 1.0), ("r0", 0.1)], 1)).unwrap();
        let r = ms(100);
        tfrc.on_sent(&sent(ms(0), 0));
        tfrc.on_ack(&ack(ms(100), 0, r, &[0], 0));
        tfrc.on_timer(ms(1000));
        assert_eq!(tfrc.rate_pps(), 0.2, "one packet received: doubled");
        tfrc.on_timer(ms(2000));
        assert_eq!(
            tfrc.rate_pps(),
            0.4,
            "empty round at 0.2 packets per round: doubled"
        );
        // A packet still unknown at the round end (timeout limit 2.5 s + B = 1 s): no
        // evidence either way, the rate stays.
        tfrc.on_sent(&sent(ms(2500), 1));
        tfrc.on_timer(ms(3000));
        assert_eq!(tfrc.rate_pps(), 0.4);
        tfrc.on_ack(&ack(ms(3200), 1, r, &[1], 1));
        tfrc.on_timer(ms(4000));
        assert_eq!(tfrc.rate_pps(), 0.8);
        tfrc.on_timer(ms(5000));
        assert_eq!(tfrc.rate_pps(), 1.6);
        // At 1.6 packets per round an empty round means the application sent nothing: an
        // idle sender does not double its rate away.
        tfrc.on_timer(ms(6000));
        tfrc.on_timer(ms(7000));
        assert_eq!(tfrc.rate_pps(), 1.6);
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        let err = |params: &[(&str, f64)]| Tfrc::new(&config(params, 1)).err().unwrap().0;
        assert!(err(&[("strategy", 4.0)]).contains("strategy"));
        assert!(err(&[("strategy", 1.5)]).contains("strategy"));
        assert!(err(&[("m", 0.0)]).contains("params.m"));
        assert!(err(&[("r0", -1.0)]).contains("r0"));
        assert!(err(&[("w_max", 0.5)]).contains("w_max"));
        assert!(err(&[("bogus", 1.0)]).contains("bogus"));
    }
}
