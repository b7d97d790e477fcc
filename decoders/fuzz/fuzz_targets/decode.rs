//! Decode arbitrary bytes under every link layer and pretty-print the result.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rocescope_decoders::exercise(data);
});
