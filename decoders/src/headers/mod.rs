//! Zero-copy header views over `&[u8]` and the owned header values that the
//! builders write. A view is only constructed once its whole length is
//! present, so its accessors are infallible.

use crate::error::{DecodeError, Layer, take};
use crate::wire::{array_at, u8_at, u16_at, u24_at, u32_at, u64_at};

/// Generates a module of field byte ranges (`pub const NAME: Range<usize>`),
/// which the accessors, the builders and the field walk share.
macro_rules! field_offsets {
    ($(#[$m:meta])* $vis:vis mod $module:ident { $($(#[$fm:meta])* $field:ident: $range:expr,)* }) => {
        $(#[$m])*
        $vis mod $module {
            use core::ops::Range;
            $($(#[$fm])* pub const $field: Range<usize> = $range;)*
        }
    };
}

/// Generates a fixed-length header view with `from_slice`, `as_bytes` and
/// `LEN`, and, given a field module and a list, its [`accessors!`].
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
    ($(#[$m:meta])* $name:ident, $layer:expr, $len:expr, $fields:ident { $($list:tt)* }) => {
        fixed_view!($(#[$m])* $name, $layer, $len);
        accessors!($name, $fields { $($list)* });
    };
}

/// Generates a view's `#[inline] pub fn` field accessors. Each line
/// `name: Type = reader(FIELD)` reads `$fields::FIELD.start` with one of the
/// `wire` readers (which give 0 past the end, never panic);
/// `... |v| expr` then maps the raw value `v` (mask, shift, flag test).
macro_rules! accessors {
    ($view:ident, $fields:ident {
        $($(#[$m:meta])* $fn:ident: $ty:ty = $read:ident($field:ident) $(|$v:ident| $map:expr)?;)*
    }) => {
        impl $view<'_> {
            $(
                $(#[$m])*
                #[inline]
                pub fn $fn(&self) -> $ty {
                    accessors!(@map $read(self.0, $fields::$field.start) $(, |$v| $map)?)
                }
            )*
        }
    };
    (@map $raw:expr) => {
        $raw
    };
    (@map $raw:expr, |$v:ident| $map:expr) => {{
        let $v = $raw;
        $map
    }};
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
