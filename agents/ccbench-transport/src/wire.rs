//! The wire format (see the crate docs for the table). Every packet starts with its type byte and
//! the format version; integers are little-endian. Decoding checks lengths and the version and
//! names what is wrong, so a stray datagram is dropped instead of misread.

pub const VERSION: u8 = 1;

pub const TYPE_DATA: u8 = 1;
pub const TYPE_ACK: u8 = 2;
pub const TYPE_HELLO: u8 = 3;
pub const TYPE_HELLO_ACK: u8 = 4;
pub const TYPE_FIN: u8 = 5;
pub const TYPE_FIN_ACK: u8 = 6;

/// Bytes of a data packet before its payload: with a 1500-byte MTU, IPv4 (20) and UDP (8)
/// leave 1472, i.e. 1448 payload bytes per packet, the same as kernel TCP's MSS with timestamps.
pub const DATA_HEADER_LEN: usize = 24;
pub const ACK_LEN: usize = 40;
pub const FIN_LEN: usize = 32;
pub const FIN_ACK_LEN: usize = 32;
const HELLO_HEADER_LEN: usize = 16;
const HELLO_ACK_HEADER_LEN: usize = 18;
/// Largest payload: a datagram (without GSO) is at most 65507 bytes over IPv4.
pub const MAX_PAYLOAD: usize = 65507 - DATA_HEADER_LEN;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataHeader {
    pub flow: u32,
    pub seq: u64,
    /// Sender's clock, µs since its flow started.
    pub sent_us: u64,
    pub payload_len: u16,
}

/// One acknowledgement, sent for every data packet (or every second one with delayed ACKs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckPacket {
    pub flow: u32,
    /// The data packet that triggered this ACK (the newest one, with delayed ACKs).
    pub echo_seq: u64,
    pub echo_sent_us: u64,
    /// Every sequence number below this one has arrived.
    pub cum_ack: u64,
    /// Bit i set: packet `echo_seq - 1 - i` has arrived (the 64 packets before the echoed one).
    pub sack: u64,
    /// The receiver controller's feedback (`ccbench_cc::Feedback::to_wire`), 0 for none.
    pub feedback: u8,
    /// The echoed packet had already arrived before (a duplicate).
    pub duplicate: bool,
}

/// The flow's opening: which algorithm, so the receiver builds its receiver half.
#[derive(Clone, Debug, PartialEq)]
pub struct Hello {
    pub flow: u32,
    /// Sender's clock (µs, its own origin), echoed in the HELLO_ACK: the first RTT sample.
    pub sent_us: u64,
    /// `{"cc": id, "params": {name: number}, "mss": n, "reliable": bool, "seed": n}`.
    pub json: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HelloAck {
    pub flow: u32,
    pub echo_sent_us: u64,
    /// None: accepted; Some(reason): refused.
    pub refused: Option<String>,
}

/// The sender ends the flow: what it sent, so the receiver can check it got all of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fin {
    pub flow: u32,
    /// Distinct packets sent (sequence numbers 0..total_pkts).
    pub total_pkts: u64,
    /// Distinct payload bytes sent (retransmissions not counted).
    pub total_bytes: u64,
    /// The sender saw every packet acknowledged (false: it gave up or was stopped).
    pub complete: bool,
    pub sent_us: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinAck {
    pub flow: u32,
    pub received_pkts: u64,
    pub received_bytes: u64,
    pub echo_sent_us: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Packet<'a> {
    Data(DataHeader, &'a [u8]),
    Ack(AckPacket),
    Hello(Hello),
    HelloAck(HelloAck),
    Fin(Fin),
    FinAck(FinAck),
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn need(b: &[u8], len: usize, what: &str) -> Result<(), String> {
    if b.len() < len {
        Err(format!("{what} of {} bytes is shorter than {len}", b.len()))
    } else {
        Ok(())
    }
}

pub fn decode(b: &[u8]) -> Result<Packet<'_>, String> {
    need(b, 2, "datagram")?;
    if b[1] != VERSION {
        return Err(format!("wire version {} is not {VERSION}", b[1]));
    }
    match b[0] {
        TYPE_DATA => {
            need(b, DATA_HEADER_LEN, "data packet")?;
            let header = DataHeader {
                payload_len: u16_at(b, 2),
                flow: u32_at(b, 4),
                seq: u64_at(b, 8),
                sent_us: u64_at(b, 16),
            };
            let payload = &b[DATA_HEADER_LEN..];
            if payload.len() != header.payload_len as usize {
                return Err(format!(
                    "data packet seq {} carries {} payload bytes but its header says {}",
                    header.seq,
                    payload.len(),
                    header.payload_len
                ));
            }
            Ok(Packet::Data(header, payload))
        }
        TYPE_ACK => {
            need(b, ACK_LEN, "ACK")?;
            Ok(Packet::Ack(AckPacket {
                feedback: b[2],
                duplicate: b[3] & 1 != 0,
                flow: u32_at(b, 4),
                echo_seq: u64_at(b, 8),
                echo_sent_us: u64_at(b, 16),
                cum_ack: u64_at(b, 24),
                sack: u64_at(b, 32),
            }))
        }
        TYPE_HELLO => {
            need(b, HELLO_HEADER_LEN, "HELLO")?;
            let len = u16_at(b, 2) as usize;
            need(b, HELLO_HEADER_LEN + len, "HELLO")?;
            let json = std::str::from_utf8(&b[HELLO_HEADER_LEN..HELLO_HEADER_LEN + len])
                .map_err(|_| "HELLO configuration is not UTF-8".to_string())?;
            Ok(Packet::Hello(Hello {
                flow: u32_at(b, 4),
                sent_us: u64_at(b, 8),
                json: json.to_string(),
            }))
        }
        TYPE_HELLO_ACK => {
            need(b, HELLO_ACK_HEADER_LEN, "HELLO_ACK")?;
            let len = u16_at(b, 16) as usize;
            need(b, HELLO_ACK_HEADER_LEN + len, "HELLO_ACK")?;
            let reason = &b[HELLO_ACK_HEADER_LEN..HELLO_ACK_HEADER_LEN + len];
            Ok(Packet::HelloAck(HelloAck {
                flow: u32_at(b, 4),
                echo_sent_us: u64_at(b, 8),
                refused: (b[2] != 0).then(|| String::from_utf8_lossy(reason).into_owned()),
            }))
        }
        TYPE_FIN => {
            need(b, FIN_LEN, "FIN")?;
            Ok(Packet::Fin(Fin {
                complete: b[2] & 1 != 0,
                flow: u32_at(b, 4),
                total_pkts: u64_at(b, 8),
                total_bytes: u64_at(b, 16),
                sent_us: u64_at(b, 24),
            }))
        }
        TYPE_FIN_ACK => {
            need(b, FIN_ACK_LEN, "FIN_ACK")?;
            Ok(Packet::FinAck(FinAck {
                flow: u32_at(b, 4),
                received_pkts: u64_at(b, 8),
                received_bytes: u64_at(b, 16),
                echo_sent_us: u64_at(b, 24),
            }))
        }
        other => Err(format!("unknown packet type {other}")),
    }
}

/// Writes the data header into `out[..DATA_HEADER_LEN]` (the payload follows it).
pub fn encode_data_header(h: &DataHeader, out: &mut [u8]) {
    out[0] = TYPE_DATA;
    out[1] = VERSION;
    out[2..4].copy_from_slice(&h.payload_len.to_le_bytes());
    out[4..8].copy_from_slice(&h.flow.to_le_bytes());
    out[8..16].copy_from_slice(&h.seq.to_le_bytes());
    out[16..24].copy_from_slice(&h.sent_us.to_le_bytes());
}

pub fn encode_ack(a: &AckPacket) -> [u8; ACK_LEN] {
    let mut out = [0u8; ACK_LEN];
    out[0] = TYPE_ACK;
    out[1] = VERSION;
    out[2] = a.feedback;
    out[3] = a.duplicate as u8;
    out[4..8].copy_from_slice(&a.flow.to_le_bytes());
    out[8..16].copy_from_slice(&a.echo_seq.to_le_bytes());
    out[16..24].copy_from_slice(&a.echo_sent_us.to_le_bytes());
    out[24..32].copy_from_slice(&a.cum_ack.to_le_bytes());
    out[32..40].copy_from_slice(&a.sack.to_le_bytes());
    out
}

pub fn encode_hello(h: &Hello) -> Vec<u8> {
    let json = h.json.as_bytes();
    let mut out = vec![0u8; HELLO_HEADER_LEN];
    out[0] = TYPE_HELLO;
    out[1] = VERSION;
    out[2..4].copy_from_slice(&(json.len() as u16).to_le_bytes());
    out[4..8].copy_from_slice(&h.flow.to_le_bytes());
    out[8..16].copy_from_slice(&h.sent_us.to_le_bytes());
    out.extend_from_slice(json);
    out
}

pub fn encode_hello_ack(h: &HelloAck) -> Vec<u8> {
    let reason = h.refused.as_deref().unwrap_or("").as_bytes();
    let reason = &reason[..reason.len().min(1000)];
    let mut out = vec![0u8; HELLO_ACK_HEADER_LEN];
    out[0] = TYPE_HELLO_ACK;
    out[1] = VERSION;
    out[2] = h.refused.is_some() as u8;
    out[4..8].copy_from_slice(&h.flow.to_le_bytes());
    out[8..16].copy_from_slice(&h.echo_sent_us.to_le_bytes());
    out[16..18].copy_from_slice(&(reason.len() as u16).to_le_bytes());
    out.extend_from_slice(reason);
    out
}

pub fn encode_fin(f: &Fin) -> [u8; FIN_LEN] {
    let mut out = [0u8; FIN_LEN];
    out[0] = TYPE_FIN;
    out[1] = VERSION;
    out[2] = f.complete as u8;
    out[4..8].copy_from_slice(&f.flow.to_le_bytes());
    out[8..16].copy_from_slice(&f.total_pkts.to_le_bytes());
    out[16..24].copy_from_slice(&f.total_bytes.to_le_bytes());
    out[24..32].copy_from_slice(&f.sent_us.to_le_bytes());
    out
}

pub fn encode_fin_ack(f: &FinAck) -> [u8; FIN_ACK_LEN] {
    let mut out = [0u8; FIN_ACK_LEN];
    out[0] = TYPE_FIN_ACK;
    out[1] = VERSION;
    out[4..8].copy_from_slice(&f.flow.to_le_bytes());
    out[8..16].copy_from_slice(&f.received_pkts.to_le_bytes());
    out[16..24].copy_from_slice(&f.received_bytes.to_le_bytes());
    out[24..32].copy_from_slice(&f.echo_sent_us.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_packet_type_round_trips() {
        let mut data = vec![0u8; DATA_HEADER_LEN + 5];
        let h = DataHeader {
            flow: 7,
            seq: 1 << 40,
            sent_us: 123_456_789,
            payload_len: 5,
        };
        encode_data_header(&h, &mut data);
        data[DATA_HEADER_LEN..].copy_from_slice(b"hello");
        assert_eq!(decode(&data).unwrap(), Packet::Data(h, b"hello"));

        let ack = AckPacket {
            flow: 3,
            echo_seq: 99,
            echo_sent_us: 5,
            cum_ack: 90,
            sack: 0x8000_0000_0000_0001,
            feedback: 2,
            duplicate: true,
        };
        assert_eq!(decode(&encode_ack(&ack)).unwrap(), Packet::Ack(ack));

        let hello = Hello {
            flow: 1,
            sent_us: 42,
            json: r#"{"cc":"reno"}"#.into(),
        };
        assert_eq!(decode(&encode_hello(&hello)).unwrap(), Packet::Hello(hello));
        for refused in [None, Some("unknown algorithm".to_string())] {
            let ha = HelloAck {
                flow: 1,
                echo_sent_us: 42,
                refused,
            };
            assert_eq!(
                decode(&encode_hello_ack(&ha)).unwrap(),
                Packet::HelloAck(ha)
            );
        }
        let fin = Fin {
            flow: 2,
            total_pkts: 10,
            total_bytes: 14480,
            complete: true,
            sent_us: 9,
        };
        assert_eq!(decode(&encode_fin(&fin)).unwrap(), Packet::Fin(fin));
        let fa = FinAck {
            flow: 2,
            received_pkts: 10,
            received_bytes: 14480,
            echo_sent_us: 9,
        };
        assert_eq!(decode(&encode_fin_ack(&fa)).unwrap(), Packet::FinAck(fa));
    }

    #[test]
    fn malformed_datagrams_are_refused_with_a_reason() {
        assert!(decode(&[]).unwrap_err().contains("shorter"));
        assert!(decode(&[TYPE_ACK, 9]).unwrap_err().contains("version 9"));
        assert!(decode(&[77, VERSION]).unwrap_err().contains("type 77"));
        let mut data = vec![0u8; DATA_HEADER_LEN + 3];
        let h = DataHeader {
            flow: 0,
            seq: 4,
            sent_us: 0,
            payload_len: 10,
        };
        encode_data_header(&h, &mut data);
        assert!(decode(&data).unwrap_err().contains("header says 10"));
        assert!(decode(
            &encode_ack(&AckPacket {
                flow: 0,
                echo_seq: 0,
                echo_sent_us: 0,
                cum_ack: 0,
                sack: 0,
                feedback: 0,
                duplicate: false
            })[..20]
        )
        .is_err());
    }
}
