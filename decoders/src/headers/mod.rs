//! Zero-copy header views over `&[u8]` and the owned header values that the
//! builders write. A view is only constructed once its whole length is
//! present, so its accessors are infallible.

use crate::error::{DecodeError, Layer, take};
use crate::wire::{array_at, u8_at, u16_at, u24_at, u32_at, u64_at};

/// Generates a fixed-length header view with `from_slice`, `as_bytes` and `LEN`.
macro_rules! fixed_view {
    ($(#[$m:meta])* $name:ident, $layer:expr, $len:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name<'a>(&'a [u8]);

        impl<'a> $name<'a> {
            /// Header length in bytes.
            pub const LEN: usize = $len;

            /// View the header at `offset` of `frame`.
            #[inline]
            pub fn from_slice(frame: &'a [u8], offset: usize) -> Result<Self, DecodeError> {
                take(frame, offset, Self::LEN, $layer).map($name)
            }

            /// The header's bytes.
            #[inline]
            pub fn as_bytes(&self) -> &'a [u8] {
                self.0
            }
        }
    };
}

mod aeth;
mod bth;
mod erf;
mod ethernet;
mod extended;
mod ip;
mod lrh;
#[cfg(test)]
mod tests;
mod udp;

pub use aeth::*;
pub use bth::*;
pub use erf::*;
pub use ethernet::*;
pub use extended::*;
pub use ip::*;
pub use lrh::*;
pub use udp::*;
