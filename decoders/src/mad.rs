//! Management datagrams (the payload of UD packets to QP0 and QP1): their
//! class, method and attribute named as tshark names them, e.g.
//! `SubnGet(SMInfo)`, `SubnAdmGet(PathRecord)`, `CM: ConnectRequest`.

use core::fmt;

use crate::wire::{u8_at, u16_at, u32_at, u64_at};

field_offsets! {
    /// MAD base header field offsets.
    pub mod mad_field {
        BASE_VERSION: 0..1,
        MGMT_CLASS: 1..2,
        CLASS_VERSION: 2..3,
        /// Response bit and method (7 bits).
        METHOD: 3..4,
        STATUS: 4..6,
        CLASS_SPECIFIC: 6..8,
        TID: 8..16,
        ATTRIBUTE_ID: 16..18,
        ATTRIBUTE_MODIFIER: 20..24,
    }
}

/// The MAD base header is 24 bytes.
pub const MAD_HEADER_LEN: usize = 24;

pub const MAD_CLASS_SUBN_LID_ROUTED: u8 = 0x01;
pub const MAD_CLASS_SUBN_ADM: u8 = 0x03;
pub const MAD_CLASS_PERF: u8 = 0x04;
pub const MAD_CLASS_BM: u8 = 0x05;
pub const MAD_CLASS_DEV_MGT: u8 = 0x06;
pub const MAD_CLASS_CM: u8 = 0x07;
pub const MAD_CLASS_SNMP: u8 = 0x08;
pub const MAD_CLASS_SUBN_DIRECTED: u8 = 0x81;

/// A MAD's base header, viewed over a UD payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MadView<'a>(&'a [u8]);

impl<'a> MadView<'a> {
    /// The MAD at the start of `payload`, when its base header was captured.
    pub fn new(payload: &'a [u8]) -> Option<Self> {
        (payload.len() >= MAD_HEADER_LEN).then_some(MadView(payload))
    }
    pub fn bytes(&self) -> &'a [u8] {
        self.0
    }
    /// Display adapter for the MAD's name.
    pub fn name(&self) -> MadName {
        MadName {
            class: self.mgmt_class(),
            method: self.method(),
            attr: self.attribute_id(),
        }
    }
}

accessors!(MadView, mad_field {
    base_version: u8 = u8_at(BASE_VERSION);
    mgmt_class: u8 = u8_at(MGMT_CLASS);
    class_version: u8 = u8_at(CLASS_VERSION);
    /// The method with its response bit (0x81 GetResp).
    method: u8 = u8_at(METHOD);
    status: u16 = u16_at(STATUS);
    class_specific: u16 = u16_at(CLASS_SPECIFIC);
    transaction_id: u64 = u64_at(TID);
    attribute_modifier: u32 = u32_at(ATTRIBUTE_MODIFIER);
    attribute_id: u16 = u16_at(ATTRIBUTE_ID);
});

/// `SubnGet(SMInfo)`, `SubnAdmGetTable(PathRecord)`, `CM: ConnectReply`...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MadName {
    pub class: u8,
    pub method: u8,
    pub attr: u16,
}

fn method_name(m: u8) -> Option<&'static str> {
    Some(match m {
        0x01 => "Get",
        0x02 => "Set",
        0x81 => "GetResp",
        0x03 => "Send",
        0x05 => "Trap",
        0x06 => "Report",
        0x86 => "ReportResp",
        0x07 => "TrapRepress",
        0x12 => "GetTable",
        0x92 => "GetTableResp",
        0x13 => "GetTraceTable",
        0x14 => "GetMulti",
        0x94 => "GetMultiResp",
        0x15 => "Delete",
        0x95 => "DeleteResp",
        _ => return None,
    })
}

fn smp_attr(a: u16) -> Option<&'static str> {
    Some(match a {
        0x0001 => "ClassPortInfo",
        0x0002 => "Notice",
        0x0003 => "InformInfo",
        0x0010 => "NodeDescription",
        0x0011 => "NodeInfo",
        0x0012 => "SwitchInfo",
        0x0014 => "GUIDInfo",
        0x0015 => "PortInfo",
        0x0016 => "P_KeyTable",
        0x0017 => "SLtoVLMappingTable",
        0x0018 => "VLArbitrationTable",
        0x0019 => "LinearForwardingTable",
        0x001A => "RandomForwardingTable",
        0x001B => "MulticastForwardingTable",
        0x0020 => "SMInfo",
        0x0030 => "VendorDiag",
        0x0031 => "LedInfo",
        _ => return None,
    })
}

fn sa_attr(a: u16) -> Option<&'static str> {
    Some(match a {
        0x0001 => "ClassPortInfo",
        0x0002 => "Notice",
        0x0003 => "InformInfo",
        0x0011 => "NodeRecord",
        0x0012 => "PortInfoRecord",
        0x0013 => "SLtoVLMappingTableRecord",
        0x0014 => "SwitchInfoRecord",
        0x0015 => "LinearForwardingTableRecord",
        0x0016 => "RandomForwardingTableRecord",
        0x0017 => "MulticastForwardingTableRecord",
        0x0018 => "SMInfoRecord",
        0x0020 => "LinkRecord",
        0x0030 => "GuidInfoRecord",
        0x0031 => "ServiceRecord",
        0x0033 => "P_KeyTableRecord",
        0x0035 => "PathRecord",
        0x0036 => "VLArbitrationTableRecord",
        0x0038 => "MCMemberRecord",
        0x0039 => "TraceRecord",
        0x003A => "MultiPathRecord",
        0x003B => "ServiceAssociationRecord",
        0xF311 => "InformInfoRecord",
        _ => return None,
    })
}

fn cm_attr(a: u16) -> Option<&'static str> {
    Some(match a {
        0x0001 => "ClassPortInfo",
        0x0010 => "ConnectRequest",
        0x0011 => "MsgRcptAck",
        0x0012 => "ConnectReject",
        0x0013 => "ConnectReply",
        0x0014 => "ReadyToUse",
        0x0015 => "DisconnectRequest",
        0x0016 => "DisconnectReply",
        0x0017 => "ServiceIDResReq",
        0x0018 => "ServiceIDResReqResp",
        0x0019 => "LoadAlternatePath",
        0x001A => "AlternatePathResponse",
        _ => return None,
    })
}

impl fmt::Display for MadName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let method = method_name(self.method);
        let (prefix, attr) = match self.class {
            MAD_CLASS_SUBN_LID_ROUTED | MAD_CLASS_SUBN_DIRECTED => ("Subn", smp_attr(self.attr)),
            MAD_CLASS_SUBN_ADM => ("SubnAdm", sa_attr(self.attr)),
            MAD_CLASS_CM => {
                return match cm_attr(self.attr) {
                    Some(a) => write!(f, "CM: {a}"),
                    None => write!(f, "CM: attribute 0x{:04x}", self.attr),
                };
            }
            MAD_CLASS_PERF => ("Perf", None),
            MAD_CLASS_BM => ("BM", None),
            MAD_CLASS_DEV_MGT => ("DevMgt", None),
            MAD_CLASS_SNMP => ("SNMP", None),
            c => return write!(f, "MAD class 0x{c:02x} method 0x{:02x}", self.method),
        };
        match method {
            Some(m) => write!(f, "{prefix}{m}")?,
            None => write!(f, "{prefix} method 0x{:02x}", self.method)?,
        }
        match attr {
            Some(a) => write!(f, "({a})"),
            None => write!(f, "(0x{:04x})", self.attr),
        }
    }
}
