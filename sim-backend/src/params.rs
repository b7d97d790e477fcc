//! Every model parameter by name, with its default, unit and bounds: what a
//! scenario's `[params]` table and `rocescope sim --set KEY=VALUE` override.

use serde::Serialize;

/// Why a parameter could not be set.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    /// No parameter has this name.
    #[error("unknown parameter `{name}`; valid parameters: {valid}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// Every valid name, comma separated.
        valid: String,
    },
    /// The value is not a number of the right kind.
    #[error("parameter `{name}`: `{value}` is not {kind}")]
    BadValue {
        /// The parameter.
        name: String,
        /// The text given.
        value: String,
        /// What was expected ("an integer", "a number").
        kind: &'static str,
    },
    /// The value is outside what the model can run.
    #[error("parameter `{name}` = {value} is impossible: must be within {min} ..= {max} {unit}")]
    OutOfRange {
        /// The parameter.
        name: String,
        /// The value given.
        value: f64,
        /// Smallest allowed.
        min: f64,
        /// Largest allowed.
        max: f64,
        /// Unit of the bounds.
        unit: &'static str,
    },
}

/// Description of one parameter, for `--list-params`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamInfo {
    /// Name used by `set` and in scenario files.
    pub name: &'static str,
    /// Default value, as text.
    pub default: String,
    /// Unit ("ns", "cycles", "bytes", "Gb/s", "" for counts).
    pub unit: &'static str,
    /// Smallest allowed value.
    pub min: f64,
    /// Largest allowed value.
    pub max: f64,
    /// Whether only whole numbers are allowed.
    pub integer: bool,
    /// What it means in the model.
    pub doc: &'static str,
}

trait ParamValue: Copy {
    const INTEGER: bool;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl ParamValue for u64 {
    const INTEGER: bool = true;
    fn from_f64(v: f64) -> Self {
        v as u64
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl ParamValue for f64 {
    const INTEGER: bool = false;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

macro_rules! params {
    ($( $(#[doc = $doc:literal])+ $name:ident : $ty:ty = $default:expr, $unit:literal, $min:expr, $max:expr; )*) => {
        /// The model's parameters. Defaults are BALBOA's as built
        /// (`FIDELITY.md`, "The stack as built") or, where the paper gives
        /// only end results, calibrated values named so there.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        pub struct Params {
            $( $(#[doc = $doc])+ pub $name: $ty, )*
        }

        impl Default for Params {
            fn default() -> Self {
                Params { $( $name: $default, )* }
            }
        }

        impl Params {
            /// Every parameter with its default, unit and bounds.
            pub fn list() -> Vec<ParamInfo> {
                let d = Params::default();
                vec![$( ParamInfo {
                    name: stringify!($name),
                    default: format!("{}", d.$name),
                    unit: $unit,
                    min: $min as f64,
                    max: $max as f64,
                    integer: <$ty as ParamValue>::INTEGER,
                    doc: concat!($($doc),+).trim_start(),
                }, )*]
            }

            /// The names of all parameters.
            pub fn names() -> Vec<&'static str> {
                vec![$( stringify!($name), )*]
            }

            /// The current value of a parameter, as a number.
            pub fn get(&self, name: &str) -> Option<f64> {
                match name {
                    $( stringify!($name) => Some(<$ty as ParamValue>::to_f64(self.$name)), )*
                    _ => None,
                }
            }

            /// Sets a parameter from a number, checking kind and bounds.
            pub fn set_f64(&mut self, name: &str, v: f64) -> Result<(), ParamError> {
                match name {
                    $( stringify!($name) => {
                        check(name, v, <$ty as ParamValue>::INTEGER, $min as f64, $max as f64, $unit)?;
                        self.$name = <$ty as ParamValue>::from_f64(v);
                        Ok(())
                    } )*
                    _ => Err(ParamError::Unknown { name: name.to_owned(), valid: Params::names().join(", ") }),
                }
            }
        }
    };
}

fn check(
    name: &str,
    v: f64,
    integer: bool,
    min: f64,
    max: f64,
    unit: &'static str,
) -> Result<(), ParamError> {
    if !v.is_finite() || (integer && v.fract() != 0.0) {
        return Err(ParamError::BadValue {
            name: name.to_owned(),
            value: v.to_string(),
            kind: if integer { "an integer" } else { "a number" },
        });
    }
    if v < min || v > max {
        return Err(ParamError::OutOfRange {
            name: name.to_owned(),
            value: v,
            min,
            max,
            unit,
        });
    }
    Ok(())
}

impl Params {
    /// Sets a parameter from text (`"3464"`, `"1e3"`, `"64_000"`, `"true"`).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ParamError> {
        if self.get(name).is_none() {
            return Err(ParamError::Unknown {
                name: name.to_owned(),
                valid: Params::names().join(", "),
            });
        }
        let t = value.trim().replace('_', "");
        let v = match t.as_str() {
            "true" => Some(1.0),
            "false" => Some(0.0),
            _ => t.parse::<f64>().ok(),
        };
        match v {
            Some(v) => self.set_f64(name, v),
            None => Err(ParamError::BadValue {
                name: name.to_owned(),
                value: value.to_owned(),
                kind: "a number",
            }),
        }
    }

    /// One datapath clock cycle in ps (4000 at 250 MHz).
    pub fn cycle_ps(&self) -> u64 {
        (1e6 / self.clock_mhz).round() as u64
    }

    /// `n` cycles in ps.
    pub fn cycles_ps(&self, n: u64) -> u64 {
        n * self.cycle_ps()
    }
}

params! {
    /// Ethernet link rate of every link.
    link_gbps: f64 = 100.0, "Gb/s", 1, 1600;
    /// Propagation delay of each cable (node to switch).
    link_prop_ns: u64 = 5, "ns", 0, 100_000_000;
    /// Latency of a MAC+PHY in each direction (TX and RX), BALBOA's CMAC.
    mac_latency_ns: u64 = 100, "ns", 0, 1_000_000;
    /// Switch forwarding latency (after the whole frame is received).
    switch_latency_ns: u64 = 300, "ns", 0, 100_000_000;
    /// Buffer per switch egress port; a frame that does not fit is dropped.
    switch_buffer_bytes: u64 = 524_288, "bytes", 4096, 1u64 << 34;
    /// Egress queue depth above which ECN-capable frames are marked CE (0 = never).
    ecn_threshold_bytes: u64 = 131_072, "bytes", 0, 1u64 << 34;
    /// Priority flow control in the switch (1 = on).
    pfc_enabled: u64 = 0, "", 0, 1;
    /// Egress queue depth at which PFC pauses the senders feeding it.
    pfc_xoff_bytes: u64 = 262_144, "bytes", 1, 1u64 << 34;
    /// Egress queue depth below which PFC resumes them.
    pfc_xon_bytes: u64 = 131_072, "bytes", 0, 1u64 << 34;
    /// BALBOA datapath clock (512-bit AXI4-Stream).
    clock_mhz: f64 = 250.0, "MHz", 1, 2000;
    /// Path MTU (payload bytes per packet).
    pmtu_bytes: u64 = 4096, "bytes", 256, 4096;
    /// Per-QP ACK-clocked window of outstanding packets (BALBOA: 16).
    window_packets: u64 = 16, "packets", 1, 4096;
    /// QPs in each card's on-chip state tables.
    qp_table_size: u64 = 500, "QPs", 1, 1 << 24;
    /// Cycles the response FSM waits after each incoming ACK / response (RTL quirk).
    ack_gap_cycles: u64 = 85, "cycles", 0, 1_000_000;
    /// Cycles to process one incoming ACK or READ response before the gap.
    resp_proc_cycles: u64 = 4, "cycles", 0, 1_000_000;
    /// TX pipeline from request logic to the MAC.
    tx_pipeline_cycles: u64 = 20, "cycles", 0, 1_000_000;
    /// RX pipeline from the MAC to the state tables.
    rx_pipeline_cycles: u64 = 20, "cycles", 0, 1_000_000;
    /// Time to fetch a 4 KiB payload from the HBM retransmission buffer (scales with size).
    hbm_fetch_ns: u64 = 1732, "ns", 0, 1_000_000_000;
    /// Cycles from a retransmission indication (NAK/timeout) to the first HBM fetch.
    retrans_setup_cycles: u64 = 12, "cycles", 0, 1_000_000;
    /// First retransmission timeout after progress.
    timeout_first_ns: u64 = 1_000_000, "ns", 1, 1u64 << 40;
    /// Later retransmission timeouts until progress.
    timeout_next_ns: u64 = 64_000_000, "ns", 1, 1u64 << 40;
    /// Timeouts tolerated before the QP goes to the error state.
    retry_limit: u64 = 12, "", 0, 255;
    /// Bytes of IP packet an incoming READ request is trimmed to (RTL quirk; < 56 cuts the RETH).
    read_req_trim_bytes: u64 = 56, "bytes", 20, 9000;
    /// Most response packets one READ request asks for (larger READs are split).
    read_max_packets: u64 = 16, "packets", 1, 4096;
    /// Fewest response packets a split READ request waits for window room to ask for.
    read_min_packets: u64 = 4, "packets", 1, 4096;
    /// Responder READ handling before its DMA read (MSN table, request queue, DMA command). Calibrated.
    read_responder_ns: u64 = 900, "ns", 0, 1_000_000_000;
    /// Host memory read latency of one DMA read request (PCIe round trip).
    pcie_read_latency_ns: u64 = 900, "ns", 0, 1_000_000_000;
    /// Outstanding PCIe read requests (tags) of the card's DMA engine.
    pcie_read_tags: u64 = 32, "tags", 1, 4096;
    /// Max read request size of one DMA read.
    pcie_mrrs_bytes: u64 = 512, "bytes", 64, 4096;
    /// PCIe payload bandwidth in each direction.
    pcie_gbytes_s: f64 = 13.0, "GB/s", 0.01, 1000;
    /// Latency until a DMA write is visible in host memory.
    pcie_write_latency_ns: u64 = 400, "ns", 0, 1_000_000_000;
    /// Host software time to post a work request (doorbell included). Calibrated.
    host_post_ns: u64 = 1800, "ns", 0, 1_000_000_000;
    /// Host time from the card's completion to the application seeing it. Calibrated.
    host_completion_ns: u64 = 1400, "ns", 0, 1_000_000_000;
    /// AES-CTR slot latency on the datapath (11 cycles).
    aes_ns: u64 = 44, "ns", 0, 1_000_000;
    /// DPI parallel-path latency (hidden behind the datapath).
    dpi_ns: u64 = 44, "ns", 0, 1_000_000;
    /// Application-slot pipeline depth (initiation interval 1).
    app_slot_cycles: u64 = 4, "cycles", 0, 1_000_000;
    /// Modulus of the application slot's Modulus operator.
    app_modulus: u64 = 1000, "", 1, 1u64 << 32;
    /// ConnectX peer: window of outstanding packets per QP.
    cx_window_packets: u64 = 128, "packets", 1, 1 << 22;
    /// ConnectX peer: coalesce one ACK per this many request packets.
    cx_ack_every: u64 = 8, "packets", 1, 4096;
    /// ConnectX peer: TX pipeline latency.
    cx_tx_latency_ns: u64 = 300, "ns", 0, 1_000_000_000;
    /// ConnectX peer: RX pipeline latency.
    cx_rx_latency_ns: u64 = 300, "ns", 0, 1_000_000_000;
    /// The RNR NAK's timer a responder with no receive WQE for a SEND asks
    /// for (IBTA code: 1 = 10 µs ... 7 = 120 µs ... 12 = 640 µs).
    rnr_timer_code: u64 = 7, "", 1, 31;
    /// ConnectX peer: least time between two CNPs of one QP.
    cx_cnp_interval_ns: u64 = 4000, "ns", 0, 1_000_000_000;
    /// ConnectX peer: DCQCN reaction point on its requesters (1 = on): each CNP cuts the QP's rate, a timer brings it back (simplified DCQCN, see `dcqcn.rs`).
    dcqcn_enabled: u64 = 0, "", 0, 1;
    /// DCQCN: gain g of α's moving average (α = (1 - g) α + g on a CNP).
    dcqcn_alpha_gain: f64 = 0.00390625, "", 0, 1;
    /// DCQCN: period of α's decay (α = (1 - g) α) while no CNP comes.
    dcqcn_alpha_timer_ns: u64 = 55_000, "ns", 100, 1_000_000_000;
    /// DCQCN: period of the rate-increase timer.
    dcqcn_timer_ns: u64 = 55_000, "ns", 100, 1_000_000_000;
    /// DCQCN: rate-increase events of fast recovery (halfway to the target rate) before additive increase.
    dcqcn_fast_recovery_steps: u64 = 5, "steps", 0, 1_000_000;
    /// DCQCN: additive increase of the target rate per rate-increase event after fast recovery.
    dcqcn_rate_ai_gbps: f64 = 5.0, "Gb/s", 0.001, 1600;
    /// DCQCN: lowest rate a CNP cuts a QP to.
    dcqcn_min_rate_gbps: f64 = 0.1, "Gb/s", 0.001, 1600;
    /// Sniffer: bandwidth of its dump into host memory.
    sniffer_gbytes_s: f64 = 12.0, "GB/s", 0.001, 1000;
    /// Sniffer: on-card buffer before frames are lost.
    sniffer_buffer_bytes: u64 = 1_048_576, "bytes", 64, 1u64 << 34;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_by_name_checks_kind_and_bounds() {
        let mut p = Params::default();
        p.set("hbm_fetch_ns", "3464").expect("valid");
        assert_eq!(p.hbm_fetch_ns, 3464);
        p.set("link_gbps", "200").expect("valid");
        assert_eq!(p.link_gbps, 200.0);
        let e = p.set("hbm_fetch", "1").expect_err("unknown");
        assert!(e.to_string().contains("hbm_fetch_ns"), "{e}");
        assert!(matches!(
            p.set("window_packets", "0"),
            Err(ParamError::OutOfRange { .. })
        ));
        assert!(matches!(
            p.set("window_packets", "1.5"),
            Err(ParamError::BadValue { .. })
        ));
        assert!(matches!(
            p.set("link_gbps", "-5"),
            Err(ParamError::OutOfRange { .. })
        ));
        assert!(Params::list().iter().all(|i| !i.doc.is_empty()));
        // DCQCN is listed and off unless asked for.
        let dcqcn = Params::list();
        let on = dcqcn.iter().find(|i| i.name == "dcqcn_enabled");
        assert_eq!(on.map(|i| i.default.as_str()), Some("0"));
        assert!(
            dcqcn
                .iter()
                .any(|i| i.name == "dcqcn_rate_ai_gbps" && i.unit == "Gb/s")
        );
        assert_eq!(Params::default().cycle_ps(), 4000);
    }
}
