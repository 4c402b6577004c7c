//! Shared by the Westwood controllers of seed 003 (westwood, paced_westwood,
//! alpha_paced_westwood), as agents/kernel/bpf/westwood_common.h is for the BPF versions: the
//! bandwidth share estimate BSE, Westwood's loss response, Reno's window growth between losses,
//! and the slow-start pacing of the paced variants.
//!
//! BSE (seed 003 §III-A: "the bandwidth is estimated by properly low-pass filtering the rate of
//! returning acknowledgments"). The seed gives no constants, so this is the Westwood+ estimator
//! of Linux's tcp_westwood.c, as in the BPF version: one sample per window of at least
//! max(SRTT, bse_sample_min) seconds, sample = bytes delivered in the window / window length,
//! filtered by two cascaded EWMAs with gain bse_gain (7/8):
//!     bw_ns <- g·bw_ns + (1-g)·sample,   BSE <- g·BSE + (1-g)·bw_ns,
//! and the first sample initializes both. The first window opens at the first ACK. "Delivered"
//! is `Ack::delivered_bytes` (cumulatively or selectively acknowledged), so duplicate ACKs that
//! report data count as delivered, as Westwood's ACK accounting intends. SRTT is the kernel's
//! (gain 1/8, first sample taken as is).
//!
//! Loss response (seed 003 §III-A, RTTmin the smallest RTT sample of the connection):
//! ssthresh = max(BSE·RTTmin/MSS, 2) after a congestion event and after a timeout (Reno's
//! halving, max(cwnd/2, 2), while no estimate exists); congestion event: cwnd = min(cwnd,
//! ssthresh); timeout: cwnd = 1. The transport's NewReno recovery runs between the event and its
//! end (the kernel's PRR has no counterpart here, so the BPF version's correction at the end of
//! recovery is not needed: the cut is made once, at the event).
//!
//! Pacing (paced variants, §III-C): in slow start (cwnd < ssthresh, not in fast recovery) the
//! sender is paced at RE = alpha·BSE (eq. 4-5, alpha = 1 for Paced Westwood); outside slow
//! start it is not paced. Before the first BSE sample RE is Paced NewReno's cwnd·MSS/SRTT
//! (eq. 3, not scaled by alpha); without an RTT sample the sender is not paced.

use std::time::Duration;

use crate::params::Params;
use crate::window::{acked_packets, micros, Window, LOSS_WINDOW, MIN_CWND_AFTER_DECREASE};
use crate::{Ack, ConfigError, Time};

/// The estimator's tunables (schemas/algorithms.py `_WESTWOOD_BSE`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BseParams {
    /// Weight of the old estimate in each filter stage (7/8).
    pub gain: f64,
    /// Shortest sampling window.
    pub sample_min: Duration,
}

impl BseParams {
    pub fn from_params(p: &mut Params) -> Result<BseParams, ConfigError> {
        let gain = p.real("bse_gain", 0.875, 0.0, 1.0)?;
        let sample_min_s = p.real("bse_sample_min", 0.05, 0.001, 10.0)?;
        Ok(BseParams {
            gain,
            sample_min: Duration::from_secs_f64(sample_min_s),
        })
    }
}

/// The bandwidth share estimate and the RTT statistics it needs.
#[derive(Clone, Debug)]
pub struct BseEstimator {
    params: BseParams,
    /// Bytes per second; 0 until the first sample.
    bse_bps: f64,
    bw_ns_bps: f64,
    win_start: Option<Time>,
    win_delivered: u64,
    rtt_min: Option<Duration>,
    srtt: Option<Duration>,
}

impl BseEstimator {
    pub fn new(params: BseParams) -> BseEstimator {
        BseEstimator {
            params,
            bse_bps: 0.0,
            bw_ns_bps: 0.0,
            win_start: None,
            win_delivered: 0,
            rtt_min: None,
            srtt: None,
        }
    }

    /// BSE in bytes per second, None before the first sample.
    pub fn bse(&self) -> Option<f64> {
        (self.bse_bps > 0.0).then_some(self.bse_bps)
    }

    pub fn rtt_min(&self) -> Option<Duration> {
        self.rtt_min
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// Per ACK: RTT statistics, and one BSE sample when the sampling window has closed.
    pub fn on_ack(&mut self, ack: &Ack) {
        if let Some(rtt) = ack.rtt {
            self.rtt_min = Some(self.rtt_min.map_or(rtt, |m| m.min(rtt)));
            self.srtt = Some(match self.srtt {
                None => rtt,
                Some(srtt) => srtt.mul_f64(0.875) + rtt.mul_f64(0.125),
            });
        }
        let Some(win_start) = self.win_start else {
            // Measure from the first ACK of data, as the BPF version does.
            self.win_start = Some(ack.now);
            self.win_delivered = ack.delivered_bytes;
            return;
        };
        let Some(srtt) = self.srtt else {
            return;
        };
        let window = srtt.max(self.params.sample_min);
        let elapsed = ack.now.saturating_sub(win_start);
        if elapsed <= window {
            return;
        }
        let bytes = ack.delivered_bytes.saturating_sub(self.win_delivered) as f64;
        let sample = bytes / elapsed.as_secs_f64();
        if self.bse_bps == 0.0 && self.bw_ns_bps == 0.0 {
            self.bw_ns_bps = sample;
            self.bse_bps = sample;
        } else {
            let g = self.params.gain;
            self.bw_ns_bps = g * self.bw_ns_bps + (1.0 - g) * sample;
            self.bse_bps = g * self.bse_bps + (1.0 - g) * self.bw_ns_bps;
        }
        self.win_start = Some(ack.now);
        self.win_delivered = ack.delivered_bytes;
    }

    /// Westwood's ssthresh after a congestion event or timeout: max(BSE·RTTmin/MSS, 2), or
    /// Reno's max(cwnd/2, 2) while no estimate exists.
    pub fn ssthresh_after_loss(&self, cwnd: f64, mss: u32) -> f64 {
        match (self.bse(), self.rtt_min) {
            (Some(bse), Some(rtt_min)) => {
                (bse * rtt_min.as_secs_f64() / f64::from(mss.max(1))).max(MIN_CWND_AFTER_DECREASE)
            }
            _ => (cwnd / 2.0).max(MIN_CWND_AFTER_DECREASE),
        }
    }

    /// The window's own rate cwnd·MSS/SRTT in bytes per second (seed 003 eq. 3).
    pub fn window_rate(&self, cwnd: f64, mss: u32) -> Option<f64> {
        let srtt = self.srtt?.as_secs_f64();
        (srtt > 0.0).then(|| cwnd * f64::from(mss) / srtt)
    }
}

/// Westwood's window: Reno's growth, Westwood's loss response, and the pacing of the paced
/// variants (`alpha` None: never paced).
pub struct WestwoodCore {
    pub estimator: BseEstimator,
    mss: u32,
    window: Window,
    in_recovery: bool,
    alpha: Option<f64>,
}

impl WestwoodCore {
    pub fn new(params: BseParams, mss: u32, alpha: Option<f64>) -> Self {
        WestwoodCore {
            estimator: BseEstimator::new(params),
            mss,
            window: Window::new(),
            in_recovery: false,
            alpha,
        }
    }

    pub fn cwnd(&self) -> f64 {
        self.window.cwnd
    }

    pub fn set_initial_window(&mut self, packets: f64) {
        self.window.set_initial(packets);
    }

    pub fn set_max_window(&mut self, packets: f64) {
        self.window.set_max(packets);
    }

    pub fn ssthresh(&self) -> f64 {
        self.window.ssthresh
    }

    /// Slow start and not in fast recovery: when the paced variants pace.
    pub fn in_slow_start(&self) -> bool {
        self.window.in_slow_start() && !self.in_recovery
    }

    pub fn on_ack(&mut self, ack: &Ack) {
        self.estimator.on_ack(ack);
        self.in_recovery = ack.in_recovery;
        if !ack.in_recovery {
            self.window.reno_grow(acked_packets(ack));
        }
    }

    pub fn on_congestion_event(&mut self) {
        let w = &mut self.window;
        w.ssthresh = self.estimator.ssthresh_after_loss(w.cwnd, self.mss);
        w.cwnd = w.cwnd.min(w.ssthresh);
        self.in_recovery = true;
    }

    pub fn on_timeout(&mut self) {
        let w = &mut self.window;
        w.ssthresh = self.estimator.ssthresh_after_loss(w.cwnd, self.mss);
        w.cwnd = LOSS_WINDOW;
        self.in_recovery = false;
    }

    /// RE = alpha·BSE in slow start (cwnd·MSS/SRTT before the first BSE sample), else None.
    pub fn pacing_rate(&self) -> Option<f64> {
        let alpha = self.alpha?;
        if !self.in_slow_start() {
            return None;
        }
        match self.estimator.bse() {
            Some(bse) => Some(alpha * bse),
            None => self.estimator.window_rate(self.window.cwnd, self.mss),
        }
    }

    /// bse_bps, rtt_min_us (and pacing_rate_bps for the paced variants), as the BPF traces.
    pub fn state_values(&self, out: &mut [f64]) {
        out[0] = self.estimator.bse().unwrap_or(0.0) * 8.0;
        out[1] = self
            .estimator
            .rtt_min()
            .map_or(0.0, |r| micros(r.as_secs_f64()));
        if out.len() > 2 {
            out[2] = self.pacing_rate().unwrap_or(0.0) * 8.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    fn params() -> BseParams {
        BseParams {
            gain: 0.875,
            sample_min: Duration::from_millis(50),
        }
    }

    fn ack<'a>(
        now: Time,
        rtt: Duration,
        newly: &'a [u64],
        delivered: u64,
        recovery: bool,
    ) -> Ack<'a> {
        Ack {
            now,
            seq: newly.last().copied().unwrap_or(0),
            rtt: Some(rtt),
            newly_acked: newly,
            newly_acked_bytes: newly.len() as u64 * u64::from(MSS),
            highest_acked: newly.last().copied().unwrap_or(0),
            in_flight: 0,
            delivered_bytes: delivered,
            in_recovery: recovery,
            growth_packets: newly.len() as f64,
        }
    }

    /// One ACK per packet every `gap`, RTT `rtt`, from `start` for `count` packets.
    fn ack_stream(
        core: &mut WestwoodCore,
        start: Time,
        gap: Duration,
        rtt: Duration,
        first_seq: u64,
        count: u64,
    ) {
        for i in 0..count {
            let seq = first_seq + i;
            core.on_ack(&ack(
                start + gap * i as u32,
                rtt,
                &[seq],
                (seq + 1) * u64::from(MSS),
                false,
            ));
        }
    }

    #[test]
    fn bse_is_the_filtered_ack_rate() {
        let mut e = BseEstimator::new(params());
        let rtt = Duration::from_millis(20);
        // 1 packet per ms = 1e6 bytes/s. Window = max(SRTT 20 ms, 50 ms): the first sample is
        // taken at the first ACK more than 50 ms after the first one.
        for i in 0..=50u64 {
            e.on_ack(&ack(
                Duration::from_millis(i),
                rtt,
                &[i],
                (i + 1) * 1000,
                false,
            ));
        }
        assert_eq!(e.bse(), None);
        e.on_ack(&ack(Duration::from_millis(51), rtt, &[51], 52_000, false));
        assert!((e.bse().unwrap() - 1e6).abs() < 1e-6, "{:?}", e.bse());
        // The rate halves: the two cascaded filters move 1/8 each per sample.
        let mut t = 51u64;
        let mut delivered = 52_000u64;
        let mut bw_ns = 1e6;
        let mut bse = 1e6;
        for _ in 0..3 {
            for _ in 0..26 {
                t += 2;
                delivered += 1000;
                e.on_ack(&ack(Duration::from_millis(t), rtt, &[0], delivered, false));
            }
            // 26 packets in 52 ms: the window closed at the 26th ACK (52 ms > 50 ms).
            let sample = 26_000.0 / 0.052;
            bw_ns = 0.875 * bw_ns + 0.125 * sample;
            bse = 0.875 * bse + 0.125 * bw_ns;
            assert!(
                (e.bse().unwrap() - bse).abs() < 1e-6,
                "{:?} vs {bse}",
                e.bse()
            );
        }
        assert_eq!(e.rtt_min(), Some(rtt));
    }

    #[test]
    fn loss_sets_ssthresh_from_bse_and_rtt_min() {
        let mut core = WestwoodCore::new(params(), MSS, None);
        // Before any estimate: Reno's halving.
        ack_stream(
            &mut core,
            Duration::ZERO,
            Duration::from_millis(1),
            Duration::from_millis(40),
            0,
            20,
        );
        let cwnd = core.cwnd();
        assert_eq!(cwnd, 21.0, "slow start: one packet per packet acknowledged");
        core.on_congestion_event();
        assert_eq!(core.ssthresh(), 10.5);
        assert_eq!(core.cwnd(), 10.5);

        // 2 packets per ms (2e6 bytes/s) with RTTmin 30 ms: ssthresh = 2e6·0.03/1000 = 60.
        let mut core = WestwoodCore::new(params(), MSS, None);
        for i in 0..400u64 {
            let rtt = Duration::from_millis(if i == 7 { 30 } else { 45 });
            let now = Duration::from_micros(500 * i);
            core.on_ack(&ack(now, rtt, &[i], (i + 1) * 1000, false));
        }
        let bse = core.estimator.bse().unwrap();
        assert!((bse - 2e6).abs() < 1e-3 * 2e6, "{bse}");
        assert_eq!(core.estimator.rtt_min(), Some(Duration::from_millis(30)));
        let cwnd_before = core.cwnd();
        assert!(cwnd_before > 60.0);
        core.on_congestion_event();
        let expected = bse * 0.030 / 1000.0;
        assert!(
            (core.ssthresh() - expected).abs() < 1e-9,
            "{} vs {expected}",
            core.ssthresh()
        );
        assert_eq!(core.cwnd(), core.ssthresh(), "cwnd = min(cwnd, ssthresh)");
        // A timeout: same ssthresh rule, cwnd = 1.
        core.on_timeout();
        assert!((core.ssthresh() - expected).abs() < 1e-9);
        assert_eq!(core.cwnd(), 1.0);
        // A congestion event with the window already below the estimate keeps the window.
        core.on_congestion_event();
        assert_eq!(core.cwnd(), 1.0);
        // The floor of 2 packets.
        let mut small = WestwoodCore::new(params(), 100_000, None);
        for i in 0..200u64 {
            small.on_ack(&ack(
                Duration::from_millis(i),
                Duration::from_millis(1),
                &[i],
                (i + 1) * 100,
                false,
            ));
        }
        small.on_congestion_event();
        assert_eq!(small.ssthresh(), 2.0);
    }

    #[test]
    fn pacing_follows_slow_start_alpha_and_recovery() {
        let rtt = Duration::from_millis(40);
        let mut core = WestwoodCore::new(params(), MSS, Some(2.0));
        assert_eq!(core.pacing_rate(), None, "no RTT sample yet");
        core.on_ack(&ack(Duration::ZERO, rtt, &[0], 1000, false));
        // No BSE yet: cwnd·MSS/SRTT = 2·1000/0.04, not scaled by alpha.
        assert_eq!(core.pacing_rate(), Some(2.0 * 1000.0 / 0.040));
        ack_stream(
            &mut core,
            Duration::from_millis(1),
            Duration::from_millis(1),
            rtt,
            1,
            100,
        );
        let bse = core.estimator.bse().unwrap();
        assert!(core.in_slow_start());
        assert_eq!(core.pacing_rate(), Some(2.0 * bse));
        // Fast recovery: not paced; congestion avoidance afterwards: not paced.
        core.on_congestion_event();
        assert_eq!(core.pacing_rate(), None);
        core.on_ack(&ack(Duration::from_millis(120), rtt, &[], 101_000, true));
        assert_eq!(core.pacing_rate(), None);
        core.on_ack(&ack(
            Duration::from_millis(121),
            rtt,
            &[101],
            102_000,
            false,
        ));
        assert!(!core.in_slow_start());
        assert_eq!(core.pacing_rate(), None);
        // A timeout puts it back in slow start: paced again at alpha·BSE.
        core.on_timeout();
        assert_eq!(
            core.pacing_rate(),
            Some(2.0 * core.estimator.bse().unwrap())
        );
        // Unpaced Westwood never paces.
        let mut plain = WestwoodCore::new(params(), MSS, None);
        ack_stream(
            &mut plain,
            Duration::ZERO,
            Duration::from_millis(1),
            rtt,
            0,
            100,
        );
        assert_eq!(plain.pacing_rate(), None);
    }
}
