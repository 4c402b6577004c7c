//! ccbench's userspace transport (issue 5): reliable (or, for rate-based controllers, unreliable)
//! flows over UDP driven by a `ccbench_cc::Controller`.
//!
//! The state machines (`sender::Sender`, `receiver::FlowReceiver`) do no I/O and read no clock:
//! they are tested on a virtual clock. `udp` is the thin socket layer the agent's `usend` /
//! `urecv` loops use (UDP GSO/GRO batching, precise waits for pacing).
//!
//! # Wire format (version 1, integers little-endian)
//!
//! | packet | bytes |
//! |---|---|
//! | DATA (24 + payload) | `type=1` u8, `version=1` u8, payload length u16, flow u32, seq u64, sent_us u64, payload |
//! | ACK (40) | `type=2`, version, feedback u8, flags u8 (bit 0: the echoed packet was a duplicate), flow u32, echo_seq u64, echo_sent_us u64, cum_ack u64, sack u64 |
//! | HELLO (16 + n) | `type=3`, version, n u16, flow u32, sent_us u64, n bytes of JSON `{"cc","params","mss","reliable","seed"}` |
//! | HELLO_ACK (18 + n) | `type=4`, version, refused u8, 0 u8, flow u32, echo_sent_us u64, n u16, n bytes of reason |
//! | FIN (32) | `type=5`, version, flags u8 (bit 0: everything was acknowledged), 0 u8, flow u32, total_pkts u64, total_bytes u64, sent_us u64 |
//! | FIN_ACK (32) | `type=6`, version, 0, 0, flow u32, received_pkts u64, received_bytes u64, echo_sent_us u64 |
//!
//! - A flow is keyed at the receiver by the sender's address and port plus the flow id.
//! - `sent_us` is the sender's clock in µs since its flow started; ACKs echo the timestamp of
//!   the packet that triggered them, so every ACK is an RTT sample (Karn's rule still applies
//!   to retransmissions, as `ccbench_cc::Ack::rtt` documents).
//! - `cum_ack`: every sequence number below it has arrived. `sack` bit i: packet
//!   `echo_seq - 1 - i` has arrived, i.e. the 64 packets *before the echoed one*. With the echo
//!   itself this is the 8-bit vector k-7..k of seed 004 (TFRC, §II-B) and more, and unlike a
//!   bitmap above the cumulative point it keeps working when holes are never repaired (TFRC
//!   does not retransmit).
//! - The payload of packet `seq` is a pattern derived from (flow, seq) (`pattern`), so the
//!   receiver checks every byte; duplicates are counted, not delivered twice.
//! - The sender opens with HELLO (retransmitted on its RTO until a HELLO_ACK) naming the
//!   algorithm and its parameters, so the receiver builds the algorithm's receiver half (ARB);
//!   the receiver's feedback rides in the ACK's feedback byte (`ccbench_cc::Feedback`).
//! - The sender closes with FIN (retransmitted until a FIN_ACK, bounded) announcing how many
//!   distinct packets and bytes it sent, so the receiver can tell that everything arrived.
//! - Data packets fill a 1500-byte MTU with the default 1448-byte payload (20 IPv4 + 8 UDP + 24).

pub mod cbr;
pub mod defaults;
pub mod pattern;
pub mod receiver;
pub mod rtt;
pub mod sender;
pub mod udp;
pub mod wire;
