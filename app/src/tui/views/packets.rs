//! Packets: the packet list, the detail tree and the bytes.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row as TRow, Table};
use rocescope_core::query::{
    field_value, flag_text, path_cell, path_chars, rel_time, short_opcode,
};
use rocescope_core::{Model, Overlay};
use rocescope_replay::store::Flags;

use super::{DIM, RED, UiState, YELLOW, flag_style, title};

pub(super) fn packets(f: &mut Frame<'_>, model: &Model, ui: &mut UiState, area: Rect) {
    let compact = area.height < 30;
    let detail_h = if compact {
        area.height / 3
    } else {
        area.height * 2 / 5
    };
    let rows = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(detail_h),
    ])
    .split(area);
    // Filter bar with inline errors.
    let editing = model.overlay() == Overlay::FilterEdit;
    let mut spans = vec![Span::styled(
        " filter: ",
        Style::default().fg(if editing { YELLOW } else { DIM }),
    )];
    spans.push(Span::raw(model.filter_text().to_owned()));
    if editing {
        spans.push(Span::styled("▏", Style::default().fg(YELLOW)));
    }
    if let Some(e) = &model.filter_error() {
        spans.push(Span::styled(format!("   {e}"), Style::default().fg(RED)));
    } else if model.filter_text().is_empty() && !editing {
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
    let sel_pos = model.selected().map_or(0, |s| model.visible_pos(s));
    let first = sel_pos
        .saturating_sub(inner_h as u64 / 2)
        .min(total.saturating_sub(inner_h as u64));
    let visible = model.visible_rows(first, inner_h);
    let wide = list_area.width >= 120;
    let mut trs = Vec::with_capacity(visible.len());
    for (index, r) in &visible {
        let src_dst = model
            .store()
            .conversation(r.conversation)
            .map(|c| format!("{}→{}", c.key.src_addr(), c.key.dst_addr()))
            .unwrap_or_default();
        let qp = model
            .store()
            .conversation(r.conversation)
            .map(|c| rocescope_replay::text::qpn(c.key.dest_qp))
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
        cells.extend([op, qp, psn, r.origlen.to_string()]);
        // The points that saw it, in a session of capture points.
        if let Some(path) = path_cell(model, *index) {
            cells.push(path);
        }
        cells.push(flag_text(r.flags));
        let mut style = flag_style(r.flags);
        if Some(*index) == model.selected() {
            style = style.add_modifier(Modifier::REVERSED);
        }
        trs.push(TRow::new(cells).style(style));
    }
    // Frame numbers and times as wide as the capture's largest, so that
    // the later columns keep their whole headings on 80 columns.
    let no_w = (model.store().len().max(1).ilog10() as u16 + 1).max(3);
    let time_w = rel_time(model, model.store().stats().last_ts_ns.unwrap_or(0))
        .chars()
        .count() as u16;
    let mut widths = vec![Constraint::Length(no_w), Constraint::Length(time_w)];
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
    ]);
    header.extend(["Opcode", "QP", "PSN", "Len"]);
    if let Some(r) = model.points() {
        widths.push(Constraint::Length(path_chars(r).max(4) as u16));
        header.push("Path");
    }
    widths.push(Constraint::Min(8));
    header.push("Analysis");
    let table = Table::new(trs, widths)
        .header(TRow::new(header).style(Style::default().add_modifier(Modifier::BOLD)))
        .block(title(list_title(model, first, visible.len() as u64, total)));
    f.render_widget(table, list_area);
    ui.list = Rect::new(
        list_area.x + 1,
        list_area.y + 2,
        list_area.width.saturating_sub(2),
        inner_h as u16,
    );
    ui.list_rows = visible.iter().map(|(i, _)| *i).collect();

    // Detail tree and hex with the selected field highlighted.
    let bottom =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).split(rows[2]);
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
        .field_index()
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
    // 16 bytes a line where they fit, else 8 or 4: never a line cut.
    let hex_w = usize::from(bottom[1].width.saturating_sub(2));
    let per_line = [16usize, 8, 4]
        .into_iter()
        .find(|n| 5 + 3 * n <= hex_w + 1)
        .unwrap_or(4);
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

/// `Packets 1-20 of 6166`, or why the list is empty.
fn list_title(model: &Model, first: u64, shown: u64, total: u64) -> String {
    if total == 0 {
        return format!("Packets: {}", rocescope_core::query::empty_list_text(model));
    }
    format!("Packets {}-{} of {}", first + 1, first + shown, total)
}
