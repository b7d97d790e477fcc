//! Drawing: each view reads the model and draws only what is visible.

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Chart, Clear, Dataset, GraphType, Paragraph, Row as TRow, Sparkline, Table, Tabs,
    Wrap,
};
use rocescope_core::command::View;
use rocescope_core::query::{
    QP_COLUMNS, RowClass, addr, field_value, flag_text, human_bytes, ladder_qp, ladder_rows, naks,
    qp_state, rel_time, row_class, short_opcode,
};
use rocescope_core::status::Tone;
use rocescope_core::{Command, Model, Overlay, UiCommand, cmdline, explain, status_line};
use rocescope_decoders::analysis::Series;
use rocescope_replay::Record;
use rocescope_replay::store::Flags;

/// Where things were drawn, for mouse clicks and paging.
#[derive(Debug, Default, Clone)]
pub struct UiState {
    tabs: Vec<(Rect, View)>,
    /// Packet list: area of the rows and the store index on each line.
    list: Rect,
    list_rows: Vec<u64>,
    /// Lines of the list-style views (QPs, episodes, findings, lessons).
    items: Rect,
    items_first: usize,
    pub page_rows: u16,
}

impl UiState {
    /// Commands for a left click at (x, y).
    pub fn click(&self, x: u16, y: u16) -> Vec<Command> {
        let inside = |r: &Rect| x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height;
        if let Some((_, v)) = self.tabs.iter().find(|(r, _)| inside(r)) {
            return vec![Command::ShowView(*v)];
        }
        if inside(&self.list) {
            if let Some(row) = self.list_rows.get(usize::from(y - self.list.y)) {
                return vec![Command::SelectRow(*row)];
            }
        }
        if inside(&self.items) {
            let i = self.items_first + usize::from(y - self.items.y);
            return vec![Command::SelectFirst, Command::MoveSelection(i as i64)];
        }
        Vec::new()
    }
}

fn flag_style(f: Flags) -> Style {
    match row_class(f) {
        RowClass::Error => Style::default().fg(RED),
        RowClass::Retransmission => Style::default().fg(YELLOW),
        RowClass::OutOfOrder => Style::default().fg(MAGENTA),
        RowClass::Congestion => Style::default().fg(CYAN),
        RowClass::NotRoce => Style::default().fg(DIM),
        RowClass::Normal => Style::default(),
    }
}

const RED: Color = Color::Red;
const YELLOW: Color = Color::Yellow;
const CYAN: Color = Color::Cyan;
const GREEN: Color = Color::Green;
const MAGENTA: Color = Color::Magenta;
const DIM: Color = Color::DarkGray;

fn title(s: impl AsRef<str>) -> Block<'static> {
    Block::bordered().title(Span::styled(
        format!(" {} ", s.as_ref()),
        Style::default().add_modifier(Modifier::BOLD),
    ))
}

/// Draw the whole workbench.
pub fn draw(f: &mut Frame<'_>, model: &Model, ui: &mut UiState) {
    let area = f.area();
    let lesson_h = if model.lesson.is_some() { 7 } else { 0 };
    let chunks = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(lesson_h),
            Constraint::Length(1),
        ])
        .split(area);
    draw_tabs(f, model, ui, chunks[0]);
    let body = chunks[1];
    ui.list_rows.clear();
    ui.list = Rect::default();
    ui.items = Rect::default();
    match model.view {
        View::Overview => overview(f, model, ui, body),
        View::Packets => packets(f, model, ui, body),
        View::Qps => qps(f, model, ui, body),
        View::Ladder => ladder(f, model, body),
        View::Retransmissions => retransmissions(f, model, ui, body),
        View::Slots => slots(f, model, ui, body),
        View::Profiler => profiler(f, model, body),
        View::Explain => explain_view(f, model, body),
        View::Lessons => lessons(f, model, ui, body),
    }
    if model.lesson.is_some() {
        lesson_box(f, model, chunks[2]);
    }
    status_bar(f, model, chunks[3]);
    if model.overlay == Overlay::Help {
        help(f, area);
    }
}

fn draw_tabs(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    ui.tabs.clear();
    let mut spans = Vec::new();
    let mut x = area.x;
    for (i, v) in View::ALL.iter().enumerate() {
        let label = if area.width < 100 {
            format!(" {}:{} ", i + 1, &v.title()[..v.title().len().min(4)])
        } else {
            format!(" {}:{} ", i + 1, v.title())
        };
        let w = label.chars().count() as u16;
        ui.tabs.push((Rect::new(x, area.y, w, 1), *v));
        x += w;
        let style = if *v == model.view {
            Style::default()
                .fg(Color::Black)
                .bg(CYAN)
                .add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        spans.push(Span::styled(label, style));
    }
    let help = Span::styled(" ?:help q:quit", Style::default().fg(DIM));
    spans.push(help);
    f.render_widget(Tabs::new(vec![Line::from(spans)]).divider(""), area);
}

fn status_bar(f: &mut Frame<'_>, model: &Model, area: Rect) {
    if model.overlay == Overlay::CommandLine {
        let fits = cmdline::complete(&model.cmdline).candidates;
        // Candidates once the user has typed something to narrow them.
        let hint = if fits.len() > 1 && !model.cmdline.trim().is_empty() {
            format!("▏  {}", fits.join(" "))
        } else {
            format!("▏  ({})", cmdline::hint())
        };
        let line = Line::from(vec![
            Span::styled(":", Style::default().fg(YELLOW)),
            Span::raw(model.cmdline.clone()),
            Span::styled(hint, Style::default().fg(DIM)),
        ]);
        f.render_widget(Paragraph::new(line), area);
        return;
    }
    let bar = Style::default().fg(Color::Black).bg(Color::Gray);
    let mut spans = vec![Span::raw(" ")];
    let width = usize::from(area.width.saturating_sub(1));
    for (i, part) in status_line(model)
        .parts_within(width)
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            spans.push(Span::raw(" | "));
        }
        let style = match part.tone {
            Tone::Normal => bar,
            Tone::Good => bar.bg(GREEN).add_modifier(Modifier::BOLD),
            Tone::Notice => bar.bg(YELLOW),
            Tone::Bad => bar.fg(Color::White).bg(RED).add_modifier(Modifier::BOLD),
        };
        spans.push(Span::styled(part.text, style));
    }
    f.render_widget(Paragraph::new(Line::from(spans)).style(bar), area);
}

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

fn overview(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let report = model.report();
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(55), Constraint::Percentage(45)])
        .split(area);
    let t0 = model.store.stats().first_ts_ns.unwrap_or(0);
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
    let width = rows[0].width.saturating_sub(10);
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
    for (i, (d, q)) in data.iter().zip(&report.qps).enumerate() {
        datasets.push(
            Dataset::default()
                .name(format!("QP 0x{:x} ->", q.dest_qp))
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
    let chart = Chart::new(datasets)
        .block(title(
            "Throughput per QP, GB/s on the wire (solid: requests, dotted: responses)",
        ))
        .x_axis(
            Axis::default()
                .bounds([0.0, max_x])
                .labels(["0 ms".to_owned(), format!("{max_x:.3} ms")])
                .style(Style::default().fg(DIM)),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, max_y * 1.1])
                .labels(["0".to_owned(), format!("{max_y:.1}")])
                .style(Style::default().fg(DIM)),
        );
    f.render_widget(chart, rows[0]);

    let bottom = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Length(40), Constraint::Min(20)])
        .split(rows[1]);
    let stats = model.store.stats();
    let c = &report.counters;
    let mut lines = vec![
        Line::from(format!("packets        {}", stats.packets)),
        Line::from(format!("RoCE           {}", stats.roce_packets)),
        Line::from(format!("wire bytes     {}", human_bytes(stats.wire_bytes))),
        Line::from(format!("QPs            {}", report.qps.len())),
        Line::from(Span::styled(
            format!("retransmitted  {}", c.retransmitted_packets),
            Style::default().fg(if c.retransmitted_packets > 0 {
                YELLOW
            } else {
                Color::Reset
            }),
        )),
        Line::from(Span::styled(
            format!("packet_seq_err {}", c.packet_seq_err),
            Style::default().fg(if c.packet_seq_err > 0 {
                RED
            } else {
                Color::Reset
            }),
        )),
        Line::from(format!("timeouts       {}", c.local_ack_timeout_err)),
        Line::from(format!(
            "CNPs / CE      {} / {}",
            c.np_cnp_sent, c.np_ecn_marked_roce_packets
        )),
        Line::from(format!("capture loss   {}", c.capture_loss_packets)),
        Line::from(format!("ICRC errors    {}", stats.icrc_errors)),
    ];
    let status = model.source.status();
    if model.source.live {
        lines.push(Line::from(format!(
            "sim time       {} µs",
            status
                .sim_time_ns
                .load(std::sync::atomic::Ordering::Relaxed)
                / 1000
        )));
    }
    f.render_widget(Paragraph::new(lines).block(title("Counters")), bottom[0]);

    let inner_h = bottom[1].height.saturating_sub(2) as usize;
    let first = model.list_index.saturating_sub(inner_h.saturating_sub(1));
    let items: Vec<Line<'_>> = if report.findings.is_empty() {
        vec![Line::from(Span::styled(
            "no throughput drop found (yet)",
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
                let style = if i == model.list_index {
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
            .block(title("Diagnosis (Enter: open in ladder, f: next)"))
            .wrap(Wrap { trim: true }),
        bottom[1],
    );
}

fn packets(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let compact = area.height < 30;
    let detail_h = if compact {
        area.height / 3
    } else {
        area.height * 2 / 5
    };
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(detail_h),
        ])
        .split(area);
    // Filter bar with inline errors.
    let editing = model.overlay == Overlay::FilterEdit;
    let mut spans = vec![Span::styled(
        " filter: ",
        Style::default().fg(if editing { YELLOW } else { DIM }),
    )];
    spans.push(Span::raw(model.filter_text.clone()));
    if editing {
        spans.push(Span::styled("▏", Style::default().fg(YELLOW)));
    }
    if let Some(e) = &model.filter_error {
        spans.push(Span::styled(format!("   {e}"), Style::default().fg(RED)));
    } else if model.filter_text.is_empty() && !editing {
        spans.push(Span::styled(
            "(press / : e.g. bth.psn >= 100 && rocescope.retransmission)",
            Style::default().fg(DIM),
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), rows[0]);

    // Virtualized list: only the visible rows are fetched.
    let list_area = rows[1];
    let inner_h = list_area.height.saturating_sub(3) as usize;
    ui.page_rows = inner_h as u16;
    let total = model.visible_len();
    let sel_pos = model.selected.map_or(0, |s| model.visible_pos(s));
    let first = sel_pos
        .saturating_sub(inner_h as u64 / 2)
        .min(total.saturating_sub(inner_h as u64));
    let visible = model.visible_rows(first, inner_h);
    let wide = list_area.width >= 120;
    let mut trs = Vec::with_capacity(visible.len());
    for (index, r) in &visible {
        let src_dst = model
            .store
            .conversation(r.conversation)
            .map(|c| format!("{}→{}", c.key.src_addr(), c.key.dst_addr()))
            .unwrap_or_default();
        let qp = model
            .store
            .conversation(r.conversation)
            .map(|c| format!("0x{:x}", c.key.dest_qp))
            .unwrap_or_default();
        let (op, psn) = if r.flags.contains(Flags::ROCE) {
            (short_opcode(r.opcode), r.psn.to_string())
        } else {
            ("-".into(), String::new())
        };
        let mut cells = vec![(index + 1).to_string(), rel_time(model, r.ts_ns)];
        if wide {
            cells.push(src_dst);
        }
        cells.extend([op, qp, psn, r.origlen.to_string(), flag_text(r.flags)]);
        let mut style = flag_style(r.flags);
        if Some(*index) == model.selected {
            style = style.add_modifier(Modifier::REVERSED);
        }
        trs.push(TRow::new(cells).style(style));
    }
    let mut widths = vec![Constraint::Length(8), Constraint::Length(12)];
    let mut header = vec!["No.", "Time"];
    if wide {
        widths.push(Constraint::Length(26));
        header.push("Source → Destination");
    }
    widths.extend([
        Constraint::Length(22),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(6),
        Constraint::Min(6),
    ]);
    header.extend(["Opcode", "QP", "PSN", "Len", "Analysis"]);
    let table = Table::new(trs, widths)
        .header(TRow::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(title(format!(
            "Packets {}-{} of {}",
            first + 1,
            first + visible.len() as u64,
            total
        )));
    f.render_widget(table, list_area);
    ui.list = Rect::new(
        list_area.x + 1,
        list_area.y + 2,
        list_area.width.saturating_sub(2),
        inner_h as u16,
    );
    ui.list_rows = visible.iter().map(|(i, _)| *i).collect();

    // Detail tree and hex with the selected field highlighted.
    let bottom = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(55), Constraint::Percentage(45)])
        .split(rows[2]);
    let Some(sel) = model.selected_packet() else {
        f.render_widget(
            Paragraph::new("no packet selected").block(title("Detail")),
            bottom[0],
        );
        return;
    };
    let p = sel.packet();
    let mut fields = Vec::new();
    p.for_each_field(&mut |fl| {
        fields.push((fl.name, fl.label, fl.depth, fl.offset, fl.len, fl.value))
    });
    let fi = model
        .field_index
        .unwrap_or_else(|| {
            fields
                .iter()
                .position(|x| x.0 == "infiniband.bth")
                .unwrap_or(0)
        })
        .min(fields.len().saturating_sub(1));
    let h = bottom[0].height.saturating_sub(2) as usize;
    // Keep the selection near the top third so the fields after it show.
    let start = fi.saturating_sub(h / 3).min(fields.len().saturating_sub(h));
    let lines: Vec<Line<'_>> = fields
        .iter()
        .enumerate()
        .skip(start)
        .take(h)
        .map(|(i, (name, label, depth, _, _, value))| {
            let v = field_value(name, value);
            let text = if *depth == 0 {
                format!("▾ {label}")
            } else {
                format!("    {label}: {v}  [{name}]")
            };
            let mut style = if *depth == 0 {
                Style::default().add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            if i == fi {
                style = style.add_modifier(Modifier::REVERSED);
            }
            Line::from(Span::styled(text, style))
        })
        .collect();
    f.render_widget(
        Paragraph::new(lines).block(title("Detail ([ ] move)")),
        bottom[0],
    );

    let (hl_off, hl_len) = fields.get(fi).map_or((0, 0), |x| (x.3, x.4));
    let per_line = 16usize;
    let hh = bottom[1].height.saturating_sub(2) as usize;
    let first_line = (hl_off / per_line).saturating_sub(hh / 2);
    let mut hex = Vec::new();
    for line in first_line..(first_line + hh) {
        let base = line * per_line;
        if base >= sel.bytes.len() {
            break;
        }
        let mut spans = vec![Span::styled(
            format!("{base:04x} "),
            Style::default().fg(DIM),
        )];
        for k in base..(base + per_line).min(sel.bytes.len()) {
            let on = k >= hl_off && k < hl_off + hl_len;
            let style = if on {
                Style::default().fg(Color::Black).bg(YELLOW)
            } else {
                Style::default()
            };
            spans.push(Span::styled(format!("{:02x}", sel.bytes[k]), style));
            spans.push(Span::raw(" "));
        }
        hex.push(Line::from(spans));
    }
    f.render_widget(
        Paragraph::new(hex).block(title(format!(
            "Hex (frame {}, {} of {} bytes)",
            sel.index + 1,
            sel.bytes.len(),
            sel.row.origlen
        ))),
        bottom[1],
    );
}

fn sparkline_data(s: &Series, n: usize) -> Vec<u64> {
    let start = s.bins.len().saturating_sub(n);
    s.bins[start..].iter().map(|b| b.wire_bytes).collect()
}

fn qps(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let report = model.report();
    let chunks = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(5), Constraint::Length(5)])
        .split(area);
    let rows: Vec<TRow<'_>> = report
        .qps
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let c = &q.counters;
            let naks = naks(c);
            let rtt = q
                .rtt_p50_ns
                .map_or("-".into(), |ns| format!("{:.2}µs", ns as f64 / 1e3));
            let state = qp_state(report, i, model.cursor_ns());
            let style = if i == model.list_index {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            TRow::new(vec![
                format!("0x{:x}", q.dest_qp),
                format!("{}>{}", addr(q.requester), addr(q.responder)),
                state.to_owned(),
                q.next_psn.to_string(),
                q.oldest_unacked_psn.map_or("-".into(), |p| p.to_string()),
                format!("{}/{}", q.outstanding, q.window_packets),
                human_bytes(q.wire_bytes),
                c.retransmitted_packets.to_string(),
                naks.to_string(),
                c.np_cnp_sent.to_string(),
                rtt,
            ])
            .style(style)
        })
        .collect();
    let widths = [
        Constraint::Length(8),
        Constraint::Length(24),
        Constraint::Length(11),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(6),
        Constraint::Length(9),
        Constraint::Length(6),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(9),
    ];
    let t = Table::new(rows, widths)
        .header(TRow::new(QP_COLUMNS.to_vec()).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(title("QP conversations (Enter: ladder)"));
    f.render_widget(t, chunks[0]);
    ui.items = Rect::new(
        chunks[0].x + 1,
        chunks[0].y + 2,
        chunks[0].width.saturating_sub(2),
        chunks[0].height.saturating_sub(3),
    );
    ui.items_first = 0;
    if let Some(q) = report.qps.get(model.list_index) {
        let data = sparkline_data(&q.series, usize::from(chunks[1].width.saturating_sub(2)));
        f.render_widget(
            Sparkline::default()
                .data(&data)
                .style(Style::default().fg(GREEN))
                .block(title(format!(
                    "QP 0x{:x} wire bytes per bin ({} ns bins)",
                    q.dest_qp, q.series.bin_ns
                ))),
            chunks[1],
        );
    }
}

fn ladder(f: &mut Frame<'_>, model: &Model, area: Rect) {
    let Some(q) = ladder_qp(model) else {
        f.render_widget(Paragraph::new("no QP yet").block(title("Ladder")), area);
        return;
    };
    let h = area.height.saturating_sub(3) as usize;
    let rows = ladder_rows(model, q, h);
    let w = area.width.saturating_sub(2) as usize;
    let lane = w.saturating_sub(15).max(20);
    let mut lines = vec![Line::from(Span::styled(
        {
            let left = format!("requester {}", addr(q.requester));
            let right = format!("responder {}", addr(q.responder));
            format!(
                "{:<14}{left}{right:>w$}",
                "time",
                w = lane.saturating_sub(left.chars().count())
            )
        },
        Style::default().add_modifier(Modifier::BOLD),
    ))];
    let mut last_ts: Option<u64> = None;
    for lr in &rows {
        let (index, r, rightward) = (&lr.index, &lr.row, lr.rightward);
        let label = format!(" {} PSN {} ", short_opcode(r.opcode), r.psn);
        let flags = flag_text(r.flags);
        let label = if flags.is_empty() {
            label
        } else {
            format!("{label}[{flags}] ")
        };
        let body_len = lane.saturating_sub(3);
        let label: String = label.chars().take(body_len).collect();
        let pad = body_len.saturating_sub(label.chars().count());
        let (a, b) = (pad / 2, pad - pad / 2);
        let arrow = if rightward {
            format!("|{}{label}{}▶|", "─".repeat(a), "─".repeat(b))
        } else {
            format!("|◀{}{label}{}|", "─".repeat(a), "─".repeat(b))
        };
        // A silence of more than 20 µs is drawn, so timeouts show.
        if let Some(prev) = last_ts {
            if r.ts_ns.saturating_sub(prev) > 20_000 {
                lines.push(Line::from(Span::styled(
                    format!(
                        "{:<14}|{:^lane$}|",
                        "",
                        format!("… {} µs silent …", (r.ts_ns - prev) / 1000)
                    ),
                    Style::default().fg(DIM),
                )));
            }
        }
        last_ts = Some(r.ts_ns);
        let mut style = flag_style(r.flags);
        if Some(*index) == model.selected {
            style = style.add_modifier(Modifier::REVERSED);
        }
        lines.push(Line::from(vec![
            Span::styled(
                format!("{:<14}", rel_time(model, r.ts_ns)),
                Style::default().fg(DIM),
            ),
            Span::styled(arrow, style),
        ]));
    }
    let t = format!(
        "Ladder: QP 0x{:x} {}>{} (requester QP {}) — ↑↓ move, r next retransmission",
        q.dest_qp,
        addr(q.requester),
        addr(q.responder),
        q.requester_qp.map_or("?".into(), |p| format!("0x{p:x}"))
    );
    f.render_widget(Paragraph::new(lines).block(title(&t)), area);
}

fn retransmissions(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let report = model.report();
    let chunks = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(5), Constraint::Length(4)])
        .split(area);
    let h = chunks[0].height.saturating_sub(3) as usize;
    let first = model.list_index.saturating_sub(h.saturating_sub(1));
    let rows: Vec<TRow<'_>> = report
        .episodes
        .iter()
        .enumerate()
        .skip(first)
        .take(h)
        .map(|(i, e)| {
            let qp = report
                .qps
                .get(e.qp as usize)
                .map_or(format!("#{}", e.qp), |q| format!("0x{:x}", q.dest_qp));
            let style = if i == model.list_index {
                Style::default().add_modifier(Modifier::REVERSED)
            } else {
                Style::default()
            };
            TRow::new(vec![
                (e.first_index + 1).to_string(),
                rel_time(model, e.start_ns),
                qp,
                e.cause.name().to_owned(),
                e.from_psn.to_string(),
                e.packets_resent.to_string(),
                human_bytes(e.bytes_resent),
                if e.recovered {
                    format!("{:.2} µs", e.recovery_ns as f64 / 1e3)
                } else {
                    "not recovered".to_owned()
                },
            ])
            .style(style)
        })
        .collect();
    let t = Table::new(
        rows,
        [
            Constraint::Length(9),
            Constraint::Length(12),
            Constraint::Length(8),
            Constraint::Length(12),
            Constraint::Length(9),
            Constraint::Length(7),
            Constraint::Length(10),
            Constraint::Length(12),
        ],
    )
    .header(
        TRow::new(vec![
            "frame", "time", "QP", "cause", "from PSN", "resent", "bytes", "recovery",
        ])
        .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(title(format!(
        "Retransmission episodes: {} (Enter: show in ladder)",
        report.episodes.len()
    )));
    f.render_widget(t, chunks[0]);
    ui.items = Rect::new(
        chunks[0].x + 1,
        chunks[0].y + 2,
        chunks[0].width.saturating_sub(2),
        h as u16,
    );
    ui.items_first = first;
    let text = report
        .episodes
        .get(model.list_index)
        .map_or("", |e| explain::episode(e.cause));
    f.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .block(title("Why")),
        chunks[1],
    );
}

fn slots(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let recs = model.store.records_where(|r| matches!(r, Record::Slot(_)));
    let cursor = model.cursor_ns();
    let h = area.height.saturating_sub(3) as usize;
    let visible: Vec<_> = recs.iter().filter(|r| r.ts_ns() <= cursor).collect();
    let first = model
        .list_index
        .min(visible.len().saturating_sub(1))
        .saturating_sub(h.saturating_sub(1));
    let mut drops = 0u64;
    let mut total = 0u64;
    let rows: Vec<TRow<'_>> = visible
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let Record::Slot(s) = r else { return None };
            total += 1;
            if matches!(s.verdict, rocescope_replay::record::Verdict::Drop) {
                drops += 1;
            }
            if i < first || i >= first + h {
                return None;
            }
            let style = match s.verdict {
                rocescope_replay::record::Verdict::Drop => Style::default().fg(RED),
                rocescope_replay::record::Verdict::Transformed => Style::default().fg(CYAN),
                rocescope_replay::record::Verdict::Pass => Style::default(),
            };
            let style = if i == model.list_index {
                style.add_modifier(Modifier::REVERSED)
            } else {
                style
            };
            Some(
                TRow::new(vec![
                    rel_time(model, s.ts_ns),
                    format!("{:?}", s.slot),
                    format!("0x{:x}", s.qpn),
                    s.psn.to_string(),
                    format!("{:?}", s.verdict),
                    format!("{} ns", s.latency_ns),
                ])
                .style(style),
            )
        })
        .collect();
    let t = Table::new(
        rows,
        [
            Constraint::Length(12),
            Constraint::Length(6),
            Constraint::Length(8),
            Constraint::Length(9),
            Constraint::Length(12),
            Constraint::Length(9),
        ],
    )
    .header(
        TRow::new(vec!["time", "slot", "QP", "PSN", "verdict", "latency"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(title(format!(
        "Service-slot decisions: {total} up to the cursor, {drops} dropped"
    )));
    ui.items = Rect::new(
        area.x + 1,
        area.y + 2,
        area.width.saturating_sub(2),
        h as u16,
    );
    ui.items_first = first;
    if recs.is_empty() {
        f.render_widget(Paragraph::new("No service-slot records in this source (run a scenario with slots, e.g. `rocescope sim --scenario aes` or `dpi-drop`).").wrap(Wrap { trim: true }).block(title("Service slots")), area);
    } else {
        f.render_widget(t, area);
    }
}

fn profiler(f: &mut Frame<'_>, model: &Model, area: Rect) {
    let defs: Vec<(u16, String)> = model
        .store
        .records_where(|r| matches!(r, Record::ProbeDef(_)))
        .into_iter()
        .filter_map(|r| {
            if let Record::ProbeDef(d) = r {
                Some((d.probe, d.name))
            } else {
                None
            }
        })
        .collect();
    if defs.is_empty() {
        f.render_widget(
            Paragraph::new("No profiler probes in this source.").block(title("Profiler")),
            area,
        );
        return;
    }
    let cursor = model.cursor_ns();
    let samples = model
        .store
        .records_where(|r| matches!(r, Record::Profiler(s) if s.ts_ns <= cursor));
    let per = 3u16;
    let n = (area.height / per).max(1) as usize;
    let areas = Layout::default()
        .direction(Direction::Vertical)
        .constraints(vec![Constraint::Length(per); n.min(defs.len())])
        .split(area);
    for ((probe, name), a) in defs.iter().zip(areas.iter()) {
        // Step chart: the value held until the next sample, over the last columns.
        let vals: Vec<(u64, i64)> = samples
            .iter()
            .filter_map(|r| {
                if let Record::Profiler(s) = r {
                    (s.probe == *probe).then_some((s.ts_ns, s.value))
                } else {
                    None
                }
            })
            .collect();
        let width = usize::from(a.width.saturating_sub(2));
        let span_ns = 200_000u64;
        let start = cursor.saturating_sub(span_ns);
        let mut data = vec![0u64; width];
        let mut vi = 0;
        let mut cur = 0i64;
        for (x, slot) in data.iter_mut().enumerate() {
            let t = start + span_ns * x as u64 / width.max(1) as u64;
            while vi < vals.len() && vals[vi].0 <= t {
                cur = vals[vi].1;
                vi += 1;
            }
            *slot = cur.max(0) as u64;
        }
        let last = vals.last().map_or(0, |v| v.1);
        f.render_widget(
            Sparkline::default()
                .data(&data)
                .style(Style::default().fg(GREEN))
                .block(title(format!(
                    "{name} = {last} (last 200 µs to the cursor)"
                ))),
            *a,
        );
    }
}

fn explain_view(f: &mut Frame<'_>, model: &Model, area: Rect) {
    let Some(sel) = model.selected_packet() else {
        f.render_widget(
            Paragraph::new("Select a packet (Packets view) to have it explained.")
                .block(title("Explain")),
            area,
        );
        return;
    };
    let p = sel.packet();
    let flags: Vec<&str> = sel.row.flags.names().collect();
    let paras = explain::packet(&p, &flags);
    let mut lines = vec![
        Line::from(Span::styled(
            format!("Frame {}: {}", sel.index + 1, p.summary()),
            Style::default().add_modifier(Modifier::BOLD),
        )),
        Line::from(""),
    ];
    for para in paras {
        lines.push(Line::from(para));
        lines.push(Line::from(""));
    }
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(title("Explain")),
        area,
    );
}

fn lessons(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let all = rocescope_core::lesson::builtin();
    let mut lines = Vec::new();
    for (i, l) in all.iter().enumerate() {
        let style = if i == model.list_index {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default()
        };
        lines.push(Line::from(Span::styled(
            format!(
                "{}. {} — {} (scenario: {})",
                i + 1,
                l.title,
                l.summary,
                l.scenario
            ),
            style,
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        format!("Enter opens the lesson and starts the scenario it was written for; n / p move through its steps; L leaves it, back to this source: {}.", model.source.name),
        Style::default().fg(DIM),
    )));
    ui.items = Rect::new(
        area.x + 1,
        area.y + 1,
        area.width.saturating_sub(2),
        all.len() as u16,
    );
    ui.items_first = 0;
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(title("Lessons")),
        area,
    );
}

fn lesson_box(f: &mut Frame<'_>, model: &Model, area: Rect) {
    let Some(l) = &model.lesson else { return };
    let step = &l.steps[model.lesson_step.min(l.steps.len().saturating_sub(1))];
    // The status line names the source leaving goes back to.
    let back = if model.previous().is_some() {
        ", L leave"
    } else {
        ""
    };
    f.render_widget(
        Paragraph::new(step.text.clone())
            .wrap(Wrap { trim: true })
            .block(title(format!(
                "Lesson: {} — step {}/{} on {} (n next, p previous{back})",
                l.title,
                model.lesson_step + 1,
                l.steps.len(),
                model.source.name
            ))),
        area,
    );
}

fn help(f: &mut Frame<'_>, area: Rect) {
    let w = area.width.min(90);
    let h = area.height.min(UiCommand::ALL.len() as u16 + 4);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    f.render_widget(Clear, r);
    let mut lines: Vec<Line<'_>> = UiCommand::ALL
        .iter()
        .map(|c| {
            Line::from(vec![
                Span::styled(format!("{:>9}  ", c.key()), Style::default().fg(YELLOW)),
                Span::raw(c.description()),
            ])
        })
        .collect();
    lines.push(Line::from(Span::styled(
        "     mouse  click a tab or a row; wheel scrolls",
        Style::default().fg(DIM),
    )));
    f.render_widget(Paragraph::new(lines).block(title("Keys (Esc closes)")), r);
}
