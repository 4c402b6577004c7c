//! The sender state machine: scoreboard, loss detection, retransmission policy per the
//! controller's `recovery()`, RTO (RFC 6298), pacing. No I/O and no clock: the caller passes
//! `now` (time since the flow started) to every call, asks `poll_send` what to transmit, hands
//! it every ACK, and calls `on_timer` when `timer_deadline` has passed.
//!
//! Loss detection is SACK-based ("FACK"): a packet is lost once a packet at least
//! `DUPTHRESH` (3) sequence numbers above it has been acknowledged, which is what three
//! duplicate ACKs say when each ACK reports one packet. A retransmission is not declared lost
//! that way (its later neighbours were sent before it): the RTO recovers a lost retransmission.
//!
//! Recovery semantics (one `on_congestion_event` per episode; `recover` = the highest sequence
//! number sent when the episode began):
//! - Tahoe: go back N: every packet not yet acknowledged is queued for retransmission and taken
//!   out of the pipe, so the window (slow start from one) clocks out the retransmissions; the
//!   controller sees `in_recovery == false` (its window grows). No new event until the
//!   cumulative ACK passes `recover`.
//! - Reno: the first lost packet is retransmitted at once (fast retransmit, regardless of the
//!   window); fast recovery ends at the first ACK that advances the cumulative point. Another
//!   hole found then starts a new episode (another window reduction): Reno's behaviour with
//!   several losses in one window (Fall & Floyd 1996).
//! - NewReno (RFC 6582): as Reno, but the episode lasts until the cumulative ACK passes
//!   `recover`; each partial ACK retransmits the packet at the new cumulative point at once.
//! - None (TFRC): nothing is retransmitted; lost packets are only counted. An episode (for the
//!   one `on_congestion_event` per window) ends once a packet sent after it began is acked.
//!
//! During fast recovery new packets are sent while the pipe (packets sent, not acknowledged
//! and not presumed lost: RFC 6675's "pipe") plus the holes not yet retransmitted is below
//! `cwnd`, which is what Reno's window inflation (one packet per duplicate ACK) amounts to. An RTO (RFC 6298 (5.4)-(5.7)) backs the timer off, tells the controller
//! (`on_timeout`) and goes back N as Tahoe does.

use crate::defaults;
use crate::rtt::RttEstimator;
use crate::wire::AckPacket;
use ccbench_cc::{Ack, CongestionEvent, Controller, Feedback, Recovery, Sent};
use std::collections::VecDeque;
use std::time::Duration;

/// Packets acknowledged above a hole before it is declared lost (RFC 5681 / RFC 6675).
pub const DUPTHRESH: u64 = 3;

#[derive(Clone, Debug, PartialEq)]
pub struct SenderConfig {
    /// Payload bytes per packet.
    pub mss: u32,
    pub min_rto: Duration,
    pub rto_granularity: Duration,
    /// Packets the controller's window starts with (`Controller::set_initial_window`).
    pub initial_window: u32,
    /// The receiver's advertised window in packets (None: unlimited): a new packet is sent
    /// only while fewer than this many are outstanding above the cumulative ACK point, as a
    /// TCP sender never sends past snd_una + rwnd. Retransmissions are not held back. The
    /// controller's window does not grow past it either (`Controller::set_max_window`).
    pub receive_window: Option<u32>,
    /// Grow the controller's window per ACK that advances the cumulative point (ns-2's TCP)
    /// rather than per packet acknowledged (`ccbench_cc::Ack::growth_packets`).
    pub window_growth_per_ack: bool,
}

/// The spec's `transport` defaults (`crate::defaults`, generated from schemas/spec.py).
impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            mss: defaults::MSS,
            min_rto: defaults::MIN_RTO,
            rto_granularity: defaults::RTO_GRANULARITY,
            initial_window: defaults::INITIAL_WINDOW,
            receive_window: defaults::RECEIVE_WINDOW,
            window_growth_per_ack: defaults::WINDOW_GROWTH_PER_ACK,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    InFlight,
    Acked,
    /// Presumed lost, to be retransmitted (reliable controllers).
    Lost,
    /// Presumed lost, never retransmitted (`Recovery::None`).
    Abandoned,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    bytes: u32,
    sent_at: Duration,
    state: State,
    retransmitted: bool,
    /// In the retransmission queue (or the priority slot).
    queued: bool,
}

/// One packet to put on the wire now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub seq: u64,
    pub bytes: u32,
    /// The timestamp the packet carries (µs since the flow started).
    pub sent_us: u64,
    pub retransmission: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    Send(Transmit),
    /// Something is ready but pacing holds it until this time.
    PaceUntil(Duration),
    /// Nothing to send: the window is full, or no data (wait for an ACK, a timer or the app).
    Blocked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossKind {
    Congestion,
    Timeout,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct AckOutcome {
    /// False when the ACK was ignored (it acknowledged packets never sent).
    pub valid: bool,
    pub rtt: Option<Duration>,
    pub newly_acked: u32,
    /// A congestion event began with this ACK.
    pub loss: Option<LossKind>,
    /// With `loss`: the first packet the event presumes lost.
    pub first_lost: Option<u64>,
    /// What the controller's `on_ack` was told (`ccbench_cc::Ack::in_recovery`).
    pub in_recovery: bool,
}

/// Counters, cumulative since the flow started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Payload bytes put on the wire, retransmissions included (as tcpi_bytes_sent).
    pub bytes_sent: u64,
    /// Distinct payload bytes acknowledged (as tcpi_bytes_acked).
    pub bytes_acked: u64,
    /// Distinct packets / payload bytes handed to the network (sequence numbers used).
    pub new_pkts: u64,
    pub new_bytes: u64,
    pub retransmits: u64,
    /// Packets presumed lost (duplicate ACKs, partial ACKs, timeouts), cumulative.
    pub lost_pkts: u64,
    pub congestion_events: u64,
    pub timeouts: u64,
}

#[derive(Clone, Copy, Debug)]
struct Episode {
    recover: u64,
    started: Duration,
    /// Reno/NewReno fast recovery (window growth suspended throughout); otherwise a Tahoe or
    /// timeout episode, in which ACKs that advance the cumulative point open the window.
    fast: bool,
}

pub struct Sender {
    config: SenderConfig,
    cc: Box<dyn Controller>,
    recovery: Recovery,
    rtt: RttEstimator,
    /// Sequence number of `slots[0]`; every packet below it is resolved.
    base: u64,
    slots: VecDeque<Slot>,
    next_seq: u64,
    /// Packets in the pipe (sent, not acknowledged, not presumed lost).
    pipe: u32,
    cum_ack: u64,
    highest_acked: Option<u64>,
    fack_cursor: u64,
    /// Lost packets not yet queued for retransmission (Reno/NewReno repair one per event).
    unrepaired: u32,
    /// ACKs since the cumulative point last advanced that acknowledged something new.
    dupacks: u64,
    rtx_queue: VecDeque<u64>,
    /// Fast retransmission, sent before anything else and regardless of the window.
    priority_rtx: Option<u64>,
    episode: Option<Episode>,
    rto_deadline: Option<Duration>,
    next_send_time: Duration,
    /// The pacing slot and size of the last paced packet (its gap is re-read at the current
    /// rate, see `poll_send`).
    last_paced: Option<(Duration, u32)>,
    /// The last poll found a packet held by pacing (`PaceUntil`) rather than none (`Blocked`).
    waiting_for_slot: bool,
    stats: Stats,
    newly_acked: Vec<u64>,
}

fn us(t: Duration) -> u64 {
    t.as_micros() as u64
}

impl Sender {
    pub fn new(config: SenderConfig, mut cc: Box<dyn Controller>) -> Sender {
        cc.set_initial_window(f64::from(config.initial_window));
        if let Some(packets) = config.receive_window {
            cc.set_max_window(f64::from(packets));
        }
        let recovery = cc.recovery();
        let rtt = RttEstimator::new(config.min_rto, config.rto_granularity);
        Sender {
            config,
            cc,
            recovery,
            rtt,
            base: 0,
            slots: VecDeque::new(),
            next_seq: 0,
            pipe: 0,
            cum_ack: 0,
            highest_acked: None,
            fack_cursor: 0,
            unrepaired: 0,
            dupacks: 0,
            rtx_queue: VecDeque::new(),
            priority_rtx: None,
            episode: None,
            rto_deadline: None,
            next_send_time: Duration::ZERO,
            last_paced: None,
            waiting_for_slot: false,
            stats: Stats::default(),
            newly_acked: Vec::new(),
        }
    }

    pub fn controller(&self) -> &dyn Controller {
        self.cc.as_ref()
    }
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }
    /// An RTT sample from outside the data path (the handshake), before any data is sent.
    pub fn seed_rtt(&mut self, rtt: Duration) {
        self.rtt.on_sample(rtt);
    }
    pub fn stats(&self) -> Stats {
        self.stats
    }
    pub fn in_flight(&self) -> u32 {
        self.pipe
    }
    pub fn reliable(&self) -> bool {
        self.recovery != Recovery::None
    }
    pub fn in_fast_recovery(&self) -> bool {
        self.episode.is_some_and(|e| e.fast)
    }
    /// Every packet below this sequence number is acknowledged (or, `Recovery::None`, given
    /// up): the sender's cumulative point.
    pub fn resolved_below(&self) -> u64 {
        self.base
    }

    /// Everything sent has been acknowledged (reliable) or resolved (`Recovery::None`).
    pub fn all_resolved(&self) -> bool {
        if self.reliable() {
            self.slots.is_empty()
        } else {
            self.pipe == 0
        }
    }

    /// The earliest time `on_timer` has work: the RTO or the controller's own timer.
    pub fn timer_deadline(&self) -> Option<Duration> {
        match (self.rto_deadline, self.cc.next_timer()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn slot(&self, seq: u64) -> Option<&Slot> {
        seq.checked_sub(self.base)
            .and_then(|i| self.slots.get(i as usize))
    }

    fn slot_mut(&mut self, seq: u64) -> Option<&mut Slot> {
        seq.checked_sub(self.base)
            .and_then(|i| self.slots.get_mut(i as usize))
    }

    /// What to transmit now. `app_total` is the total bytes the application has made
    /// available since the flow started (new packets never go beyond it).
    pub fn poll_send(&mut self, now: Duration, app_total: u64) -> Poll {
        let Some((seq, bytes, retransmission)) = self.candidate(app_total) else {
            self.waiting_for_slot = false;
            return Poll::Blocked;
        };
        let rate = self.cc.pacing_rate().filter(|r| r.is_finite() && *r > 0.0);
        if let (Some(rate), Some((slot, sent_bytes))) = (rate, self.last_paced) {
            // A rate that rose since the last packet shortens the gap that packet set: a rate
            // controller's new rate applies at once (TFRC sends round i at r_i, seed 004
            // §II-B), not after a gap computed at the old rate (10 s after a cut to 0.1
            // packets/s). A rate that fell keeps the earlier slot. A slot moved into the past
            // is now: the new gap counts from this packet (no catch-up burst).
            let due = slot + Duration::from_secs_f64(sent_bytes as f64 / rate);
            if due < self.next_send_time && now < self.next_send_time {
                self.next_send_time = due.max(now);
            }
        }
        if rate.is_some() && now < self.next_send_time {
            self.waiting_for_slot = true;
            return Poll::PaceUntil(self.next_send_time);
        }
        if retransmission {
            if self.priority_rtx == Some(seq) {
                self.priority_rtx = None;
            } else {
                self.rtx_queue.pop_front();
            }
            let slot = self.slot_mut(seq).expect("queued packet has a slot");
            slot.state = State::InFlight;
            slot.retransmitted = true;
            slot.queued = false;
            slot.sent_at = now;
            self.stats.retransmits += 1;
        } else {
            self.slots.push_back(Slot {
                bytes,
                sent_at: now,
                state: State::InFlight,
                retransmitted: false,
                queued: false,
            });
            self.next_seq += 1;
            self.stats.new_pkts += 1;
            self.stats.new_bytes += bytes as u64;
        }
        self.pipe += 1;
        self.stats.bytes_sent += bytes as u64;
        if self.rto_deadline.is_none() && self.reliable() {
            // RFC 6298 (5.1). Recovery::None has no retransmission timer (TFRC's timeouts
            // are its own, seed 004 §II-B).
            self.rto_deadline = Some(now + self.rtt.rto());
        } else if retransmission && seq == self.cum_ack && self.reliable() {
            // Retransmitting the first unacknowledged packet restarts the timer, as Linux's
            // tcp_xmit_retransmit_queue does: a fast retransmission waits behind the same
            // queue as the data before it, and a timer still counting from the last new ACK
            // would expire first whenever RTTVAR is small (a standing queue), turning almost
            // every fast recovery into a timeout.
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        if let Some(rate) = rate {
            let gap = Duration::from_secs_f64(bytes as f64 / rate);
            // Keep the schedule when woken a little late for the slot (the average rate stays
            // exact). Start afresh after an idle period longer than one gap, and when the slot
            // passed while the sender was blocked (window full, no data): no burst of saved-up
            // credit, as Linux (the next departure counts from max(slot, now)).
            let late = now.saturating_sub(self.next_send_time);
            let start = if self.waiting_for_slot && late <= gap {
                self.next_send_time
            } else {
                now
            };
            self.next_send_time = start + gap;
            self.last_paced = Some((start, bytes));
        }
        self.cc.on_sent(&Sent {
            now,
            seq,
            bytes,
            in_flight: self.pipe,
            retransmission,
        });
        Poll::Send(Transmit {
            seq,
            bytes,
            sent_us: us(now),
            retransmission,
        })
    }

    /// The next packet: (seq, bytes, is retransmission).
    fn candidate(&mut self, app_total: u64) -> Option<(u64, u32, bool)> {
        if let Some(seq) = self.priority_rtx {
            match self.slot(seq) {
                Some(s) if s.state == State::Lost => return Some((seq, s.bytes, true)),
                _ => self.priority_rtx = None,
            }
        }
        let cwnd = self.cc.cwnd();
        let cwnd = if cwnd.is_nan() { 1.0 } else { cwnd.max(1.0) };
        // Reno and NewReno without SACK count a hole in the flight size until it is
        // retransmitted (their window inflation grows by one per duplicate ACK, i.e. per
        // packet delivered, not per packet lost); only SACK-based recovery (RFC 6675) takes
        // losses out of the pipe as soon as they are detected.
        let holes = match self.recovery {
            Recovery::Reno | Recovery::NewReno => self.unrepaired,
            Recovery::Tahoe | Recovery::None => 0,
        };
        if (self.pipe + holes) as f64 + 1.0 > cwnd + 1e-9 {
            return None;
        }
        while let Some(&seq) = self.rtx_queue.front() {
            match self.slot(seq) {
                Some(s) if s.state == State::Lost && s.queued => return Some((seq, s.bytes, true)),
                _ => {
                    self.rtx_queue.pop_front();
                }
            }
        }
        if let Some(rwnd) = self.config.receive_window {
            if self.next_seq >= self.cum_ack + u64::from(rwnd) {
                return None;
            }
        }
        let left = app_total.saturating_sub(self.stats.new_bytes);
        let bytes = left.min(self.config.mss as u64) as u32;
        (bytes > 0).then_some((self.next_seq, bytes, false))
    }

    fn mark_acked(&mut self, seq: u64) {
        let Some(i) = seq.checked_sub(self.base) else {
            return;
        };
        let Some(slot) = self.slots.get_mut(i as usize) else {
            return;
        };
        match slot.state {
            State::Acked => return,
            State::InFlight => self.pipe -= 1,
            State::Lost => {
                if !slot.queued {
                    self.unrepaired -= 1;
                }
            }
            State::Abandoned => {}
        }
        slot.state = State::Acked;
        self.stats.bytes_acked += slot.bytes as u64;
        self.newly_acked.push(seq);
    }

    /// Presume an in-flight packet lost.
    fn mark_lost(&mut self, seq: u64) -> bool {
        let reliable = self.reliable();
        let Some(slot) = self.slot_mut(seq) else {
            return false;
        };
        if slot.state != State::InFlight {
            return false;
        }
        slot.state = if reliable {
            State::Lost
        } else {
            State::Abandoned
        };
        self.pipe -= 1;
        self.stats.lost_pkts += 1;
        if reliable {
            self.unrepaired += 1;
        }
        true
    }

    fn queue_retransmission(&mut self, seq: u64, priority: bool) {
        let Some(slot) = self.slot_mut(seq) else {
            return;
        };
        if slot.state != State::Lost || slot.queued {
            return;
        }
        slot.queued = true;
        self.unrepaired -= 1;
        if priority && self.priority_rtx.is_none() {
            self.priority_rtx = Some(seq);
        } else {
            self.rtx_queue.push_back(seq);
        }
    }

    /// Go back N: every unacknowledged packet leaves the pipe and is queued, in order.
    fn go_back_n(&mut self) {
        self.rtx_queue.clear();
        self.priority_rtx = None;
        for i in 0..self.slots.len() {
            let seq = self.base + i as u64;
            let slot = &mut self.slots[i];
            match slot.state {
                State::InFlight => {
                    slot.state = State::Lost;
                    self.pipe -= 1;
                }
                State::Lost if !slot.queued => self.unrepaired -= 1,
                State::Lost => {}
                State::Acked | State::Abandoned => continue,
            }
            slot.queued = true;
            self.rtx_queue.push_back(seq);
        }
    }

    fn pop_resolved(&mut self) {
        while let Some(front) = self.slots.front() {
            let resolved = match front.state {
                State::Acked | State::Abandoned => true,
                State::InFlight | State::Lost => false,
            };
            if !resolved {
                break;
            }
            self.slots.pop_front();
            self.base += 1;
        }
    }

    fn lowest_unrepaired(&self) -> Option<u64> {
        self.slots
            .iter()
            .position(|s| s.state == State::Lost && !s.queued)
            .map(|i| self.base + i as u64)
    }

    pub fn on_ack(&mut self, now: Duration, ack: &AckPacket) -> AckOutcome {
        self.on_ack_received(now, now, ack)
    }

    /// `on_ack` for an ACK that arrived at `received` (the kernel's receive time, on the same
    /// clock) and is processed at `now`: its RTT sample ends at `received`, so the time the
    /// program took to get to it (descheduled, blocked on a write) is not counted as network
    /// delay; everything else happens at `now`.
    pub fn on_ack_received(
        &mut self,
        now: Duration,
        received: Duration,
        ack: &AckPacket,
    ) -> AckOutcome {
        if ack.echo_seq >= self.next_seq || ack.cum_ack > self.next_seq {
            return AckOutcome::default();
        }
        let pipe_before = self.pipe;
        let prev_cum = self.cum_ack;
        self.newly_acked.clear();
        // Karn: no sample from a retransmitted packet (nor one already forgotten).
        let echo_original = self.slot(ack.echo_seq).is_some_and(|s| !s.retransmitted);
        let echo_sent = Duration::from_micros(ack.echo_sent_us);
        let rtt = (echo_original && echo_sent <= received).then(|| received - echo_sent);
        if let Some(rtt) = rtt {
            self.rtt.on_sample(rtt);
        }

        if ack.cum_ack > self.cum_ack {
            for seq in self.base.max(self.cum_ack)..ack.cum_ack {
                self.mark_acked(seq);
            }
            self.cum_ack = ack.cum_ack;
        }
        self.mark_acked(ack.echo_seq);
        for i in 0..64u64 {
            let Some(seq) = ack.echo_seq.checked_sub(1 + i) else {
                break;
            };
            if seq < self.base {
                break;
            }
            if ack.sack & (1 << i) != 0 {
                self.mark_acked(seq);
            }
        }
        let highest = self
            .highest_acked
            .map_or(ack.echo_seq, |h| h.max(ack.echo_seq));
        let highest = if ack.cum_ack > 0 {
            highest.max(ack.cum_ack - 1)
        } else {
            highest
        };
        self.highest_acked = Some(highest);
        let newly_acked_bytes: u64 = self
            .newly_acked
            .iter()
            .map(|&s| self.slot(s).map_or(0, |slot| slot.bytes as u64))
            .sum();
        self.pop_resolved();

        // Loss detection (FACK).
        self.fack_cursor = self.fack_cursor.max(self.base);
        let mut first_lost = None;
        while self.fack_cursor + DUPTHRESH <= highest && self.fack_cursor < self.next_seq {
            let seq = self.fack_cursor;
            if let Some(slot) = self.slot(seq).copied() {
                if !slot.retransmitted && self.mark_lost(seq) {
                    first_lost.get_or_insert((seq, slot.sent_at));
                }
            }
            self.fack_cursor += 1;
        }

        let cum_advanced = self.cum_ack > prev_cum;
        if cum_advanced {
            self.dupacks = 0;
        } else if !self.newly_acked.is_empty() {
            self.dupacks += 1;
        }
        let episode_before = self.episode;
        let event_lost = self.update_episode(now, cum_advanced, pipe_before, first_lost);
        let loss = event_lost.map(|_| LossKind::Congestion);
        // Every ACK of an episode is "in recovery" (the ones that start and end it too), except
        // cumulative progress in a Tahoe or timeout episode, which is slow start.
        let in_recovery = match (self.recovery, episode_before) {
            (Recovery::None, _) => false,
            _ if loss.is_some() => true,
            (_, Some(episode)) => episode.fast || !cum_advanced,
            (_, None) => false,
        };

        // RFC 6298 (5.2)/(5.3): restart the timer when the cumulative point advances.
        if self.all_resolved() || !self.reliable() {
            self.rto_deadline = None;
        } else if cum_advanced {
            self.rto_deadline = Some(now + self.rtt.rto());
        }

        self.cc.on_ack(&Ack {
            now,
            seq: ack.echo_seq,
            rtt,
            newly_acked: &self.newly_acked,
            newly_acked_bytes,
            highest_acked: highest,
            in_flight: self.pipe,
            delivered_bytes: self.stats.bytes_acked,
            in_recovery,
            growth_packets: if !self.config.window_growth_per_ack {
                self.newly_acked.len() as f64
            } else if cum_advanced {
                1.0
            } else {
                0.0
            },
        });
        if let Some(feedback) = Feedback::from_wire(ack.feedback) {
            self.cc.on_feedback(now, feedback);
        }
        AckOutcome {
            valid: true,
            rtt,
            newly_acked: self.newly_acked.len() as u32,
            loss,
            first_lost: event_lost,
            in_recovery,
        }
    }

    /// Ends or continues the current episode, or starts one: then returns the first packet it
    /// presumes lost. `first_lost`: the first packet this ACK marked lost, and its send time.
    fn update_episode(
        &mut self,
        now: Duration,
        cum_advanced: bool,
        pipe_before: u32,
        first_lost: Option<(u64, Duration)>,
    ) -> Option<u64> {
        if let Some(episode) = self.episode {
            let over = match self.recovery {
                Recovery::Reno => cum_advanced,
                Recovery::NewReno | Recovery::Tahoe => self.cum_ack > episode.recover,
                Recovery::None => self.highest_acked.is_some_and(|h| h > episode.recover),
            };
            if over {
                self.episode = None;
            } else if cum_advanced && self.recovery == Recovery::NewReno {
                // RFC 6582 partial ACK: the packet at the new cumulative point is lost too.
                let hole = self.cum_ack;
                let repaired_in_episode = self
                    .slot(hole)
                    .is_some_and(|s| s.retransmitted && s.sent_at >= episode.started);
                if !repaired_in_episode {
                    self.mark_lost(hole);
                    self.queue_retransmission(hole, true);
                }
            }
        }
        if self.episode.is_some() {
            return None;
        }
        // A new loss starts an episode; a hole left over from the last one needs three new
        // duplicate ACKs (classic Reno's second fast retransmit).
        let start = match self.recovery {
            Recovery::None => first_lost.is_some(),
            _ => first_lost.is_some() || (self.unrepaired > 0 && self.dupacks >= DUPTHRESH),
        };
        if !start {
            return None;
        }
        let lowest = self.lowest_unrepaired();
        let (lost_seq, lost_sent_at) = first_lost
            .or_else(|| lowest.and_then(|s| self.slot(s).map(|slot| (s, slot.sent_at))))
            .unwrap_or((self.base, now));
        self.episode = Some(Episode {
            recover: self.next_seq.saturating_sub(1),
            started: now,
            fast: matches!(self.recovery, Recovery::Reno | Recovery::NewReno),
        });
        self.stats.congestion_events += 1;
        self.cc.on_congestion_event(&CongestionEvent {
            now,
            in_flight: pipe_before,
            lost_sent_at,
        });
        match self.recovery {
            Recovery::Tahoe => self.go_back_n(),
            Recovery::Reno | Recovery::NewReno => {
                if let Some(seq) = lowest {
                    self.queue_retransmission(seq, true);
                }
            }
            Recovery::None => {}
        }
        Some(lost_seq)
    }

    /// Runs due timers: the RTO (returns `Some(Timeout)` when it fired) and the controller's.
    pub fn on_timer(&mut self, now: Duration) -> Option<LossKind> {
        let mut fired = None;
        if self.rto_deadline.is_some_and(|d| d <= now) {
            self.rto_deadline = None;
            if !self.all_resolved() {
                fired = Some(LossKind::Timeout);
                self.on_rto(now);
            }
        }
        if self.cc.next_timer().is_some_and(|t| t <= now) {
            self.cc.on_timer(now);
        }
        fired
    }

    fn on_rto(&mut self, now: Duration) {
        self.stats.timeouts += 1;
        self.rtt.on_timeout();
        for i in 0..self.slots.len() {
            self.mark_lost(self.base + i as u64);
        }
        if self.reliable() {
            self.go_back_n();
        } else {
            self.pop_resolved();
        }
        self.episode = Some(Episode {
            recover: self.next_seq.saturating_sub(1),
            started: now,
            fast: false,
        });
        self.cc.on_timeout(now);
    }
}

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
