//! The report's plots, each drawn twice from the same code: into an RGB
//! buffer encoded as PNG (the page shows it) and into SVG (print, zoom).

use std::error::Error;
use std::io::BufWriter;
use std::path::Path;
use std::sync::OnceLock;

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, register_font};
use rocescope_decoders::analysis::{EpisodeCause, Series, rtt_bucket_ns};
use rocescope_replay::store::Flags;
use rocescope_replay::text::{
    self, cause_short, cause_text, duration_text, flag_text, qp_name, qp_route, resample_rate,
    short_opcode, size_text,
};

use crate::ReportError;
use crate::ladder::{self, Ladder};
use crate::view::View;

mod ladder_plot;
mod segments_plot;

use ladder_plot::LadderPlot;
use segments_plot::SegmentsPlot;

type DrawResult = Result<(), Box<dyn Error + Send + Sync>>;

/// The font family every text in the plots uses (registered below).
const FONT: &str = "sans-serif";
/// Plot size in pixels.
const WIDTH: u32 = 1000;
const HEIGHT: u32 = 440;
/// Columns a time series is resampled to: about one per 5 pixels, so that
/// the lines show the trend and its dips rather than every burst.
const COLUMNS: usize = 180;

/// Tableau's ten: distinct for the eye and in greyscale print.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

const GRID: RGBColor = RGBColor(225, 225, 225);
const INK: RGBColor = RGBColor(40, 40, 40);
const MUTED: RGBColor = RGBColor(110, 110, 110);

fn cause_colour(c: EpisodeCause) -> RGBColor {
    match c {
        EpisodeCause::NakSeqErr => RGBColor(214, 39, 40),
        EpisodeCause::Rnr => RGBColor(148, 103, 189),
        EpisodeCause::Timeout => RGBColor(255, 127, 14),
        EpisodeCause::ImpliedNak => RGBColor(140, 86, 75),
    }
}

/// One plot on the page: either drawn (files beside the page) or not, and
/// why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub heading: &'static str,
    /// One line: what to look at.
    pub caption: String,
    pub figure: Option<Figure>,
    /// Why there is no figure (said on the page instead).
    pub absent: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Figure {
    /// File names, relative to the page.
    pub png: String,
    pub svg: String,
    pub width: u32,
    pub height: u32,
    /// Alternative text: what the picture shows.
    pub alt: String,
}

/// A plot that draws on any plotters backend.
trait Plot {
    const NAME: &'static str;
    fn size(&self) -> (u32, u32) {
        (WIDTH, HEIGHT)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static;
}

/// Register the bundled font once: ab_glyph text needs it, and it keeps
/// the PNGs the same on every machine (no system font lookup).
fn fonts() -> Result<(), ReportError> {
    static OK: OnceLock<bool> = OnceLock::new();
    let ok = *OK.get_or_init(|| {
        register_font(FONT, FontStyle::Normal, epaint_default_fonts::UBUNTU_LIGHT).is_ok()
    });
    if ok { Ok(()) } else { Err(ReportError::Font) }
}

/// Draw `plot` to `NAME.png` and `NAME.svg` in `dir`.
fn render<P: Plot>(plot: &P, dir: &Path, alt: String) -> Result<Figure, ReportError> {
    let (w, h) = plot.size();
    let plot_err = |e: Box<dyn Error + Send + Sync>| ReportError::Plot {
        plot: P::NAME,
        message: e.to_string(),
    };
    let mut rgb = vec![255u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw_on(plot, &root).map_err(plot_err)?;
    }
    let png = format!("{}.png", P::NAME);
    write_png(&dir.join(&png), w, h, &rgb)?;
    let mut svg_text = String::new();
    {
        let root = SVGBackend::with_string(&mut svg_text, (w, h)).into_drawing_area();
        draw_on(plot, &root).map_err(plot_err)?;
    }
    let svg = format!("{}.svg", P::NAME);
    let svg_path = dir.join(&svg);
    std::fs::write(&svg_path, svg_text).map_err(|source| ReportError::Write {
        path: svg_path,
        source,
    })?;
    Ok(Figure {
        png,
        svg,
        width: w,
        height: h,
        alt,
    })
}

/// The plot's figure, unless it has nothing to draw.
fn figure_unless<P: Plot>(
    empty: bool,
    plot: &P,
    dir: &Path,
    alt: &str,
) -> Result<Option<Figure>, ReportError> {
    (!empty).then(|| render(plot, dir, alt.into())).transpose()
}

/// A section with `plot` drawn into `dir` (alt text `alt`), or, when it
/// has nothing to draw, the sentence `absent` in its place.
fn plot_section<P: Plot>(
    heading: &'static str,
    caption: String,
    (plot, empty, dir): (&P, bool, &Path),
    alt: &str,
    absent: &str,
) -> Result<Section, ReportError> {
    Ok(Section {
        heading,
        caption,
        figure: figure_unless(empty, plot, dir, alt)?,
        absent: empty.then(|| absent.into()),
    })
}

fn draw_on<P: Plot, DB: DrawingBackend>(plot: &P, root: &DrawingArea<DB, Shift>) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    plot.draw(root)?;
    root.present()?;
    Ok(())
}

fn write_png(path: &Path, w: u32, h: u32, rgb: &[u8]) -> Result<(), ReportError> {
    let io_err = |source: std::io::Error| ReportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::create(path).map_err(io_err)?;
    let mut enc = png::Encoder::new(BufWriter::new(file), w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let encode = |e: png::EncodingError| io_err(std::io::Error::other(e));
    let mut writer = enc.write_header().map_err(encode)?;
    writer.write_image_data(rgb).map_err(encode)?;
    writer.finish().map_err(encode)
}

/// Every plot of the report, in page order.
pub fn render_all(view: &View<'_>, dir: &Path) -> Result<Vec<Section>, ReportError> {
    fonts()?;
    let mut out = Vec::new();

    let t = Throughput::new(view);
    let ordinal_note = if view.time.ordinal {
        " The capture has packet numbers, not times: the x axis counts frames and the y axis is bytes per frame, not a rate."
    } else {
        ""
    };
    out.push(plot_section(
        "Throughput over time",
        format!(
            "Wire throughput of each QP, both directions added. Look for dips: each one the diagnosis explained is listed under Findings.{ordinal_note}"
        ),
        (&t, t.chart.lines.is_empty(), dir),
        "Throughput of each QP over time",
        "No RoCE QP traffic to plot.",
    )?);

    let e = Timeline::new(view);
    out.push(plot_section(
        "Retransmission episodes on the timeline",
        "One lane per QP with episodes or findings. Each block is a retransmission episode, from the first evidence of loss to the last resent frame, coloured by its cause; shaded spans are throughput drops the diagnosis explained.".into(),
        (&e, e.lanes.is_empty(), dir),
        "Retransmission episodes per QP over time",
        "No retransmission episodes and no throughput drops.",
    )?);

    let r = Rtt::new(view);
    out.push(Section {
        heading: "ACK round-trip time distribution",
        caption: "Share of each QP's ACKed requests by round trip (request sent to the ACK that covered it), log scale. A narrow peak is a steady path; a long right tail is queueing or recovery.".into(),
        figure: figure_unless(r.lines.is_empty(), &r, dir, "Distribution of ACK round-trip times per QP")?,
        absent: r.absent.clone(),
    });

    let w = Window::new(view);
    out.push(plot_section(
        "Window occupancy",
        format!(
            "Most packets outstanding (sent, not yet ACKed) per time slice. A QP that sits on the {}-packet line is window-limited: it waits for ACKs, not for the link.",
            w.limit
        ),
        (&w, w.chart.lines.is_empty(), dir),
        "Outstanding packets per QP over time",
        "No RoCE QP traffic to plot.",
    )?);

    let l = ladder::worst(view);
    let (figure, absent) = match &l {
        Some(l) => (
            Some(render(
                &LadderPlot::new(view, l),
                dir,
                "Ladder diagram of the worst retransmission episode".into(),
            )?),
            None,
        ),
        None if view.report.episodes.is_empty() => (
            None,
            Some("No retransmission episodes: nothing to draw.".into()),
        ),
        None => (
            None,
            Some("The worst episode's frames are not in the capture.".into()),
        ),
    };
    if view.points.is_some() {
        let sp = SegmentsPlot::new(view);
        out.push(plot_section(
            "One-way latency per segment",
            "The median one-way latency of each segment between capture points, per slice of time, in the first point's clock. A line that climbs is a queue building on that hop; one direction's line alone rising is the congested way.".into(),
            (&sp, sp.chart.lines.is_empty(), dir),
            "One-way latency per segment over time",
            "No frame was seen at two adjacent points with times.",
        )?);
    }
    out.push(Section {
        heading: "Ladder diagram of the worst episode",
        caption: "The episode with the most packets resent, frame by frame: requests run from the requester (left) to the responder (right), ACKs, NAKs and READ responses back; time runs down. Red marks NAKs, orange the resent packets; the yellow band is the episode.".into(),
        figure,
        absent,
    });
    Ok(out)
}

/// A QP's legend label.
fn qp_legend(view: &View<'_>, qp: usize) -> String {
    view.report
        .qps
        .get(qp)
        .map_or_else(String::new, |q| format!("{}  {}", qp_name(q), qp_route(q)))
}

/// Centre of column `c` of `n` over the view's time span, in ns.
fn column_ns(view: &View<'_>, c: usize, n: usize) -> f64 {
    let t = &view.time;
    let col = (t.t1_ns - t.t0_ns) as f64 / n.max(1) as f64;
    t.t0_ns as f64 + (c as f64 + 0.5) * col
}

/// A line per QP over the view's time span.
type Line = (String, RGBColor, Vec<(f64, f64)>);

/// A rounded-up axis end with headroom for the legend.
fn headroom(max: f64) -> f64 {
    if max > 0.0 { max * 1.3 } else { 1.0 }
}

fn legend_box<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(GRID)
        .label_font((FONT, 14).into_font().color(&INK))
        .draw()?;
    Ok(())
}

struct Throughput<'v> {
    /// Its y values scaled to the unit of its y axis.
    chart: TimeLines<'v>,
}

impl<'v> Throughput<'v> {
    fn new(view: &'v View<'v>) -> Throughput<'v> {
        let (t0, t1) = (view.time.t0_ns as f64, view.time.t1_ns as f64);
        let mut raw: Vec<(usize, Vec<f64>)> = Vec::new();
        for &qp in &view.plotted {
            let Some(q) = view.report.qps.get(qp) else {
                continue;
            };
            if view.time.ordinal {
                // Series bins are 1,000 "ns" wide, here 1,000 frames: too
                // coarse; the rows themselves give bytes per frame.
                raw.push((qp, Vec::new()));
                continue;
            }
            let mut sum = resample_rate(&q.series, t0, t1, COLUMNS);
            if let Some(r) = &q.reverse_series {
                for (s, v) in sum.iter_mut().zip(resample_rate(r, t0, t1, COLUMNS)) {
                    *s += v;
                }
            }
            raw.push((qp, sum));
        }
        // Ordinal axes span t1 - t0 frames: no more columns than that.
        let n = if view.time.ordinal {
            let frames = (view.time.t1_ns - view.time.t0_ns) as usize;
            let n = frames.clamp(1, COLUMNS);
            ordinal_bytes_per_frame(view, &mut raw, n);
            n
        } else {
            COLUMNS
        };
        // With several QPs, their sum: what the link carried.
        let total: Option<Vec<f64>> = (raw.len() > 1).then(|| {
            let mut t = vec![0.0; n];
            for (_, v) in &raw {
                for (s, x) in t.iter_mut().zip(v) {
                    *s += x;
                }
            }
            t
        });
        let max = raw
            .iter()
            .map(|(_, v)| v)
            .chain(total.as_ref())
            .flat_map(|v| v.iter().copied())
            .fold(0.0, f64::max);
        // GB/s for fast links, MB/s when that would show only decimals.
        let (scale, y_unit) = if view.time.ordinal {
            (1.0, "wire bytes per frame")
        } else if max >= 0.5 {
            (1.0, "wire throughput (GB/s)")
        } else {
            (1e3, "wire throughput (MB/s)")
        };
        let points = |v: &[f64]| -> Vec<(f64, f64)> {
            v.iter()
                .enumerate()
                .map(|(c, r)| (view.time.x(column_ns(view, c, n) as u64), r * scale))
                .collect()
        };
        let mut lines: Vec<Line> = Vec::new();
        if let Some(t) = &total {
            let label = if view.plotted.len() < view.report.qps.len() {
                format!("the {} busiest QPs together", view.plotted.len())
            } else {
                "all QPs together".to_owned()
            };
            lines.push((label, INK, points(t)));
        }
        for (k, (qp, v)) in raw.iter().enumerate() {
            lines.push((qp_legend(view, *qp), PALETTE[k % PALETTE.len()], points(v)));
        }
        Throughput {
            chart: TimeLines {
                view,
                title: "Throughput per QP",
                y_desc: y_unit,
                y_max: headroom(max * scale),
                lines,
                limit: None,
            },
        }
    }
}

/// Wire bytes per frame of each QP in `raw` (filled in, `n` columns of
/// frame indices), from the store's rows: for captures without times.
fn ordinal_bytes_per_frame(view: &View<'_>, raw: &mut [(usize, Vec<f64>)], n: usize) {
    let store = view.store;
    let convs: Vec<(Option<u32>, Option<u32>)> = raw
        .iter()
        .map(|(qp, _)| {
            view.report
                .qps
                .get(*qp)
                .map_or((None, None), |q| ladder::conversations(store, q))
        })
        .collect();
    for (_, v) in raw.iter_mut() {
        *v = vec![0.0; n];
    }
    let span = (view.time.t1_ns - view.time.t0_ns) as f64;
    let frames_per_col = span / n as f64;
    let mut buf = Vec::new();
    let mut at = 0u64;
    while at < store.len() {
        let end = (at + 4096).min(store.len());
        buf.clear();
        store.rows(at..end, &mut buf);
        for r in &buf {
            let idx = r.ts_ns.saturating_sub(view.time.t0_ns) as f64;
            let c = ((idx / frames_per_col) as usize).min(n - 1);
            for ((_, v), (req, resp)) in raw.iter_mut().zip(&convs) {
                if Some(r.conversation) == *req || Some(r.conversation) == *resp {
                    v[c] += f64::from(r.origlen) / frames_per_col;
                }
            }
        }
        at = end;
    }
}

/// A chart builder in the report's style: its title, margins and x
/// labels' room.
fn house_chart<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(title, (FONT, 22).into_font().color(&INK))
        .margin(14)
        .x_label_area_size(48);
    builder
}

/// The mesh in the report's style: its fonts, and grid lines at the
/// labels only.
fn house_mesh<'m, 'a, 'b, X, Y, DB>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged,
    Y: Ranged,
    DB: DrawingBackend,
{
    mesh.label_style((FONT, 14).into_font().color(&INK))
        .axis_desc_style((FONT, 15).into_font().color(&INK))
        .light_line_style(WHITE)
        .bold_line_style(GRID)
}

/// A line chart of `lines` over time.
struct TimeLines<'v> {
    view: &'v View<'v>,
    title: &'static str,
    y_desc: &'static str,
    y_max: f64,
    lines: Vec<Line>,
    /// A dashed line at this height, with its legend.
    limit: Option<(f64, String)>,
}

/// A plot that is a [`TimeLines`] chart.
trait TimePlot {
    const NAME: &'static str;
    fn chart(&self) -> &TimeLines<'_>;
}

impl<T: TimePlot> Plot for T {
    const NAME: &'static str = <T as TimePlot>::NAME;
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        self.chart().draw(root)
    }
}

impl TimeLines<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let &TimeLines {
            view,
            title,
            y_desc,
            y_max,
            ref lines,
            ref limit,
        } = self;
        let mut chart = house_chart(root, title)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..view.time.x_max(), 0f64..y_max)?;
        house_mesh(&mut chart.configure_mesh())
            .x_desc(view.time.label())
            .y_desc(y_desc)
            .x_label_formatter(&|v| short_number(*v))
            .y_label_formatter(&|v| short_number(*v))
            .draw()?;
        if let Some((y, label)) = limit.clone() {
            let red = RGBColor(200, 30, 30);
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, y), (view.time.x_max(), y)],
                    8,
                    5,
                    red.stroke_width(2),
                ))?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(2))
                });
        }
        for (label, colour, pts) in lines {
            let colour = *colour;
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), colour.stroke_width(2)))?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3))
                });
        }
        legend_box(&mut chart)
    }
}

impl TimePlot for Throughput<'_> {
    const NAME: &'static str = "throughput";
    fn chart(&self) -> &TimeLines<'_> {
        &self.chart
    }
}

/// Most lanes the episode timeline draws.
const MAX_LANES: usize = 12;

struct Timeline<'v> {
    view: &'v View<'v>,
    /// Report QP indices, one lane each, top to bottom.
    lanes: Vec<usize>,
}

impl<'v> Timeline<'v> {
    fn new(view: &'v View<'v>) -> Timeline<'v> {
        let r = view.report;
        let mut lanes: Vec<usize> = r
            .episodes
            .iter()
            .map(|e| e.qp as usize)
            .chain(r.findings.iter().map(|f| f.qp as usize))
            .filter(|&q| q < r.qps.len())
            .collect();
        lanes.sort_unstable();
        lanes.dedup();
        lanes.truncate(MAX_LANES);
        Timeline { view, lanes }
    }
}

impl Plot for Timeline<'_> {
    const NAME: &'static str = "episodes";
    fn size(&self) -> (u32, u32) {
        (WIDTH, 170 + 44 * self.lanes.len() as u32)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let view = self.view;
        let x_max = view.time.x_max();
        let n = self.lanes.len() as f64;
        let mut chart = house_chart(root, "Retransmission episodes per QP")
            .margin_right(190)
            .y_label_area_size(110)
            .build_cartesian_2d(0f64..x_max, 0f64..n)?;
        house_mesh(&mut chart.configure_mesh())
            .x_desc(view.time.label())
            .x_label_formatter(&|v| short_number(*v))
            .y_labels(0)
            .y_label_formatter(&|_| String::new())
            .disable_y_mesh()
            .draw()?;
        // Lane of a QP, counted from the top.
        let lane_y = |qp: u32| {
            self.lanes
                .iter()
                .position(|&l| l == qp as usize)
                .map(|i| n - 1.0 - i as f64)
        };
        let min_w = x_max * 0.004;
        // A span of a QP's lane, from `lo` to `hi` of the lane's height.
        let span = |qp: u32, start_ns: u64, end_ns: u64, (lo, hi): (f64, f64), c: RGBColor| {
            let y = lane_y(qp)?;
            let x0 = view.time.x(start_ns);
            let x1 = view.time.x(end_ns).max(x0 + min_w);
            Some(Rectangle::new([(x0, y + lo), (x1, y + hi)], c.filled()))
        };
        let shade = RGBColor(255, 214, 153);
        let findings: Vec<_> = view
            .report
            .findings
            .iter()
            .filter_map(|f| span(f.qp, f.start_ns, f.end_ns, (0.05, 0.95), shade))
            .collect();
        let has_findings = !findings.is_empty();
        chart.draw_series(findings)?;
        for cause in text::CAUSES {
            let colour = cause_colour(cause);
            let blocks: Vec<_> = view
                .report
                .episodes
                .iter()
                .filter(|e| e.cause == cause)
                .filter_map(|e| span(e.qp, e.start_ns, e.end_ns, (0.25, 0.75), colour))
                .collect();
            chart.draw_series(blocks)?;
        }
        // Lane names in the y label area, and lines between the lanes.
        let label = TextStyle::from((FONT, 14).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Right, VPos::Center));
        for (i, &qp) in self.lanes.iter().enumerate() {
            let y = n - 1.0 - i as f64;
            let (px, py) = chart.backend_coord(&(0.0, y + 0.5));
            if let Some(q) = view.report.qps.get(qp) {
                root.draw(&Text::new(qp_name(q), (px - 8, py), label.clone()))?;
            }
            if i > 0 {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(0.0, y + 1.0), (x_max, y + 1.0)],
                    GRID,
                )))?;
            }
        }
        // The legend in the right margin, where it hides no lane.
        let mut items = Vec::new();
        if has_findings {
            items.push((shade, "throughput drop (finding)".to_owned()));
        }
        for cause in text::CAUSES {
            if view.report.episodes.iter().any(|e| e.cause == cause) {
                items.push((
                    cause_colour(cause),
                    format!("episode: {}", cause_short(cause)),
                ));
            }
        }
        let style = TextStyle::from((FONT, 14).into_font())
            .color(&INK)
            .pos(Pos::new(HPos::Left, VPos::Center));
        let x = WIDTH as i32 - 186;
        for (i, (colour, name)) in items.into_iter().enumerate() {
            let y = 70 + 24 * i as i32;
            root.draw(&Rectangle::new(
                [(x, y - 7), (x + 18, y + 7)],
                colour.filled(),
            ))?;
            root.draw(&Text::new(name, (x + 26, y), style.clone()))?;
        }
        Ok(())
    }
}

/// A QP's histogram: legend, colour, (bucket lower µs, upper µs, share %).
type Histogram = (String, RGBColor, Vec<(f64, f64, f64)>);

struct Rtt {
    lines: Vec<Histogram>,
    x_range: (f64, f64),
    y_max: f64,
    absent: Option<String>,
}

impl Rtt {
    fn new(view: &View<'_>) -> Rtt {
        let mut rtt = Rtt {
            lines: Vec::new(),
            x_range: (f64::MAX, 0.0),
            y_max: 0.0,
            absent: None,
        };
        if view.time.ordinal {
            rtt.absent = Some(
                "The capture has packet numbers, not times: no round trip can be measured.".into(),
            );
            return rtt;
        }
        for (k, &qp) in view.plotted.iter().enumerate() {
            let Some(q) = view.report.qps.get(qp) else {
                continue;
            };
            let total: u64 = q.rtt_histogram.iter().map(|(_, n)| n).sum();
            if total == 0 {
                continue;
            }
            let bars: Vec<(f64, f64, f64)> = q
                .rtt_histogram
                .iter()
                .map(|&(lower, n)| {
                    let (lo, hi) = rtt_bucket_ns(lower);
                    // The log axis has no zero: a 0 ns bucket starts at 1 ns.
                    let lo = lo.max(1) as f64 / 1e3;
                    let hi = (hi.max(2) as f64 / 1e3).max(lo);
                    (lo, hi, n as f64 * 100.0 / total as f64)
                })
                .collect();
            for &(lo, hi, share) in &bars {
                rtt.x_range.0 = rtt.x_range.0.min(lo);
                rtt.x_range.1 = rtt.x_range.1.max(hi);
                rtt.y_max = rtt.y_max.max(share);
            }
            let pct = |v: Option<u64>| v.map_or("-".to_owned(), duration_text);
            let label = format!(
                "{}  p50 {}  p99 {}",
                qp_name(q),
                pct(q.rtt_p50_ns),
                pct(q.rtt_p99_ns)
            );
            rtt.lines.push((label, PALETTE[k % PALETTE.len()], bars));
        }
        if rtt.lines.is_empty() {
            rtt.absent = Some("No request was ACKed in the capture: no round trip to show.".into());
        }
        // Whole decades: the log axis labels powers of ten and the steps
        // between, so the range must hold at least one.
        if !rtt.lines.is_empty() {
            let lo = 10f64.powf(rtt.x_range.0.log10().floor());
            let mut hi = 10f64.powf(rtt.x_range.1.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
            rtt.x_range = (lo, hi);
        }
        rtt.y_max = headroom(rtt.y_max);
        rtt
    }
}

impl Plot for Rtt {
    const NAME: &'static str = "rtt";
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let mut chart = house_chart(root, "ACK round-trip time per QP")
            .y_label_area_size(70)
            .build_cartesian_2d(
                (self.x_range.0..self.x_range.1).log_scale(),
                0f64..self.y_max,
            )?;
        house_mesh(&mut chart.configure_mesh())
            .x_desc("round trip, request to ACK (µs, log scale)")
            .y_desc("share of ACKed requests (%)")
            .x_label_formatter(&|v| short_number(*v))
            .y_label_formatter(&|v| short_number(*v))
            .draw()?;
        for (label, colour, bars) in &self.lines {
            let colour = *colour;
            // The histogram's outline: a step up and down per bucket, down to
            // zero across empty buckets.
            let mut pts = Vec::with_capacity(bars.len() * 4 + 2);
            let mut prev_hi: Option<f64> = None;
            for &(lo, hi, share) in bars {
                if prev_hi.is_some_and(|p| p < lo) {
                    pts.push((prev_hi.unwrap_or(lo), 0.0));
                    pts.push((lo, 0.0));
                } else if prev_hi.is_none() {
                    pts.push((lo, 0.0));
                }
                pts.push((lo, share));
                pts.push((hi, share));
                prev_hi = Some(hi);
            }
            if let Some(hi) = prev_hi {
                pts.push((hi, 0.0));
            }
            chart.draw_series(std::iter::once(Polygon::new(pts.clone(), colour.mix(0.15))))?;
            chart
                .draw_series(LineSeries::new(pts, colour.stroke_width(2)))?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3))
                });
        }
        legend_box(&mut chart)
    }
}

/// A tick label without trailing zeros: 0.5, 2, 150.
fn short_number(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

struct Window<'v> {
    chart: TimeLines<'v>,
    limit: u32,
}

/// Largest `max_outstanding` of the bins each column covers (the bin a
/// column lies in when bins are wider than columns), and whether any of
/// them saw a packet of the QP.
fn resample_outstanding(s: &Series, start_ns: f64, end_ns: f64, n: usize) -> Vec<(f64, bool)> {
    let mut out = vec![(0.0, false); n];
    if n == 0 || s.bins.is_empty() || s.bin_ns == 0 || end_ns <= start_ns {
        return out;
    }
    let col_ns = (end_ns - start_ns) / n as f64;
    let (bin_ns, origin, nb) = (s.bin_ns as f64, s.start_ns as f64, s.bins.len());
    for (c, slot) in out.iter_mut().enumerate() {
        let a = start_ns + c as f64 * col_ns;
        let first = ((a - origin) / bin_ns).floor();
        let last = ((a + col_ns - origin) / bin_ns).ceil() - 1.0;
        if last < 0.0 || first >= nb as f64 {
            continue;
        }
        let first = first.max(0.0) as usize;
        let last = (last as usize).min(nb - 1);
        for b in &s.bins[first..=last] {
            slot.0 = slot.0.max(f64::from(b.max_outstanding));
            slot.1 |= b.packets > 0 || b.max_outstanding > 0;
        }
    }
    out
}

impl<'v> Window<'v> {
    fn new(view: &'v View<'v>) -> Window<'v> {
        let (t0, t1) = (view.time.t0_ns as f64, view.time.t1_ns as f64);
        // The window each QP shows (configured, else the most it had
        // outstanding); the line marks the largest of the plotted QPs'.
        let limit = view
            .plotted
            .iter()
            .filter_map(|&qp| view.report.qps.get(qp))
            .map(|q| q.window_packets)
            .max()
            .unwrap_or(0);
        let mut max = f64::from(limit);
        let mut lines = Vec::new();
        for (k, &qp) in view.plotted.iter().enumerate() {
            let Some(q) = view.report.qps.get(qp) else {
                continue;
            };
            let mut cols = resample_outstanding(&q.series, t0, t1, COLUMNS);
            if let Some(r) = &q.reverse_series {
                for (s, o) in cols
                    .iter_mut()
                    .zip(resample_outstanding(r, t0, t1, COLUMNS))
                {
                    *s = (s.0.max(o.0), s.1 || o.1);
                }
            }
            // Carried through slices without a packet either way, as the
            // diagnosis does: a stalled window is silent, yet full.
            let mut carried = 0.0;
            let v: Vec<f64> = cols
                .iter()
                .map(|&(max, seen)| {
                    if seen {
                        carried = max;
                    }
                    carried
                })
                .collect();
            max = v.iter().copied().fold(max, f64::max);
            let pts = v
                .iter()
                .enumerate()
                .map(|(c, o)| (view.time.x(column_ns(view, c, COLUMNS) as u64), *o))
                .collect();
            lines.push((qp_legend(view, qp), PALETTE[k % PALETTE.len()], pts));
        }
        Window {
            chart: TimeLines {
                view,
                title: "Window occupancy per QP",
                y_desc: "packets outstanding (most per slice)",
                y_max: headroom(max),
                lines,
                limit: Some((f64::from(limit), format!("window: {limit} packets"))),
            },
            limit,
        }
    }
}

impl TimePlot for Window<'_> {
    const NAME: &'static str = "window";
    fn chart(&self) -> &TimeLines<'_> {
        &self.chart
    }
}
