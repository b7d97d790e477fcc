//! Capture formats for rocescope.
//!
//! [`capture`] reads classic pcap and pcapng files frame by frame without
//! copying packet bytes, so `rocescope decode` and the indexed store share one
//! reader that never panics on bad input and reports cut files as warnings.

pub mod capture;

pub use capture::{
    CaptureError, CaptureFormat, CaptureFrame, CaptureReader, CaptureWarning, LinkType, TimeBase,
};
