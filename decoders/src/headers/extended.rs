//! The other extended transport headers (RETH, AtomicETH, AtomicAckETH,
//! ImmDt, IETH, DETH, XRCETH, RDETH, FETH, the CNP's) and [`ExtHeaders`],
//! the set an opcode calls for.

use super::*;

field_offsets! {
    /// RETH field offsets; the accessors, the builder and the field walk use
    /// these (as do the ones below for the other extended headers).
    pub(crate) mod reth_field {
        VA: 0..8,
        RKEY: 8..12,
        DMA_LEN: 12..16,
    }
}

field_offsets! {
    /// AtomicETH field offsets.
    pub(crate) mod atomic_eth_field {
        VA: 0..8,
        RKEY: 8..12,
        SWAP_ADD: 12..20,
        COMPARE: 20..28,
    }
}

field_offsets! {
    /// AtomicAckETH field offsets.
    pub(crate) mod atomic_ack_eth_field {
        ORIG_REM_DATA: 0..8,
    }
}

field_offsets! {
    /// ImmDt field offsets.
    pub(crate) mod immdt_field {
        VALUE: 0..4,
    }
}

field_offsets! {
    /// IETH field offsets.
    pub(crate) mod ieth_field {
        RKEY: 0..4,
    }
}

field_offsets! {
    /// DETH field offsets (byte 4 is reserved).
    pub(crate) mod deth_field {
        QKEY: 0..4,
        SRC_QP: 5..8,
    }
}

field_offsets! {
    /// XRCETH field offsets (byte 0 is reserved).
    pub(crate) mod xrceth_field {
        XRC_SRQ: 1..4,
    }
}

field_offsets! {
    /// RDETH field offsets (byte 0 is reserved).
    pub(crate) mod rdeth_field {
        EE_CONTEXT: 1..4,
    }
}

field_offsets! {
    /// FETH field offsets (bytes 0..3 are reserved).
    pub(crate) mod feth_field {
        /// Selectivity level (2 bits) and placement type (4 bits).
        SEL_PLT: 3..4,
    }
}

field_offsets! {
    /// The CNP's reserved bytes after the BTH.
    pub(crate) mod cnp_field {
        RESERVED: 0..16,
    }
}

fixed_view!(
    /// RDMA Extended Transport Header: virtual address, R_Key, DMA length.
    RethSlice, Layer::Reth, 16, reth_field {
        va: u64 = u64_at(VA);
        rkey: u32 = u32_at(RKEY);
        dma_len: u32 = u32_at(DMA_LEN);
    }
);

impl RethSlice<'_> {
    #[inline]
    pub fn to_owned(&self) -> Reth {
        Reth {
            va: self.va(),
            rkey: self.rkey(),
            dma_len: self.dma_len(),
        }
    }
}

/// Owned RETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reth {
    pub va: u64,
    pub rkey: u32,
    pub dma_len: u32,
}

impl Reth {
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        let mut h = [0u8; RethSlice::LEN];
        h[reth_field::VA].copy_from_slice(&self.va.to_be_bytes());
        h[reth_field::RKEY].copy_from_slice(&self.rkey.to_be_bytes());
        h[reth_field::DMA_LEN].copy_from_slice(&self.dma_len.to_be_bytes());
        out.extend_from_slice(&h);
    }
}

fixed_view!(
    /// Atomic Extended Transport Header: VA, R_Key, swap/add data, compare data.
    AtomicEthSlice, Layer::AtomicEth, 28, atomic_eth_field {
        va: u64 = u64_at(VA);
        rkey: u32 = u32_at(RKEY);
        swap_add: u64 = u64_at(SWAP_ADD);
        compare: u64 = u64_at(COMPARE);
    }
);

impl AtomicEthSlice<'_> {
    #[inline]
    pub fn to_owned(&self) -> AtomicEth {
        AtomicEth {
            va: self.va(),
            rkey: self.rkey(),
            swap_add: self.swap_add(),
            compare: self.compare(),
        }
    }
}

/// Owned AtomicETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AtomicEth {
    pub va: u64,
    pub rkey: u32,
    pub swap_add: u64,
    pub compare: u64,
}

impl AtomicEth {
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        let mut h = [0u8; AtomicEthSlice::LEN];
        h[atomic_eth_field::VA].copy_from_slice(&self.va.to_be_bytes());
        h[atomic_eth_field::RKEY].copy_from_slice(&self.rkey.to_be_bytes());
        h[atomic_eth_field::SWAP_ADD].copy_from_slice(&self.swap_add.to_be_bytes());
        h[atomic_eth_field::COMPARE].copy_from_slice(&self.compare.to_be_bytes());
        out.extend_from_slice(&h);
    }
}

fixed_view!(
    /// Atomic ACK Extended Transport Header: the original remote data.
    AtomicAckEthSlice, Layer::AtomicAckEth, 8, atomic_ack_eth_field {
        orig_rem_data: u64 = u64_at(ORIG_REM_DATA);
    }
);

fixed_view!(
    /// Immediate data (4 bytes).
    ImmDtSlice, Layer::ImmDt, 4, immdt_field {
        value: u32 = u32_at(VALUE);
    }
);

fixed_view!(
    /// Invalidate Extended Transport Header: the R_Key to invalidate.
    IethSlice, Layer::Ieth, 4, ieth_field {
        rkey: u32 = u32_at(RKEY);
    }
);

fixed_view!(
    /// Datagram Extended Transport Header: Q_Key and source QP.
    DethSlice, Layer::Deth, 8, deth_field {
        qkey: u32 = u32_at(QKEY);
        src_qp: u32 = u24_at(SRC_QP);
    }
);

impl DethSlice<'_> {
    #[inline]
    pub fn to_owned(&self) -> Deth {
        Deth {
            qkey: self.qkey(),
            src_qp: self.src_qp(),
        }
    }
}

/// Owned DETH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Deth {
    pub qkey: u32,
    /// 24 bits.
    pub src_qp: u32,
}

impl Deth {
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        let mut h = [0u8; DethSlice::LEN];
        h[deth_field::QKEY].copy_from_slice(&self.qkey.to_be_bytes());
        h[deth_field::SRC_QP].copy_from_slice(&self.src_qp.to_be_bytes()[1..]);
        out.extend_from_slice(&h);
    }
}

fixed_view!(
    /// XRC Extended Transport Header: the XRC shared receive queue number.
    XrcEthSlice, Layer::Xrceth, 4, xrceth_field {
        xrc_srq: u32 = u24_at(XRC_SRQ);
    }
);

fixed_view!(
    /// Reliable Datagram Extended Transport Header: the EE context.
    RdethSlice, Layer::Rdeth, 4, rdeth_field {
        ee_context: u32 = u24_at(EE_CONTEXT);
    }
);

fixed_view!(
    /// FLUSH Extended Transport Header: selectivity level and placement type.
    FethSlice, Layer::Feth, 4, feth_field {
        selectivity: u8 = u8_at(SEL_PLT) |v| (v >> 4) & 3;
        placement: u8 = u8_at(SEL_PLT) |v| v & 0x0F;
    }
);

fixed_view!(
    /// The 16 reserved bytes that follow the BTH of a RoCEv2 CNP.
    CnpSlice, Layer::Cnp, 16
);

impl CnpSlice<'_> {
    /// Number of reserved bytes that are not zero (a conforming CNP has none).
    #[inline]
    pub fn reserved_nonzero(&self) -> u32 {
        self.0.iter().filter(|b| **b != 0).count() as u32
    }
}

/// The extended headers of one packet; each present only if its opcode has it
/// and the capture holds it. Kept as byte offsets into the frame (0 = absent)
/// so that a decoded packet stays small; the accessors hand out views.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtHeaders<'a> {
    frame: &'a [u8],
    offsets: [u16; 11],
}

/// Index of each extended header in [`ExtHeaders`]'s offset table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExtKind {
    Rdeth,
    Deth,
    Xrceth,
    Feth,
    Reth,
    AtomicEth,
    Aeth,
    AtomicAckEth,
    ImmDt,
    Ieth,
    Cnp,
}

macro_rules! ext_accessor {
    ($(#[$m:meta])* $name:ident, $kind:ident, $ty:ident) => {
        $(#[$m])*
        #[inline]
        pub fn $name(&self) -> Option<$ty<'a>> {
            match self.offsets[ExtKind::$kind as usize] {
                0 => None,
                off => $ty::from_slice(self.frame, usize::from(off)).ok(),
            }
        }
    };
}

impl<'a> ExtHeaders<'a> {
    /// The frame the offsets point into.
    #[inline]
    pub fn frame(&self) -> &'a [u8] {
        self.frame
    }

    pub(crate) fn new(frame: &'a [u8]) -> Self {
        ExtHeaders {
            frame,
            offsets: [0; 11],
        }
    }

    /// Record that header `kind` starts at `offset` (always after the BTH, so never 0).
    #[inline]
    pub(crate) fn set(&mut self, kind: ExtKind, offset: usize) {
        self.offsets[kind as usize] = u16::try_from(offset).unwrap_or(0);
    }

    ext_accessor!(rdeth, Rdeth, RdethSlice);
    ext_accessor!(deth, Deth, DethSlice);
    ext_accessor!(xrceth, Xrceth, XrcEthSlice);
    ext_accessor!(feth, Feth, FethSlice);
    ext_accessor!(reth, Reth, RethSlice);
    ext_accessor!(atomic_eth, AtomicEth, AtomicEthSlice);
    ext_accessor!(aeth, Aeth, AethSlice);
    ext_accessor!(atomic_ack_eth, AtomicAckEth, AtomicAckEthSlice);
    ext_accessor!(immdt, ImmDt, ImmDtSlice);
    ext_accessor!(ieth, Ieth, IethSlice);
    ext_accessor!(cnp, Cnp, CnpSlice);
}

/// Owned extended headers for the builder. Which ones are written is decided
/// by the opcode (see [`crate::Opcode::headers`]); missing values are zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ext {
    pub rdeth_ee_context: u32,
    pub deth: Deth,
    pub xrc_srq: u32,
    pub feth_selectivity: u8,
    pub feth_placement: u8,
    pub reth: Reth,
    pub atomic_eth: AtomicEth,
    pub aeth: Aeth,
    pub atomic_ack_orig: u64,
    pub immdt: u32,
    pub ieth_rkey: u32,
}

impl ExtHeaders<'_> {
    /// The owned values of the present headers (absent ones are zero).
    #[inline]
    pub fn to_owned(&self) -> Ext {
        Ext {
            rdeth_ee_context: self.rdeth().map_or(0, |h| h.ee_context()),
            deth: self.deth().map(|h| h.to_owned()).unwrap_or_default(),
            xrc_srq: self.xrceth().map_or(0, |h| h.xrc_srq()),
            feth_selectivity: self.feth().map_or(0, |h| h.selectivity()),
            feth_placement: self.feth().map_or(0, |h| h.placement()),
            reth: self.reth().map(|h| h.to_owned()).unwrap_or_default(),
            atomic_eth: self.atomic_eth().map(|h| h.to_owned()).unwrap_or_default(),
            aeth: self.aeth().map(|h| h.to_owned()).unwrap_or_default(),
            atomic_ack_orig: self.atomic_ack_eth().map_or(0, |h| h.orig_rem_data()),
            immdt: self.immdt().map_or(0, |h| h.value()),
            ieth_rkey: self.ieth().map_or(0, |h| h.rkey()),
        }
    }
}
