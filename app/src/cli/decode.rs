//! `rocescope decode`: one record per frame, text (tshark-like) or JSONL
//! (Wireshark field names, integer values).

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use rocescope_decoders::analysis::{Class, Observation, RcAnalysis};
use rocescope_decoders::{DecodeConfig, FieldValue, LinkLayer, Packet, Syndrome, decode};
use rocescope_replay::wave::WaveOptions;
use rocescope_replay::{CaptureError, CaptureReader, PcapngWriter, TimeBase};

use super::args::{DecodeOpts, WaveArgs};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Capture file (classic pcap, pcapng, sniffer dump) or waveform (VCD, FST,
    /// a Vivado ILA capture as CSV or VCD).
    file: PathBuf,
    /// Output: one summary line per frame, or one JSON object per frame.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write the frames as pcapng to this file instead of decoding them
    /// (a waveform's interfaces become its interfaces); `-` for standard
    /// output (`--to - | tshark -r -`).
    #[arg(long, value_name = "FILE")]
    to: Option<PathBuf>,
    #[command(flatten)]
    wave_args: WaveArgs,
    #[command(flatten)]
    decode: DecodeOpts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Text,
    Jsonl,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let wave = args.wave_args.options();
    match args.to {
        Some(to) => to_pcapng(&args.file, &wave, &to),
        None => decode_file(
            &args.file,
            args.format == Format::Jsonl,
            &args.decode.config(),
            &wave,
        ),
    }
}

fn open(file: &Path, wave: &WaveOptions) -> anyhow::Result<CaptureReader<std::fs::File>> {
    match CaptureReader::open_with(file, wave) {
        Ok(r) => Ok(r),
        // The open error already names the path; the others say where in it.
        Err(e @ (CaptureError::Open { .. } | CaptureError::Wave(_))) => Err(e.into()),
        Err(e) => Err(anyhow::Error::new(e).context(file.display().to_string())),
    }
}

fn decode_file(
    file: &Path,
    jsonl: bool,
    cfg: &DecodeConfig,
    wave: &WaveOptions,
) -> anyhow::Result<()> {
    let name = file.display().to_string();
    // Two passes: the RC analysis must see the whole capture before a
    // packet's verdict is final (a gap is capture loss only once ACKs cover it).
    let first = open(file, wave)?;
    tell_interfaces(&name, &first);
    let verdicts = analyse(first, cfg)?;
    let out = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, out.lock());
    decode_stream(open(file, wave)?, &name, jsonl, cfg, &verdicts, &mut out)?;
    out.flush()?;
    Ok(())
}

/// A waveform's interfaces, one line each on stderr: which port is which.
fn tell_interfaces<R: io::Read>(name: &str, reader: &CaptureReader<R>) {
    let Some(w) = reader.wave() else {
        return;
    };
    for (port, i) in w.interfaces().iter().enumerate() {
        eprintln!("rocescope: {name}: port {port}: {}", describe(i));
    }
}

/// One interface in words: `tb.u0 (512-bit tdata, clock tb.clk, tkeep, tready)`.
pub fn describe(i: &rocescope_replay::wave::AxisInterface) -> String {
    let mut s = format!(
        "AXI4-Stream {} ({}-bit tdata, clock {}",
        i.name, i.width_bits, i.clock_name
    );
    s.push_str(if i.has_tkeep { ", tkeep" } else { ", no tkeep" });
    s.push_str(if i.has_tready {
        ", tready)"
    } else {
        ", no tready)"
    });
    s
}

/// `rocescope decode FILE --to OUT.pcapng`: the frames as pcapng, each
/// port (a waveform's interface) its own interface. A file is written
/// beside itself and renamed when whole; `-` (standard output), a pipe or
/// a device is written straight (renaming over one would replace it with
/// a file), its summary then on stderr.
fn to_pcapng(file: &Path, wave: &WaveOptions, to: &Path) -> anyhow::Result<()> {
    let name = file.display().to_string();
    let mut reader = open(file, wave)?;
    tell_interfaces(&name, &reader);
    let target = Target::of(to)?;
    // The sink, and the name its write errors give.
    let (out, writing): (Box<dyn Write>, String) = match &target {
        Target::Stdout => (Box::new(io::stdout().lock()), "-".to_owned()),
        Target::Stream => (
            Box::new(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(to)
                    .with_context(|| format!("cannot open {}", to.display()))?,
            ),
            to.display().to_string(),
        ),
        Target::File { partial } => (
            Box::new(
                std::fs::File::create(partial)
                    .with_context(|| format!("cannot create {}", partial.display()))?,
            ),
            partial.display().to_string(),
        ),
    };
    let mut w = PcapngWriter::new(out).with_context(|| format!("writing {writing}"))?;
    if let Some(wave) = reader.wave() {
        for (port, i) in wave.interfaces().iter().enumerate() {
            w.describe_port(u8::try_from(port).unwrap_or(u8::MAX), &describe(i));
        }
    }
    // A read error (a cut waveform) still leaves every frame before it in
    // the file, and is told after.
    let failed = loop {
        match reader.next_frame() {
            Ok(Some(f)) => {
                let port = f
                    .port
                    .unwrap_or_else(|| u8::try_from(f.interface).unwrap_or(u8::MAX));
                w.write_frame(f.ts_ns, port, f.direction, f.origlen, f.data)
                    .with_context(|| format!("writing {writing}"))?;
            }
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    let frames = w.frames_written();
    w.finish().with_context(|| format!("writing {writing}"))?;
    print_warnings(&name, &reader);
    let done = format!("{frames} frames written to {}", to.display());
    match &target {
        Target::File { partial } => {
            std::fs::rename(partial, to)
                .with_context(|| format!("cannot write {}", to.display()))?;
            println!("{done}");
        }
        // Standard output carries the pcapng.
        _ => eprintln!("rocescope: {done}"),
    }
    match failed {
        // A waveform's error names the file itself.
        Some(e @ CaptureError::Wave(_)) => Err(e.into()),
        Some(e) => Err(anyhow::Error::new(e).context(format!("reading {name}"))),
        None => Ok(()),
    }
}

/// Where `decode --to` writes.
enum Target {
    /// `-`.
    Stdout,
    /// A pipe or a device, written straight.
    Stream,
    /// A file, written to `partial` then renamed.
    File { partial: PathBuf },
}

impl Target {
    fn of(to: &Path) -> anyhow::Result<Target> {
        use rocescope_replay::NotAFile;
        Ok(match NotAFile::of(to) {
            None => Target::File {
                partial: to.with_extension("pcapng.partial"),
            },
            Some(NotAFile::StandardInput) => Target::Stdout,
            Some(NotAFile::Folder) => {
                anyhow::bail!(
                    "cannot write {}: a folder; name the pcapng file",
                    to.display()
                )
            }
            Some(NotAFile::Pipe | NotAFile::Socket | NotAFile::Device) => Target::Stream,
        })
    }
}

fn print_warnings<R: io::Read>(name: &str, reader: &CaptureReader<R>) {
    let wave = reader.wave().is_some();
    for w in reader.warnings() {
        if wave {
            eprintln!("rocescope: warning: {name}: {}", w.message);
        } else {
            eprintln!(
                "rocescope: warning: {name}: {} (at byte {})",
                w.message, w.offset
            );
        }
    }
}

/// The RC analysis verdict of every frame: its class and QP conversation.
pub struct Verdicts {
    class: Vec<Class>,
    qp: Vec<Option<u32>>,
}

/// First pass: run the RC analysis over the whole capture.
pub(super) fn analyse<R: io::Read>(
    mut reader: CaptureReader<R>,
    cfg: &DecodeConfig,
) -> anyhow::Result<Verdicts> {
    let mut an = RcAnalysis::default();
    let mut v = Verdicts {
        class: Vec::new(),
        qp: Vec::new(),
    };
    // An error ends the pass; the second pass prints the frames before it,
    // then the error.
    while let Ok(Some(frame)) = reader.next_frame() {
        let index = v.class.len() as u64;
        let obs = LinkLayer::from_linktype(frame.linktype.0).and_then(|link| {
            Observation::from_packet(&decode(frame.data, link, cfg), frame.ts_ns, frame.origlen)
        });
        let (class, qp) = match obs {
            Some(o) => (an.observe(index, &o), an.qp_of(o.src, o.dst, o.dest_qp)),
            None => (Class::default(), None),
        };
        v.class.push(class);
        v.qp.push(qp);
        for late in an.drain_late() {
            if let Some(c) = v.class.get_mut(late.index as usize) {
                c.0 = (c.0 & !late.clear.0) | late.set.0;
            }
        }
    }
    // Flows paired late join their requester's QP: map to final ids.
    let map = an.slot_to_report();
    for q in v.qp.iter_mut().flatten() {
        *q = map.get(*q as usize).copied().unwrap_or(*q);
    }
    Ok(v)
}

pub(super) fn decode_stream<R: io::Read>(
    mut reader: CaptureReader<R>,
    name: &str,
    jsonl: bool,
    cfg: &DecodeConfig,
    verdicts: &Verdicts,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut first_ts_ns: Option<u64> = None;
    let mut unknown_links = 0u64;
    loop {
        // The reader decides the time base by looking ahead when it opens.
        let ordinal = reader.time_base() == TimeBase::Ordinal;
        let Some(frame) = reader.next_frame().map_err(|e| match e {
            // A waveform's error names the file itself.
            e @ CaptureError::Wave(_) => anyhow::Error::new(e),
            e => anyhow::Error::new(e).context(format!("reading {name}")),
        })?
        else {
            break;
        };
        let Some(link) = LinkLayer::from_linktype(frame.linktype.0) else {
            unknown_links += 1;
            if jsonl {
                writeln!(
                    out,
                    "{{\"frame\":{},\"icrc\":\"none\",\"rocescope.stop\":\"link type {} not decoded\"}}",
                    frame.index + 1,
                    frame.linktype.0
                )?;
            } else {
                writeln!(
                    out,
                    "{:>7} link type {} ({}) not decoded",
                    frame.index + 1,
                    frame.linktype.0,
                    frame.linktype.name()
                )?;
            }
            continue;
        };
        let p = decode(frame.data, link, cfg);
        let number = frame.index + 1;
        let i = frame.index as usize;
        let verdict = (
            verdicts.class.get(i).copied().unwrap_or_default(),
            verdicts.qp.get(i).copied().flatten(),
        );
        if jsonl {
            write_jsonl(
                out,
                number,
                frame.ts_ns,
                ordinal,
                frame.origlen,
                &p,
                verdict,
            )?;
        } else {
            let t0 = *first_ts_ns.get_or_insert(frame.ts_ns);
            if ordinal {
                write!(out, "{number:>7} {:>16} ", format!("#{}", frame.ts_ns))?;
            } else {
                let rel = frame.ts_ns.saturating_sub(t0);
                write!(
                    out,
                    "{number:>7} {:>6}.{:09} ",
                    rel / 1_000_000_000,
                    rel % 1_000_000_000
                )?;
            }
            write!(out, "{}", p.summary())?;
            write_flags(out, verdict.0)?;
            writeln!(out)?;
        }
    }
    print_warnings(name, &reader);
    if unknown_links > 0 {
        eprintln!(
            "rocescope: warning: {name}: {unknown_links} frames of link types rocescope does not decode"
        );
    }
    Ok(())
}

/// Analysis flags the way Wireshark shows TCP analysis flags.
fn write_flags(out: &mut impl Write, c: Class) -> io::Result<()> {
    if c.contains(Class::RETRANSMISSION) {
        write!(out, " [Retransmission]")?;
    }
    if c.contains(Class::DUPLICATE) {
        write!(out, " [Duplicate]")?;
    }
    if c.contains(Class::OUT_OF_SEQUENCE) {
        write!(out, " [Out-Of-Sequence]")?;
    }
    if c.contains(Class::CAPTURE_LOSS) {
        write!(out, " [Previous packets not captured]")?;
    }
    Ok(())
}

fn write_jsonl(
    out: &mut impl Write,
    number: u64,
    ts_ns: u64,
    ordinal: bool,
    origlen: u32,
    p: &Packet<'_>,
    (class, qp): (Class, Option<u32>),
) -> io::Result<()> {
    write!(out, "{{\"frame\":{number}")?;
    if ordinal {
        write!(out, ",\"ordinal\":{ts_ns}")?;
    } else {
        write!(out, ",\"ts_ns\":{ts_ns}")?;
    }
    write!(
        out,
        ",\"frame.len\":{origlen},\"frame.cap_len\":{}",
        p.frame().len()
    )?;
    let mut seen: Vec<&'static str> = Vec::with_capacity(64);
    let mut err = Ok(());
    p.for_each_field(&mut |f| {
        if f.depth == 0 || seen.contains(&f.name) || err.is_err() {
            return;
        }
        seen.push(f.name);
        err = match f.value {
            FieldValue::U64(v) => write!(out, ",\"{}\":{v}", f.name),
            FieldValue::Bool(b) => write!(out, ",\"{}\":{}", f.name, u8::from(b)),
            FieldValue::Ipv4(a) => {
                write!(out, ",\"{}\":\"{}\"", f.name, std::net::Ipv4Addr::from(a))
            }
            FieldValue::Ipv6(a) => {
                write!(out, ",\"{}\":\"{}\"", f.name, std::net::Ipv6Addr::from(a))
            }
            FieldValue::Mac(m) => write!(
                out,
                ",\"{}\":\"{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}\"",
                f.name, m[0], m[1], m[2], m[3], m[4], m[5]
            ),
            FieldValue::Bytes(_) => Ok(()),
        };
    });
    err?;
    write!(out, ",\"icrc\":\"{}\"", p.icrc().as_str())?;
    if p.lrh().is_some() {
        write!(out, ",\"vcrc\":\"{}\"", p.vcrc().as_str())?;
    }
    if p.bth().is_some() {
        write!(
            out,
            ",\"rocescope.retransmission\":{},\"rocescope.duplicate\":{},\"rocescope.out_of_sequence\":{},\"rocescope.capture_loss\":{}",
            class.contains(Class::RETRANSMISSION),
            class.contains(Class::DUPLICATE),
            class.contains(Class::OUT_OF_SEQUENCE),
            class.contains(Class::CAPTURE_LOSS)
        )?;
        if let Some(s) = p.ext().aeth().map(|a| a.syndrome()).filter(|s| s.is_nak()) {
            write!(out, ",\"rocescope.nak\":\"{}\"", Syndrome::kind_name(s))?;
        }
        if let Some(qp) = qp {
            write!(out, ",\"rocescope.conversation\":{qp}")?;
        }
    }
    if let Some(stop) = p.stop() {
        write!(out, ",\"rocescope.stop\":")?;
        serde_json::to_writer(&mut *out, &stop.to_string()).map_err(io::Error::other)?;
    }
    writeln!(out, "}}")
}
