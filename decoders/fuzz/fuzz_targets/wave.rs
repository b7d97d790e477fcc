//! Read arbitrary bytes as a waveform file (VCD, FST): detection, the
//! frames on its AXI4-Stream interfaces, the signals' hierarchy and a load.
//! The parsers' own panics are contained and come back as errors, so any
//! panic, abort (an allocation past libFuzzer's limit), leak or hang here
//! is rocescope's.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = rocescope_replay::wave::exercise(data);
});
