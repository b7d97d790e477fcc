//! What the tshark tests share (`mod support;` in a test file): the
//! transport fields both compare, tshark's `-T fields` output, and ours.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use rocescope_decoders::Packet;

/// The BTH (from its P_Key) and RETH, AETH and DETH fields, by tshark's
/// names: the ones every tshark test compares.
pub const TRANSPORT_FIELDS: [&str; 11] = [
    "infiniband.bth.p_key",
    "infiniband.bth.destqp",
    "infiniband.bth.a",
    "infiniband.bth.psn",
    "infiniband.reth.va",
    "infiniband.reth.r_key",
    "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome",
    "infiniband.aeth.msn",
    "infiniband.deth.q_key",
    "infiniband.deth.srcqp",
];

/// `before`, the transport fields, then `after`.
pub fn fields_around(before: &[&'static str], after: &[&'static str]) -> Vec<&'static str> {
    let mut all = before.to_vec();
    all.extend(TRANSPORT_FIELDS);
    all.extend_from_slice(after);
    all
}

pub fn tshark_available() -> bool {
    rocescope_testkit::available(&[rocescope_testkit::TSHARK])
}

/// What tshark shows of each frame of `path`: a row a frame, a column
/// each of `fields` (their first occurrence; empty where it shows none).
/// `options` go before the file (preferences, disabled protocols).
pub fn tshark_fields(path: &Path, options: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").args(options).arg("-r").arg(path).args([
        "-T",
        "fields",
        "-E",
        "separator=\t",
        "-E",
        "occurrence=f",
    ]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = rocescope_testkit::run_ok(&mut cmd);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// Our numeric fields of `p` by tshark's names (the first of each).
pub fn our_fields(p: &Packet<'_>) -> HashMap<&'static str, u64> {
    let mut ours = HashMap::new();
    p.for_each_field(&mut |f| {
        if let Some(v) = f.value.as_u64() {
            ours.entry(f.name).or_insert(v);
        }
    });
    ours
}
