//! One flow at the receiver: reassembly bookkeeping (which sequence numbers arrived), the
//! exactly-once check of every byte, the ACKs (optionally delayed), and the algorithm's receiver
//! controller fed with every packet. No I/O and no clock: the caller passes `now`.

use crate::pattern;
use crate::wire::{AckPacket, DataHeader, Fin, FinAck};
use ccbench_cc::ReceiverController;
use std::collections::BTreeMap;
use std::time::Duration;

/// With delayed ACKs: at most this long before an ACK goes out (Linux's minimum delayed-ACK
/// time; RFC 5681 §4.2 requires < 500 ms), and at least every second packet.
pub const DELAYED_ACK_TIMEOUT: Duration = Duration::from_millis(40);
/// Corruption messages kept per flow (the count is exact).
const MAX_ERRORS_KEPT: usize = 3;

/// The sequence numbers that arrived, as disjoint half-open ranges keyed by their start.
#[derive(Default, Debug)]
pub struct SeqSet {
    ranges: BTreeMap<u64, u64>,
}

impl SeqSet {
    pub fn contains(&self, seq: u64) -> bool {
        self.ranges
            .range(..=seq)
            .next_back()
            .is_some_and(|(_, &end)| seq < end)
    }

    /// Adds `seq`; false if it was already there.
    pub fn insert(&mut self, seq: u64) -> bool {
        let before = self.ranges.range(..=seq).next_back().map(|(&s, &e)| (s, e));
        if let Some((_, end)) = before {
            if seq < end {
                return false;
            }
        }
        let after_end = self.ranges.remove(&(seq + 1));
        match before {
            Some((start, end)) if end == seq => {
                self.ranges.insert(start, after_end.unwrap_or(seq + 1));
            }
            _ => {
                self.ranges.insert(seq, after_end.unwrap_or(seq + 1));
            }
        }
        true
    }

    /// The first sequence number not received: everything below it arrived.
    pub fn cumulative(&self) -> u64 {
        match self.ranges.first_key_value() {
            Some((&0, &end)) => end,
            _ => 0,
        }
    }

    /// Bit i set: `seq - 1 - i` is in the set (the 64 packets before `seq`).
    pub fn bitmap_before(&self, seq: u64) -> u64 {
        let low = seq.saturating_sub(64);
        let mut bits = 0u64;
        for (&start, &end) in self.ranges.range(..seq).rev() {
            if end <= low {
                break;
            }
            for s in start.max(low)..end.min(seq) {
                bits |= 1 << (seq - 1 - s);
            }
        }
        bits
    }

    /// How many members are below `limit`.
    pub fn count_below(&self, limit: u64) -> u64 {
        self.ranges
            .iter()
            .take_while(|(&s, _)| s < limit)
            .map(|(&s, &e)| e.min(limit) - s)
            .sum()
    }

    /// The smallest sequence number below `limit` that is missing, if any.
    pub fn first_missing_below(&self, limit: u64) -> Option<u64> {
        let first = self.cumulative();
        (first < limit).then_some(first)
    }

    pub fn max(&self) -> Option<u64> {
        self.ranges.last_key_value().map(|(_, &e)| e - 1)
    }
}

pub struct FlowReceiver {
    flow: u32,
    reliable: bool,
    mss: u32,
    received: SeqSet,
    unique_pkts: u64,
    unique_bytes: u64,
    duplicates: u64,
    corrupted: u64,
    errors: Vec<String>,
    controller: Option<Box<dyn ReceiverController>>,
    /// The flow's origin on the caller's clock (the receiver controller's time base).
    origin: Duration,
    delayed_acks: bool,
    /// Delayed ACKs: packets not yet acknowledged, the newest one, the deadline.
    unacked: u32,
    newest: Option<(u64, u64)>,
    ack_deadline: Option<Duration>,
    pending_feedback: u8,
    fin: Option<Fin>,
}

impl FlowReceiver {
    pub fn new(
        flow: u32,
        reliable: bool,
        mss: u32,
        controller: Option<Box<dyn ReceiverController>>,
        now: Duration,
        delayed_acks: bool,
    ) -> FlowReceiver {
        FlowReceiver {
            flow,
            reliable,
            mss,
            received: SeqSet::default(),
            unique_pkts: 0,
            unique_bytes: 0,
            duplicates: 0,
            corrupted: 0,
            errors: Vec::new(),
            controller,
            origin: now,
            delayed_acks,
            unacked: 0,
            newest: None,
            ack_deadline: None,
            pending_feedback: 0,
            fin: None,
        }
    }

    pub fn unique_bytes(&self) -> u64 {
        self.unique_bytes
    }
    pub fn unique_pkts(&self) -> u64 {
        self.unique_pkts
    }
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }
    pub fn fin(&self) -> Option<&Fin> {
        self.fin.as_ref()
    }
    pub fn ack_deadline(&self) -> Option<Duration> {
        self.ack_deadline
    }

    fn error(&mut self, message: String) {
        self.corrupted += 1;
        if self.errors.len() < MAX_ERRORS_KEPT {
            self.errors.push(message);
        }
    }

    fn ack_for(&mut self, seq: u64, sent_us: u64, duplicate: bool) -> AckPacket {
        self.unacked = 0;
        self.ack_deadline = None;
        let feedback = std::mem::take(&mut self.pending_feedback);
        AckPacket {
            flow: self.flow,
            echo_seq: seq,
            echo_sent_us: sent_us,
            cum_ack: self.received.cumulative(),
            sack: self.received.bitmap_before(seq),
            feedback,
            duplicate,
        }
    }

    /// A data packet for this flow; returns the ACK to send now, if any. Returns the number of
    /// new payload bytes in the second field (0 for duplicates and corrupted packets).
    pub fn on_data(
        &mut self,
        now: Duration,
        header: &DataHeader,
        payload: &[u8],
    ) -> (Option<AckPacket>, u64) {
        let seq = header.seq;
        if payload.len() > self.mss as usize {
            self.error(format!(
                "seq {seq}: {} payload bytes, more than the flow's mss {}",
                payload.len(),
                self.mss
            ));
            return (None, 0);
        }
        if let Some(at) = pattern::first_mismatch(self.flow, seq, payload) {
            // Not acknowledged: to the sender a corrupted packet is a lost one.
            self.error(format!("seq {seq}: payload byte {at} is not the pattern"));
            return (None, 0);
        }
        if let Some(fin) = &self.fin {
            if seq >= fin.total_pkts {
                self.error(format!(
                    "seq {seq} arrived after a FIN announcing {} packets",
                    fin.total_pkts
                ));
                return (None, 0);
            }
        }
        let fresh = self.received.insert(seq);
        let new_bytes = if fresh {
            self.unique_pkts += 1;
            self.unique_bytes += payload.len() as u64;
            payload.len() as u64
        } else {
            self.duplicates += 1;
            0
        };
        if let Some(controller) = self.controller.as_mut() {
            let sent_at = Duration::from_micros(header.sent_us);
            let local = now.saturating_sub(self.origin);
            let bytes = payload.len() as u32;
            if let Some(feedback) = controller.on_packet(local, seq, sent_at, bytes) {
                self.pending_feedback = feedback.to_wire();
            }
        }
        if !self.delayed_acks {
            return (Some(self.ack_for(seq, header.sent_us, !fresh)), new_bytes);
        }
        // RFC 5681 §4.2: ACK at once for out-of-order data, for data filling a hole and for
        // duplicates; otherwise every second packet or after the timeout.
        let in_order =
            fresh && self.received.cumulative() == seq + 1 && self.received.max() == Some(seq);
        self.newest = Some((seq, header.sent_us));
        self.unacked += 1;
        if !in_order || self.unacked >= 2 {
            return (Some(self.ack_for(seq, header.sent_us, !fresh)), new_bytes);
        }
        self.ack_deadline.get_or_insert(now + DELAYED_ACK_TIMEOUT);
        (None, new_bytes)
    }

    /// The delayed ACK, when its deadline has passed.
    pub fn poll_delayed_ack(&mut self, now: Duration) -> Option<AckPacket> {
        if self.ack_deadline.is_none_or(|d| d > now) {
            return None;
        }
        let (seq, sent_us) = self.newest?;
        Some(self.ack_for(seq, sent_us, false))
    }

    /// The sender's FIN: remember what it says it sent; the answer.
    pub fn on_fin(&mut self, fin: &Fin) -> FinAck {
        self.fin = Some(*fin);
        FinAck {
            flow: self.flow,
            received_pkts: self.unique_pkts,
            received_bytes: self.unique_bytes,
            echo_sent_us: fin.sent_us,
        }
    }

    /// Packets the FIN announced that never arrived (None before the FIN).
    pub fn missing_pkts(&self) -> Option<u64> {
        self.fin
            .map(|f| f.total_pkts - self.received.count_below(f.total_pkts))
    }

    /// "ok" when every byte the sender announced arrived exactly once and intact (for
    /// unreliable flows, `Recovery::None`: every byte that arrived was intact, and the count
    /// adds up when nothing is missing); otherwise what was wrong.
    pub fn integrity(&self) -> String {
        let mut problems = Vec::new();
        if self.corrupted > 0 {
            problems.push(format!(
                "{} corrupted packets ({})",
                self.corrupted,
                self.errors.join("; ")
            ));
        }
        match &self.fin {
            None => problems.push("no FIN: the flow was still open when it was closed".into()),
            Some(fin) => {
                let missing = self.missing_pkts().unwrap_or(0);
                if self.received.max().is_some_and(|m| m >= fin.total_pkts) {
                    problems.push(format!(
                        "packets beyond the {} the FIN announced",
                        fin.total_pkts
                    ));
                }
                if self.reliable && missing > 0 {
                    let first = self.received.first_missing_below(fin.total_pkts);
                    let why = if fin.complete {
                        ""
                    } else {
                        " (the sender stopped before they were acknowledged)"
                    };
                    problems.push(format!(
                        "{missing} of {} packets never arrived, the first seq {}{why}",
                        fin.total_pkts,
                        first.unwrap_or(0)
                    ));
                }
                if missing == 0 && self.unique_bytes != fin.total_bytes {
                    problems.push(format!(
                        "received {} bytes but the sender sent {}",
                        self.unique_bytes, fin.total_bytes
                    ));
                }
            }
        }
        if problems.is_empty() {
            "ok".into()
        } else {
            problems.join("; ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seq_set_merges_ranges_and_reports_the_cumulative_point() {
        let mut s = SeqSet::default();
        for seq in [0, 1, 3, 5, 4] {
            assert!(s.insert(seq));
        }
        assert!(!s.insert(4) && !s.insert(0));
        assert_eq!(s.cumulative(), 2);
        assert_eq!(s.ranges.len(), 2); // [0,2) [3,6)
        assert!(s.contains(3) && !s.contains(2) && !s.contains(6));
        assert!(s.insert(2));
        assert_eq!((s.cumulative(), s.ranges.len()), (6, 1));
        assert_eq!(s.count_below(4), 4);
        assert_eq!(s.max(), Some(5));
    }

    #[test]
    fn bitmap_covers_the_64_packets_before_the_echoed_one() {
        let mut s = SeqSet::default();
        for seq in (0..200u64).filter(|q| q % 10 != 3) {
            s.insert(seq);
        }
        let bits = s.bitmap_before(100);
        for i in 0..64u64 {
            let seq = 100 - 1 - i;
            assert_eq!(bits & (1 << i) != 0, seq % 10 != 3, "seq {seq}");
        }
        // Near the start only existing packets are reported.
        assert_eq!(s.bitmap_before(3), 0b111);
        assert_eq!(s.bitmap_before(0), 0);
        // TFRC's 8-bit vector for k: bit 0 (k itself) is the echo; bits k-7..k-1 are the low 7.
        assert_eq!(s.bitmap_before(14) & 0x7f, 0b1111110);
    }

    fn data(seq: u64, len: usize) -> (DataHeader, Vec<u8>) {
        let mut payload = vec![0u8; len];
        pattern::fill(9, seq, &mut payload);
        let h = DataHeader {
            flow: 9,
            seq,
            sent_us: seq * 100,
            payload_len: len as u16,
        };
        (h, payload)
    }

    #[test]
    fn every_byte_exactly_once_duplicates_and_corruption() {
        let mut r = FlowReceiver::new(9, true, 1448, None, Duration::ZERO, false);
        let now = Duration::from_millis(1);
        for seq in [0u64, 2, 1, 2] {
            let (h, p) = data(seq, 1448);
            let (ack, _) = r.on_data(now, &h, &p);
            let ack = ack.unwrap();
            assert_eq!(ack.echo_seq, seq);
            assert_eq!(ack.echo_sent_us, seq * 100);
        }
        assert_eq!((r.unique_pkts(), r.duplicates()), (3, 1));
        let (h, mut p) = data(3, 100);
        p[50] ^= 1;
        assert_eq!(r.on_data(now, &h, &p), (None, 0));
        let (h, p) = data(3, 100);
        assert_eq!(r.on_data(now, &h, &p).1, 100);
        assert_eq!(r.integrity(), "1 corrupted packets (seq 3: payload byte 50 is not the pattern); no FIN: the flow was still open when it was closed");
        let mut clean = FlowReceiver::new(9, true, 1448, None, Duration::ZERO, false);
        for seq in 0..4 {
            let (h, p) = data(seq, 1000);
            clean.on_data(now, &h, &p);
        }
        let fin = Fin {
            flow: 9,
            total_pkts: 4,
            total_bytes: 4000,
            complete: true,
            sent_us: 1,
        };
        let answer = clean.on_fin(&fin);
        assert_eq!((answer.received_pkts, answer.received_bytes), (4, 4000));
        assert_eq!(clean.integrity(), "ok");
        // A FIN announcing more than arrived.
        clean.on_fin(&Fin {
            total_pkts: 6,
            total_bytes: 6000,
            ..fin
        });
        assert_eq!(
            clean.integrity(),
            "2 of 6 packets never arrived, the first seq 4"
        );
        // Same bytes count but a packet of the wrong length.
        clean.on_fin(&Fin {
            total_bytes: 4001,
            ..fin
        });
        assert_eq!(
            clean.integrity(),
            "received 4000 bytes but the sender sent 4001"
        );
    }

    #[test]
    fn delayed_acks_every_second_packet_or_after_the_timeout() {
        let mut r = FlowReceiver::new(9, true, 1448, None, Duration::ZERO, true);
        let t = Duration::from_millis;
        let (h0, p0) = data(0, 10);
        assert_eq!(r.on_data(t(0), &h0, &p0).0, None);
        assert_eq!(r.ack_deadline(), Some(DELAYED_ACK_TIMEOUT));
        let (h1, p1) = data(1, 10);
        let ack = r.on_data(t(1), &h1, &p1).0.unwrap();
        assert_eq!((ack.echo_seq, ack.cum_ack, ack.sack), (1, 2, 1));
        let (h2, p2) = data(2, 10);
        assert_eq!(r.on_data(t(2), &h2, &p2).0, None);
        assert_eq!(r.poll_delayed_ack(t(41)), None);
        assert_eq!(r.poll_delayed_ack(t(42)).unwrap().echo_seq, 2);
        // Out of order: at once.
        let (h5, p5) = data(5, 10);
        assert!(r.on_data(t(50), &h5, &p5).0.is_some());
    }
}
