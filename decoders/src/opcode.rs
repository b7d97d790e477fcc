//! BTH opcodes: transport (3 bits) + operation (5 bits), and which extended
//! headers follow the BTH for each.

use std::fmt;

/// The transport service of an opcode (its top three bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    Rc,
    Uc,
    Rd,
    Ud,
    Cnp,
    Xrc,
    /// 0xC0 and 0xE0 (manufacturer specific) and anything else.
    Unknown(u8),
}

impl Transport {
    #[inline]
    pub fn short_name(self) -> &'static str {
        match self {
            Transport::Rc => "RC",
            Transport::Uc => "UC",
            Transport::Rd => "RD",
            Transport::Ud => "UD",
            Transport::Cnp => "CNP",
            Transport::Xrc => "XRC",
            Transport::Unknown(_) => "?",
        }
    }
}

/// The operation of an opcode (its low five bits), where the transport defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    SendFirst,
    SendMiddle,
    SendLast,
    SendLastImm,
    SendOnly,
    SendOnlyImm,
    WriteFirst,
    WriteMiddle,
    WriteLast,
    WriteLastImm,
    WriteOnly,
    WriteOnlyImm,
    ReadRequest,
    ReadResponseFirst,
    ReadResponseMiddle,
    ReadResponseLast,
    ReadResponseOnly,
    Acknowledge,
    AtomicAcknowledge,
    CompareSwap,
    FetchAdd,
    Resync,
    SendLastInv,
    SendOnlyInv,
    Flush,
    AtomicWrite,
}

impl Operation {
    #[inline]
    const fn from_low5(op: u8) -> Option<Operation> {
        use Operation::*;
        Some(match op {
            0x00 => SendFirst,
            0x01 => SendMiddle,
            0x02 => SendLast,
            0x03 => SendLastImm,
            0x04 => SendOnly,
            0x05 => SendOnlyImm,
            0x06 => WriteFirst,
            0x07 => WriteMiddle,
            0x08 => WriteLast,
            0x09 => WriteLastImm,
            0x0A => WriteOnly,
            0x0B => WriteOnlyImm,
            0x0C => ReadRequest,
            0x0D => ReadResponseFirst,
            0x0E => ReadResponseMiddle,
            0x0F => ReadResponseLast,
            0x10 => ReadResponseOnly,
            0x11 => Acknowledge,
            0x12 => AtomicAcknowledge,
            0x13 => CompareSwap,
            0x14 => FetchAdd,
            0x15 => Resync,
            0x16 => SendLastInv,
            0x17 => SendOnlyInv,
            0x1C => Flush,
            0x1D => AtomicWrite,
            _ => return None,
        })
    }

    /// The low five opcode bits of this operation.
    #[inline]
    pub fn low5(self) -> u8 {
        use Operation::*;
        match self {
            SendFirst => 0x00,
            SendMiddle => 0x01,
            SendLast => 0x02,
            SendLastImm => 0x03,
            SendOnly => 0x04,
            SendOnlyImm => 0x05,
            WriteFirst => 0x06,
            WriteMiddle => 0x07,
            WriteLast => 0x08,
            WriteLastImm => 0x09,
            WriteOnly => 0x0A,
            WriteOnlyImm => 0x0B,
            ReadRequest => 0x0C,
            ReadResponseFirst => 0x0D,
            ReadResponseMiddle => 0x0E,
            ReadResponseLast => 0x0F,
            ReadResponseOnly => 0x10,
            Acknowledge => 0x11,
            AtomicAcknowledge => 0x12,
            CompareSwap => 0x13,
            FetchAdd => 0x14,
            Resync => 0x15,
            SendLastInv => 0x16,
            SendOnlyInv => 0x17,
            Flush => 0x1C,
            AtomicWrite => 0x1D,
        }
    }

    /// Name in the IBTA's words, as Wireshark prints it.
    #[inline]
    pub fn name(self) -> &'static str {
        use Operation::*;
        match self {
            SendFirst => "SEND First",
            SendMiddle => "SEND Middle",
            SendLast => "SEND Last",
            SendLastImm => "SEND Last with Immediate",
            SendOnly => "SEND Only",
            SendOnlyImm => "SEND Only with Immediate",
            WriteFirst => "RDMA WRITE First",
            WriteMiddle => "RDMA WRITE Middle",
            WriteLast => "RDMA WRITE Last",
            WriteLastImm => "RDMA WRITE Last with Immediate",
            WriteOnly => "RDMA WRITE Only",
            WriteOnlyImm => "RDMA WRITE Only with Immediate",
            ReadRequest => "RDMA READ Request",
            ReadResponseFirst => "RDMA READ Response First",
            ReadResponseMiddle => "RDMA READ Response Middle",
            ReadResponseLast => "RDMA READ Response Last",
            ReadResponseOnly => "RDMA READ Response Only",
            Acknowledge => "Acknowledge",
            AtomicAcknowledge => "ATOMIC Acknowledge",
            CompareSwap => "CmpSwap",
            FetchAdd => "FetchAdd",
            Resync => "RESYNC",
            SendLastInv => "SEND Last with Invalidate",
            SendOnlyInv => "SEND Only with Invalidate",
            Flush => "FLUSH",
            AtomicWrite => "ATOMIC WRITE",
        }
    }

    /// Extended headers after the BTH (before any transport-specific prefix
    /// such as RDETH/DETH/XRCETH).
    #[cfg(test)]
    fn headers(self) -> Headers {
        use Operation::*;
        match self {
            SendLastImm | SendOnlyImm | WriteLastImm => Headers::IMMDT,
            WriteFirst | WriteOnly | ReadRequest | AtomicWrite => Headers::RETH,
            WriteOnlyImm => Headers(Headers::RETH.0 | Headers::IMMDT.0),
            ReadResponseFirst | ReadResponseLast | ReadResponseOnly | Acknowledge => Headers::AETH,
            AtomicAcknowledge => Headers(Headers::AETH.0 | Headers::ATOMICACKETH.0),
            CompareSwap | FetchAdd => Headers::ATOMICETH,
            SendLastInv | SendOnlyInv => Headers::IETH,
            Flush => Headers(Headers::FETH.0 | Headers::RETH.0),
            _ => Headers::NONE,
        }
    }

    /// Requests travel requester -> responder; responses and ACKs come back.
    #[inline]
    pub fn is_request(self) -> bool {
        !self.is_response()
    }

    /// READ responses, ACKs and atomic ACKs.
    #[inline]
    pub const fn is_response(self) -> bool {
        use Operation::*;
        matches!(
            self,
            ReadResponseFirst
                | ReadResponseMiddle
                | ReadResponseLast
                | ReadResponseOnly
                | Acknowledge
                | AtomicAcknowledge
        )
    }

    /// Whether a payload may follow the headers.
    #[inline]
    pub fn carries_payload(self) -> bool {
        use Operation::*;
        !matches!(
            self,
            ReadRequest | Acknowledge | AtomicAcknowledge | CompareSwap | FetchAdd | Resync | Flush
        )
    }

    /// FIRST/MIDDLE/LAST/ONLY position of the packet in its message.
    #[inline]
    pub fn position(self) -> MessagePosition {
        use Operation::*;
        match self {
            SendFirst | WriteFirst | ReadResponseFirst => MessagePosition::First,
            SendMiddle | WriteMiddle | ReadResponseMiddle => MessagePosition::Middle,
            SendLast | SendLastImm | SendLastInv | WriteLast | WriteLastImm | ReadResponseLast => {
                MessagePosition::Last
            }
            _ => MessagePosition::Only,
        }
    }
}

/// Where a packet sits in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessagePosition {
    First,
    Middle,
    Last,
    Only,
}

/// The set of extended headers that follow a BTH, as a small bit set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Headers(pub u16);

impl Headers {
    pub const NONE: Headers = Headers(0);
    pub const RDETH: Headers = Headers(1 << 0);
    pub const DETH: Headers = Headers(1 << 1);
    pub const XRCETH: Headers = Headers(1 << 2);
    pub const RETH: Headers = Headers(1 << 3);
    pub const FETH: Headers = Headers(1 << 4);
    pub const ATOMICETH: Headers = Headers(1 << 5);
    pub const AETH: Headers = Headers(1 << 6);
    pub const ATOMICACKETH: Headers = Headers(1 << 7);
    pub const IMMDT: Headers = Headers(1 << 8);
    pub const IETH: Headers = Headers(1 << 9);
    /// The 16 reserved bytes of a RoCEv2 CNP.
    pub const CNP: Headers = Headers(1 << 10);

    #[inline]
    pub fn contains(self, other: Headers) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    #[inline]
    pub fn with(self, other: Headers) -> Headers {
        Headers(self.0 | other.0)
    }
}

/// A decoded opcode: the transport with its operation, or `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpcodeKind {
    Rc(Operation),
    Uc(Operation),
    Rd(Operation),
    Ud(Operation),
    /// RoCEv2 Congestion Notification Packet (0x81; 0x80 is the IB CNP code).
    Cnp,
    Xrc(Operation),
    Unknown(u8),
}

impl OpcodeKind {
    /// The operation, for opcodes the tables define (not CNP or unknown).
    #[inline]
    pub const fn operation(self) -> Option<Operation> {
        match self {
            OpcodeKind::Rc(op)
            | OpcodeKind::Uc(op)
            | OpcodeKind::Rd(op)
            | OpcodeKind::Ud(op)
            | OpcodeKind::Xrc(op) => Some(op),
            OpcodeKind::Cnp | OpcodeKind::Unknown(_) => None,
        }
    }
}

/// A BTH opcode byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Opcode(pub u8);

impl Opcode {
    pub const RC_SEND_FIRST: Opcode = Opcode(0x00);
    pub const RC_SEND_MIDDLE: Opcode = Opcode(0x01);
    pub const RC_SEND_LAST: Opcode = Opcode(0x02);
    pub const RC_SEND_ONLY: Opcode = Opcode(0x04);
    pub const RC_WRITE_FIRST: Opcode = Opcode(0x06);
    pub const RC_WRITE_MIDDLE: Opcode = Opcode(0x07);
    pub const RC_WRITE_LAST: Opcode = Opcode(0x08);
    pub const RC_WRITE_ONLY: Opcode = Opcode(0x0A);
    pub const RC_READ_REQUEST: Opcode = Opcode(0x0C);
    pub const RC_READ_RESPONSE_FIRST: Opcode = Opcode(0x0D);
    pub const RC_READ_RESPONSE_MIDDLE: Opcode = Opcode(0x0E);
    pub const RC_READ_RESPONSE_LAST: Opcode = Opcode(0x0F);
    pub const RC_READ_RESPONSE_ONLY: Opcode = Opcode(0x10);
    pub const RC_ACK: Opcode = Opcode(0x11);
    pub const UD_SEND_ONLY: Opcode = Opcode(0x64);
    pub const CNP: Opcode = Opcode(0x81);

    /// Decode the opcode byte against the IBTA tables. A table lookup: the
    /// indexer and the RC analysis ask this several times per packet.
    #[inline]
    pub const fn kind(self) -> OpcodeKind {
        KIND_TABLE[self.0 as usize]
    }

    /// Build an opcode from transport and operation, if the pair exists.
    #[inline]
    pub fn new(transport: Transport, op: Operation) -> Option<Opcode> {
        let base = match transport {
            Transport::Rc => 0x00,
            Transport::Uc => 0x20,
            Transport::Rd => 0x40,
            Transport::Ud => 0x60,
            Transport::Cnp => return Some(Opcode::CNP),
            Transport::Xrc => 0xA0,
            Transport::Unknown(_) => return None,
        };
        let opc = Opcode(base | op.low5());
        (!matches!(opc.kind(), OpcodeKind::Unknown(_))).then_some(opc)
    }

    #[inline]
    pub fn transport(self) -> Transport {
        match self.0 & 0xE0 {
            0x00 => Transport::Rc,
            0x20 => Transport::Uc,
            0x40 => Transport::Rd,
            0x60 => Transport::Ud,
            0x80 => Transport::Cnp,
            0xA0 => Transport::Xrc,
            t => Transport::Unknown(t),
        }
    }

    /// The operation, for opcodes the tables define (not CNP or unknown).
    #[inline]
    pub const fn operation(self) -> Option<Operation> {
        self.kind().operation()
    }

    #[inline]
    pub fn is_cnp(self) -> bool {
        matches!(self.kind(), OpcodeKind::Cnp)
    }

    /// The extended headers that follow the BTH (RDETH, DETH, XRCETH,
    /// FETH/RETH/AtomicETH, AETH, AtomicAckETH, ImmDt, IETH, in wire order).
    /// A table lookup: the indexer asks this for every packet.
    #[inline]
    pub fn headers(self) -> Headers {
        HEADER_TABLE[usize::from(self.0)]
    }

    /// The extended headers that follow the BTH, in wire order of the bits
    /// (RDETH, DETH, XRCETH, RETH/FETH/AtomicETH, AETH, AtomicAckETH, ImmDt, IETH).
    #[cfg(test)]
    fn headers_from_kind(self) -> Headers {
        match self.kind() {
            OpcodeKind::Rc(op) | OpcodeKind::Uc(op) => op.headers(),
            OpcodeKind::Rd(op) => {
                // RD requests carry RDETH + DETH; responses only RDETH.
                let prefix = if op.is_response() {
                    Headers::RDETH
                } else {
                    Headers::RDETH.with(Headers::DETH)
                };
                prefix.with(op.headers())
            }
            OpcodeKind::Ud(op) => Headers::DETH.with(op.headers()),
            OpcodeKind::Xrc(op) => {
                if op.is_response() {
                    op.headers()
                } else {
                    Headers::XRCETH.with(op.headers())
                }
            }
            OpcodeKind::Cnp => Headers::CNP,
            OpcodeKind::Unknown(_) => Headers::NONE,
        }
    }

    /// Human name, e.g. "RC RDMA WRITE Only", "CNP", "Unknown (0xc3)".
    #[inline]
    pub fn name(self) -> OpcodeName {
        OpcodeName(self)
    }
}

/// Extended headers of one operation (low five opcode bits), for the table.
const fn op_headers(low: u8) -> u16 {
    match low {
        0x03 | 0x05 | 0x09 => Headers::IMMDT.0,
        0x06 | 0x0A | 0x0C | 0x1D => Headers::RETH.0,
        0x0B => Headers::RETH.0 | Headers::IMMDT.0,
        0x0D | 0x0F | 0x10 | 0x11 => Headers::AETH.0,
        0x12 => Headers::AETH.0 | Headers::ATOMICACKETH.0,
        0x13 | 0x14 => Headers::ATOMICETH.0,
        0x16 | 0x17 => Headers::IETH.0,
        0x1C => Headers::FETH.0 | Headers::RETH.0,
        _ => 0,
    }
}

const fn compute_headers(b: u8) -> u16 {
    let low = b & 0x1F;
    let defined = low <= 0x17 || low == 0x1C || low == 0x1D;
    let response = low >= 0x0D && low <= 0x12;
    match b & 0xE0 {
        0x00 if defined && low != 0x15 => op_headers(low),
        0x20 if low <= 0x0B => op_headers(low),
        0x40 if low <= 0x15 => {
            let prefix = if response {
                Headers::RDETH.0
            } else {
                Headers::RDETH.0 | Headers::DETH.0
            };
            prefix | op_headers(low)
        }
        0x60 if low == 0x04 || low == 0x05 => Headers::DETH.0 | op_headers(low),
        0x80 if low <= 1 => Headers::CNP.0,
        0xA0 if low <= 0x17 && low != 0x15 => {
            let prefix = if response { 0 } else { Headers::XRCETH.0 };
            prefix | op_headers(low)
        }
        _ => 0,
    }
}

const fn compute_kind(b: u8) -> OpcodeKind {
    let low = b & 0x1F;
    let op = Operation::from_low5(low);
    match (b & 0xE0, op) {
        (0x00, Some(op)) if !matches!(op, Operation::Resync) => OpcodeKind::Rc(op),
        (0x20, Some(op)) if low <= 0x0B => OpcodeKind::Uc(op),
        (0x40, Some(op)) if low <= 0x15 => OpcodeKind::Rd(op),
        (0x60, Some(op @ (Operation::SendOnly | Operation::SendOnlyImm))) => OpcodeKind::Ud(op),
        (0x80, _) if low <= 1 => OpcodeKind::Cnp,
        (0xA0, Some(op)) if low <= 0x17 && !matches!(op, Operation::Resync) => OpcodeKind::Xrc(op),
        _ => OpcodeKind::Unknown(b),
    }
}

static KIND_TABLE: [OpcodeKind; 256] = {
    let mut t = [OpcodeKind::Unknown(0); 256];
    let mut i = 0;
    while i < 256 {
        t[i] = compute_kind(i as u8);
        i += 1;
    }
    t
};

static HEADER_TABLE: [Headers; 256] = {
    let mut t = [Headers::NONE; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = Headers(compute_headers(i as u8));
        i += 1;
    }
    t
};

/// Display adapter for an opcode's name that does not allocate.
#[derive(Debug, Clone, Copy)]
pub struct OpcodeName(Opcode);

impl fmt::Display for OpcodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opc = self.0;
        match opc.kind() {
            OpcodeKind::Cnp => f.write_str("CNP"),
            OpcodeKind::Unknown(b) => write!(f, "Unknown (0x{b:02x})"),
            _ => match opc.operation() {
                Some(op) => write!(f, "{} {}", opc.transport().short_name(), op.name()),
                None => write!(f, "Unknown (0x{:02x})", opc.0),
            },
        }
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.name().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_match_the_ibta_layout() {
        assert_eq!(Opcode(0x0A).kind(), OpcodeKind::Rc(Operation::WriteOnly));
        assert_eq!(Opcode(0x0A).headers(), Headers::RETH);
        assert_eq!(Opcode(0x0B).headers(), Headers::RETH.with(Headers::IMMDT));
        assert_eq!(Opcode(0x0C).kind(), OpcodeKind::Rc(Operation::ReadRequest));
        assert_eq!(Opcode(0x0E).headers(), Headers::NONE);
        assert_eq!(
            Opcode(0x12).headers(),
            Headers::AETH.with(Headers::ATOMICACKETH)
        );
        assert_eq!(Opcode(0x1C).headers(), Headers::FETH.with(Headers::RETH));
        assert_eq!(Opcode(0x15).kind(), OpcodeKind::Unknown(0x15));
        assert_eq!(Opcode(0x2C).kind(), OpcodeKind::Unknown(0x2C)); // UC has no READ
        assert_eq!(Opcode(0x55).kind(), OpcodeKind::Rd(Operation::Resync));
        assert_eq!(Opcode(0x64).headers(), Headers::DETH);
        assert_eq!(Opcode(0x65).headers(), Headers::DETH.with(Headers::IMMDT));
        assert_eq!(Opcode(0x66).kind(), OpcodeKind::Unknown(0x66));
        assert_eq!(Opcode(0x81).kind(), OpcodeKind::Cnp);
        assert_eq!(Opcode(0x80).kind(), OpcodeKind::Cnp);
        assert_eq!(Opcode(0xAA).headers(), Headers::XRCETH.with(Headers::RETH));
        assert_eq!(Opcode(0xB1).headers(), Headers::AETH); // XRC ACK: no XRCETH
        assert_eq!(Opcode(0x51).headers(), Headers::RDETH.with(Headers::AETH));
        assert_eq!(Opcode(0xC0).kind(), OpcodeKind::Unknown(0xC0));
    }

    #[test]
    fn every_known_opcode_round_trips_through_new() {
        for b in 0..=255u8 {
            let opc = Opcode(b);
            if let Some(op) = opc.operation() {
                assert_eq!(Opcode::new(opc.transport(), op), Some(opc), "0x{b:02x}");
            }
        }
    }

    #[test]
    fn header_table_agrees_with_the_opcode_tables() {
        for b in 0..=255u8 {
            assert_eq!(
                Opcode(b).headers(),
                Opcode(b).headers_from_kind(),
                "0x{b:02x}"
            );
        }
    }

    #[test]
    fn names() {
        assert_eq!(Opcode(0x0A).to_string(), "RC RDMA WRITE Only");
        assert_eq!(Opcode(0x64).to_string(), "UD SEND Only");
        assert_eq!(Opcode(0x81).to_string(), "CNP");
        assert_eq!(Opcode(0xC3).to_string(), "Unknown (0xc3)");
    }
}
