//! Overview: throughput per QP, counters, the diagnosis.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph, Wrap};
use rocescope_core::Model;
use rocescope_core::query::size_text;
use rocescope_decoders::analysis::Series;

use super::{CYAN, DIM, GREEN, MAGENTA, RED, UiState, YELLOW, title};

/// Points of a series decimated to about two per column.
fn series_points(s: &Series, t0: u64, width: u16) -> Vec<(f64, f64)> {
    let n = s.bins.len();
    if n == 0 {
        return Vec::new();
    }
    let per = (n / (usize::from(width.max(1)) * 2)).max(1);
    (0..n)
        .step_by(per)
        .map(|i| {
            let end = (i + per).min(n);
            let mut max = 0.0f64;
            for j in i..end {
                max = max.max(s.rate_gbytes_s(j));
            }
            ((s.bin_start_ns(i).saturating_sub(t0)) as f64 / 1e6, max)
        })
        .collect()
}

/// A counter's line (its label in the column of the others), in `colour`
/// while it is not zero.
fn counter(label: &str, n: u64, colour: Color) -> Line<'static> {
    let colour = if n > 0 { colour } else { Color::Reset };
    Line::from(Span::styled(
        format!("{label:<14} {n}"),
        Style::default().fg(colour),
    ))
}

pub(super) fn overview(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let report = model.report();
    let rows =
        Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).split(area);
    // Several capture points: each segment's one-way latency beside the
    // throughput.
    let (top, latency_area) = if model.points().is_some() {
        let cols = Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)])
            .split(rows[0]);
        (cols[0], Some(cols[1]))
    } else {
        (rows[0], None)
    };
    let t0 = model.store().stats().first_ts_ns.unwrap_or(0);
    let colors = [
        GREEN,
        CYAN,
        YELLOW,
        MAGENTA,
        Color::Blue,
        RED,
        Color::White,
        Color::LightGreen,
    ];
    let width = top.width.saturating_sub(10);
    let data: Vec<Vec<(f64, f64)>> = report
        .qps
        .iter()
        .take(8)
        .map(|q| series_points(&q.series, t0, width))
        .collect();
    let rev: Vec<Vec<(f64, f64)>> = report
        .qps
        .iter()
        .take(8)
        .map(|q| {
            q.reverse_series
                .as_ref()
                .map(|s| series_points(s, t0, width))
                .unwrap_or_default()
        })
        .collect();
    let mut max_y = 0.1f64;
    let mut max_x = 0.001f64;
    for d in data.iter().chain(rev.iter()) {
        for (x, y) in d {
            max_y = max_y.max(*y);
            max_x = max_x.max(*x);
        }
    }
    let cursor_ms = model.cursor_ns().saturating_sub(t0) as f64 / 1e6;
    let cursor = [(cursor_ms, 0.0), (cursor_ms, max_y)];
    let mut datasets: Vec<Dataset<'_>> = Vec::new();
    for (i, d) in data.iter().enumerate() {
        datasets.push(
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(colors[i % colors.len()]))
                .data(d),
        );
    }
    for (i, d) in rev.iter().enumerate() {
        if !d.is_empty() {
            datasets.push(
                Dataset::default()
                    .marker(Marker::Dot)
                    .graph_type(GraphType::Line)
                    .style(
                        Style::default()
                            .fg(colors[i % colors.len()])
                            .add_modifier(Modifier::DIM),
                    )
                    .data(d),
            );
        }
    }
    datasets.push(
        Dataset::default()
            .marker(Marker::Block)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(Color::White))
            .data(&cursor),
    );
    // The legend on the bottom border, never over the data.
    let mut legend = vec![Span::raw(" ")];
    for (i, q) in report.qps.iter().take(8).enumerate() {
        legend.push(Span::styled(
            "━━ ",
            Style::default().fg(colors[i % colors.len()]),
        ));
        legend.push(Span::raw(format!(
            "{}  ",
            rocescope_replay::text::qp_name(q)
        )));
    }
    if report.qps.len() > 8 {
        legend.push(Span::raw(format!("+{} QPs  ", report.qps.len() - 8)));
    }
    legend.push(Span::styled("█ ", Style::default().fg(Color::White)));
    legend.push(Span::raw("time cursor "));
    let chart = time_chart(
        datasets,
        title("Throughput per QP, GB/s on the wire (solid: requests, dotted: responses)")
            .title_bottom(Line::from(legend)),
        max_x,
        (max_y, format!("{max_y:.1}")),
    );
    f.render_widget(chart, top);
    if let Some(area) = latency_area {
        latency_chart(f, model, area, &colors);
    }

    // Several capture points: their summary beside the diagnosis.
    let link_lines = model.point_link_lines();
    let widths: &[Constraint] = if model.points().is_some() || !link_lines.is_empty() {
        &[
            Constraint::Length(40),
            Constraint::Min(20),
            Constraint::Length(42),
        ]
    } else {
        &[Constraint::Length(40), Constraint::Min(20)]
    };
    let bottom = Layout::horizontal(widths).split(rows[1]);
    if let Some(&area) = bottom.get(2) {
        let names: Vec<&str> = model.points().map_or_else(
            || {
                link_lines
                    .iter()
                    .filter_map(|l| l.strip_prefix("link ")?.split(':').next())
                    .collect()
            },
            |r| r.points.iter().map(|p| p.name.as_str()).collect(),
        );
        // A live session: each point's link first (a point down in red).
        let mut lines: Vec<Line<'_>> = link_lines
            .iter()
            .map(|l| {
                let down = l.starts_with("link ") && !l.contains(": connected,");
                Line::from(Span::styled(
                    l.clone(),
                    Style::default().fg(if down { RED } else { Color::Reset }),
                ))
            })
            .collect();
        let empty = rocescope_replay::points::PointsReport::default();
        let r = model.points().unwrap_or(&empty);
        let report_lines = if model.points().is_some() {
            rocescope_replay::text::points_overview_lines(r)
        } else {
            Vec::new()
        };
        lines.extend(report_lines.into_iter().map(|l| {
            let style = if l.starts_with("losses: ") && !r.losses.is_empty() {
                Style::default().fg(YELLOW)
            } else {
                Style::default()
            };
            Line::from(Span::styled(l, style))
        }));
        f.render_widget(
            Paragraph::new(lines)
                .block(title(format!("Capture points {}", names.join(" > "))))
                .wrap(Wrap { trim: false }),
            area,
        );
    }
    let stats = model.store().stats();
    let c = &report.counters;
    let mut lines = vec![
        Line::from(format!("packets        {}", stats.packets)),
        Line::from(format!("RoCE           {}", stats.roce_packets)),
        Line::from(format!("wire bytes     {}", size_text(stats.wire_bytes))),
        Line::from(format!("QPs            {}", report.qps.len())),
        counter("retransmitted", c.retransmitted_packets, YELLOW),
        counter("packet_seq_err", c.packet_seq_err, RED),
        Line::from(format!("timeouts       {}", c.local_ack_timeout_err)),
        Line::from(format!(
            "CNPs / CE      {} / {}",
            c.np_cnp_sent, c.np_ecn_marked_roce_packets
        )),
        Line::from(format!("capture loss   {}", c.capture_loss_packets)),
        Line::from(format!("ICRC errors    {}", stats.icrc_errors)),
    ];
    let status = model.source().status();
    if model.source().live {
        lines.push(Line::from(format!(
            "sim time       {}",
            rocescope_decoders::units::duration_text(
                status
                    .sim_time_ns
                    .load(std::sync::atomic::Ordering::Relaxed)
            )
        )));
    }
    f.render_widget(Paragraph::new(lines).block(title("Counters")), bottom[0]);

    let inner_h = bottom[1].height.saturating_sub(2) as usize;
    let first = model.list_index().saturating_sub(inner_h.saturating_sub(1));
    let items: Vec<Line<'_>> = if report.findings.is_empty() {
        vec![Line::from(Span::styled(
            format!("{} (yet)", rocescope_replay::text::NO_FINDINGS),
            Style::default().fg(DIM),
        ))]
    } else {
        report
            .findings
            .iter()
            .enumerate()
            .skip(first)
            .take(inner_h)
            .map(|(i, fd)| {
                let style = if i == model.list_index() {
                    Style::default().add_modifier(Modifier::REVERSED)
                } else {
                    Style::default()
                };
                Line::from(Span::styled(fd.text.clone(), style))
            })
            .collect()
    };
    ui.items = Rect::new(
        bottom[1].x + 1,
        bottom[1].y + 1,
        bottom[1].width.saturating_sub(2),
        inner_h as u16,
    );
    ui.items_first = first;
    f.render_widget(
        Paragraph::new(items)
            .block(
                title("Diagnosis").title_bottom(
                    Line::from(Span::styled(
                        " Enter: open in ladder, f: next ",
                        Style::default().fg(DIM),
                    ))
                    .right_aligned(),
                ),
            )
            .wrap(Wrap { trim: true }),
        bottom[1],
    );
}

/// Each segment's one-way latency (p99) over the capture, one line per
/// segment and direction: queueing growth shows as a line rising.
fn latency_chart(f: &mut Frame<'_>, model: &Model, area: Rect, colors: &[Color]) {
    let series = rocescope_core::query::segment_latency_series(model);
    let data: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|(_, pts)| pts.iter().map(|&(x, _, p99)| (x, p99)).collect())
        .collect();
    let (mut max_x, mut max_y) = (0.001f64, 0.001f64);
    for (x, y) in data.iter().flatten() {
        max_x = max_x.max(*x);
        max_y = max_y.max(*y);
    }
    let datasets: Vec<Dataset<'_>> = data
        .iter()
        .enumerate()
        .map(|(i, d)| {
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(colors[i % colors.len()]))
                .data(d)
        })
        .collect();
    let mut legend = vec![Span::raw(" ")];
    for (i, (name, _)) in series.iter().enumerate() {
        legend.push(Span::styled(
            "━━ ",
            Style::default().fg(colors[i % colors.len()]),
        ));
        legend.push(Span::raw(format!("{name}  ")));
    }
    let chart = time_chart(
        datasets,
        title("One-way latency per segment, p99 µs").title_bottom(Line::from(legend)),
        max_x,
        (max_y, format!("{max_y:.3}")),
    );
    f.render_widget(chart, area);
}

/// A chart over the capture's time in ms, from 0 to `max_x`, its y axis
/// from 0 to a tenth above `max_y` (labelled as given); no legend inside.
fn time_chart<'a>(
    datasets: Vec<Dataset<'a>>,
    block: Block<'a>,
    max_x: f64,
    (max_y, max_y_label): (f64, String),
) -> Chart<'a> {
    Chart::new(datasets)
        .legend_position(None)
        .block(block)
        .x_axis(
            Axis::default()
                .bounds([0.0, max_x])
                .labels(["0 ms".to_owned(), format!("{max_x:.3} ms")])
                .style(Style::default().fg(DIM)),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, max_y * 1.1])
                .labels(["0".to_owned(), max_y_label])
                .style(Style::default().fg(DIM)),
        )
}
