//! Packets: the filter bar, the virtualized list, the detail tree, the bytes.

use eframe::egui;

use egui::{Align2, Color32, FontId, Rect, RichText, Sense, Ui, pos2, vec2};
use rocescope_core::query::{self};
use rocescope_core::{Command, Model, Overlay};
use rocescope_replay::store::Flags;

use super::{DIM, PanelState, RED, ROW_H, YELLOW, class_color};

pub fn packets(ui: &mut Ui, model: &Model, st: &mut PanelState, out: &mut Vec<Command>) {
    filter_bar(ui, model, st, out);
    let avail = ui.available_height();
    let list_h = (avail * 0.58).max(ROW_H * 4.0);
    let (list_rect, _) = ui.allocate_exact_size(vec2(ui.available_width(), list_h), Sense::hover());
    packet_list(ui, list_rect, model, st, out);
    ui.separator();
    ui.columns(2, |cols| {
        detail_tree(&mut cols[0], model, st, out);
        hex_view(&mut cols[1], model, st);
    });
}

fn filter_bar(ui: &mut Ui, model: &Model, st: &mut PanelState, out: &mut Vec<Command>) {
    ui.horizontal(|ui| {
        ui.label("filter:");
        let editing = model.overlay() == Overlay::FilterEdit;
        let r = ui.add(
            egui::TextEdit::singleline(&mut st.filter_buf)
                .id(egui::Id::new("rocescope-filter"))
                .hint_text("bth.psn >= 100 && rocescope.retransmission")
                .font(egui::TextStyle::Monospace)
                .desired_width((ui.available_width() * 0.55).max(160.0)),
        );
        if st.focus_filter {
            r.request_focus();
            st.focus_filter = false;
        }
        if r.changed() {
            out.push(Command::SetFilter(st.filter_buf.clone()));
        }
        if r.gained_focus() && !editing {
            out.push(Command::EditFilter);
        }
        if r.lost_focus() && editing {
            out.push(Command::CloseOverlay);
        }
        if let Some(e) = &model.filter_error() {
            ui.colored_label(RED, e.to_string());
        } else if model.filter().is_some() {
            let (scanned, len) = model.filter_progress();
            if scanned < len {
                ui.weak(format!("filtering {}%", scanned * 100 / len.max(1)));
            }
        }
    });
}

/// Headings of the packet list's columns; a session of capture points
/// has [`PATH_COL`] before the analysis.
const PACKET_COLS: [&str; 8] = [
    "No.",
    "Time",
    "Source > Destination",
    "Opcode",
    "QP",
    "PSN",
    "Len",
    "Analysis",
];

/// The points that saw each frame (capture points only).
const PATH_COL: &str = "Path";

/// Columns left out, in this order, when the panel is too narrow for all:
/// the addresses (the detail tree has them), then the length, then the time.
const PACKET_DROP_ORDER: [usize; 3] = [2, 6, 1];

/// Pixels between two columns of the packet list.
const PACKET_GAP: f32 = 10.0;

/// The virtualized packet list: only the rows in view are fetched, and
/// positions are u64 so that tens of millions of rows scroll exactly
/// (egui's own scroll areas are f32 pixels).
fn packet_list(
    ui: &mut Ui,
    rect: Rect,
    model: &Model,
    st: &mut PanelState,
    out: &mut Vec<Command>,
) {
    let painter = ui.painter_at(rect);
    let font = FontId::monospace(12.0);
    let head_font = FontId::proportional(12.0);
    let text_color = ui.visuals().text_color();
    let bar_w = 12.0;
    let header = Rect::from_min_size(rect.min, vec2(rect.width(), ROW_H));
    let body = Rect::from_min_max(
        pos2(rect.left(), header.bottom()),
        pos2(rect.right() - bar_w, rect.bottom()),
    );
    let rows_fit = ((body.height() / ROW_H).floor() as u64).max(1);
    st.page_rows = rows_fit;
    let total = model.visible_len();
    let max_first = total.saturating_sub(rows_fit);
    // Follow the selection when it moved (keys, jumps, other panels).
    if st.selection_moved
        && let Some(s) = model.selected()
    {
        let pos = model.visible_pos(s);
        if pos < st.packets_first || pos >= st.packets_first + rows_fit {
            st.packets_first = pos.saturating_sub(rows_fit / 2);
        }
    }
    let resp = ui.interact(body, ui.id().with("packet-list"), Sense::click());
    if resp.hovered() {
        let dy = ui.input(|i| i.smooth_scroll_delta.y);
        st.scroll_accum -= dy / ROW_H;
        let whole = st.scroll_accum.trunc();
        st.scroll_accum -= whole;
        st.packets_first = (st.packets_first as i64 + whole as i64).max(0) as u64;
    }
    // Scrollbar: position maps linearly to the first row.
    let bar = Rect::from_min_max(pos2(rect.right() - bar_w, body.top()), rect.max);
    let bar_resp = ui.interact(bar, ui.id().with("packet-bar"), Sense::click_and_drag());
    if let Some(p) = bar_resp.interact_pointer_pos() {
        let frac = ((p.y - bar.top()) / bar.height()).clamp(0.0, 1.0) as f64;
        st.packets_first = (frac * max_first as f64) as u64;
    }
    st.packets_first = st.packets_first.min(max_first);
    painter.rect_filled(bar, 2.0, ui.visuals().extreme_bg_color);
    if total > rows_fit {
        let h = (bar.height() * rows_fit as f32 / total as f32).max(16.0);
        let top =
            bar.top() + (bar.height() - h) * (st.packets_first as f32 / max_first.max(1) as f32);
        painter.rect_filled(
            Rect::from_min_size(pos2(bar.left() + 2.0, top), vec2(bar_w - 4.0, h)),
            3.0,
            ui.visuals().widgets.inactive.bg_fill,
        );
    }
    let rows = model.visible_rows(st.packets_first, rows_fit as usize);
    let convs = model.store().conversations();
    let points = model.points();
    let heads: Vec<&str> = PACKET_COLS[..7]
        .iter()
        .copied()
        .chain(points.map(|_| PATH_COL))
        .chain([PACKET_COLS[7]])
        .collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|(index, r)| {
            let conv = convs.get(r.conversation as usize);
            let (op, psn) = if r.flags.contains(Flags::ROCE) {
                (query::short_opcode(r.opcode), r.psn.to_string())
            } else {
                ("-".into(), String::new())
            };
            let mut row = vec![
                (index + 1).to_string(),
                query::rel_time(model, r.ts_ns),
                conv.map(|c| format!("{} > {}", c.key.src_addr(), c.key.dst_addr()))
                    .unwrap_or_default(),
                op,
                conv.map(|c| rocescope_replay::text::qpn(c.key.dest_qp))
                    .unwrap_or_default(),
                psn,
                r.origlen.to_string(),
            ];
            row.extend(query::path_cell(model, *index));
            row.push(query::flag_text(r.flags));
            row
        })
        .collect();
    // Each column as wide as its heading and the cells in view (the frame
    // number and the time as wide as the capture's last); whole columns
    // are left out when the panel is narrow, never cells cut.
    let (char_w, head_w) = ui.fonts(|f| {
        let head: Vec<f32> = heads
            .iter()
            .map(|t| {
                f.layout_no_wrap((*t).to_owned(), head_font.clone(), text_color)
                    .size()
                    .x
            })
            .collect();
        (f.glyph_width(&font, '0'), head)
    });
    let last_ts = model.store().stats().last_ts_ns.unwrap_or(0);
    let mut chars = vec![
        model.store().len().max(1).to_string().len(),
        query::rel_time(model, last_ts).chars().count(),
        0,
        0,
        8,
        0,
        0,
    ];
    chars.extend(points.map(query::path_chars));
    chars.push(0);
    for row in &cells {
        for (c, cell) in chars.iter_mut().zip(row) {
            *c = (*c).max(cell.chars().count());
        }
    }
    let widths: Vec<f32> = chars
        .iter()
        .zip(&head_w)
        .map(|(c, h)| (*c as f32 * char_w).max(*h).ceil())
        .collect();
    let avail = body.width() - 4.0;
    let keep = query::fit_columns(
        &widths.iter().map(|w| *w as u32).collect::<Vec<_>>(),
        &PACKET_DROP_ORDER,
        PACKET_GAP as u32,
        avail as u32,
    );
    let xs: Vec<Option<f32>> = {
        let mut x = rect.left() + 4.0;
        widths
            .iter()
            .zip(&keep)
            .map(|(w, k)| {
                k.then(|| {
                    let at = x;
                    x += w + PACKET_GAP;
                    at
                })
            })
            .collect()
    };
    painter.rect_filled(header, 0.0, ui.visuals().faint_bg_color);
    for (t, x) in heads.iter().zip(&xs) {
        if let Some(x) = x {
            painter.text(
                pos2(*x, header.center().y),
                Align2::LEFT_CENTER,
                *t,
                head_font.clone(),
                text_color,
            );
        }
    }
    let click = resp
        .clicked()
        .then(|| resp.interact_pointer_pos())
        .flatten();
    for (k, ((index, r), row)) in rows.iter().zip(&cells).enumerate() {
        let top = body.top() + k as f32 * ROW_H;
        let row_rect = Rect::from_min_size(pos2(body.left(), top), vec2(body.width(), ROW_H));
        if Some(*index) == model.selected() {
            painter.rect_filled(row_rect, 0.0, ui.visuals().selection.bg_fill);
        } else if k % 2 == 1 {
            painter.rect_filled(row_rect, 0.0, ui.visuals().faint_bg_color);
        }
        if click.is_some_and(|p| row_rect.contains(p)) {
            out.push(Command::SelectRow(*index));
        }
        let color = class_color(r.flags, text_color);
        for (cell, x) in row.iter().zip(&xs) {
            if let Some(x) = x {
                painter.text(
                    pos2(*x, top + ROW_H / 2.0),
                    Align2::LEFT_CENTER,
                    cell,
                    font.clone(),
                    color,
                );
            }
        }
    }
    if total == 0 {
        painter.text(
            body.center(),
            Align2::CENTER_CENTER,
            query::empty_list_text(model),
            FontId::proportional(14.0),
            DIM,
        );
    }
}

fn detail_tree(ui: &mut Ui, model: &Model, st: &mut PanelState, out: &mut Vec<Command>) {
    let Some(sel) = st.sel_cache.clone() else {
        ui.weak("no packet selected");
        return;
    };
    let p = sel.packet();
    let mut fields = Vec::new();
    p.for_each_field(&mut |f| {
        fields.push((
            f.name,
            f.label,
            f.depth,
            query::field_value(f.name, &f.value),
        ))
    });
    let (current, _) = model.field_position();
    let frames = match st.detail_scrolled {
        Some((i, f, n)) if (i, f) == (sel.index, current) => n,
        _ => 0,
    };
    let scroll = frames < 2;
    st.detail_scrolled = Some((sel.index, current, frames.saturating_add(1)));
    // One line above the tree (the whole summary on hover): wrapped, it
    // took rows the tree was laid out into.
    ui.add(
        egui::Label::new(
            RichText::new(format!(
                "Frame {}: {}",
                sel.index + 1,
                p.summary().to_string().replace('→', ">")
            ))
            .strong(),
        )
        .truncate(),
    );
    egui::ScrollArea::vertical()
        .id_salt("detail")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            for (i, (name, label, depth, v)) in fields.iter().enumerate() {
                let text = if *depth == 0 {
                    RichText::new(label.to_string()).strong()
                } else {
                    RichText::new(format!("    {label}: {v}")).monospace()
                };
                let r = ui.selectable_label(i == current, text).on_hover_text(*name);
                if i == current && scroll {
                    r.scroll_to_me(Some(egui::Align::Center));
                }
                if r.clicked() {
                    out.push(Command::MoveField(i as i64 - current as i64));
                }
            }
        });
}

fn hex_view(ui: &mut Ui, model: &Model, st: &PanelState) {
    let Some(sel) = st.selected() else {
        return;
    };
    let p = sel.packet();
    let (current, _) = model.field_position();
    let mut range = (0, 0);
    let mut k = 0;
    p.for_each_field(&mut |f| {
        if k == current {
            range = (f.offset, f.len);
        }
        k += 1;
    });
    ui.strong(format!(
        "Hex ({} of {} bytes)",
        sel.bytes.len(),
        sel.row.origlen
    ));
    let font = FontId::monospace(12.0);
    let normal = ui.visuals().text_color();
    // 16 bytes a line where they fit, else 8 or 4: a line never wraps.
    let char_w = ui.fonts(|f| f.glyph_width(&font, '0'));
    let room = ui.available_width() - ui.spacing().scroll.bar_width - 4.0;
    let per_line = [16usize, 8, 4]
        .into_iter()
        // `0000  ` and `xx ` a byte, the last one's space not needed.
        .find(|n| (5 + 3 * n) as f32 * char_w <= room)
        .unwrap_or(4);
    egui::ScrollArea::vertical()
        .id_salt("hex")
        .auto_shrink([false, false])
        .show(ui, |ui| {
            for (line, chunk) in sel.bytes.chunks(per_line).enumerate() {
                let mut job = egui::text::LayoutJob::default();
                job.wrap.max_width = f32::INFINITY;
                job.append(
                    &format!("{:04x}  ", line * per_line),
                    0.0,
                    egui::TextFormat::simple(font.clone(), DIM),
                );
                for (j, b) in chunk.iter().enumerate() {
                    let off = line * per_line + j;
                    let on = off >= range.0 && off < range.0 + range.1;
                    let mut fmt = egui::TextFormat::simple(
                        font.clone(),
                        if on { Color32::BLACK } else { normal },
                    );
                    if on {
                        fmt.background = YELLOW;
                    }
                    job.append(&format!("{b:02x}"), 0.0, fmt);
                    job.append(" ", 0.0, egui::TextFormat::simple(font.clone(), normal));
                }
                ui.add(egui::Label::new(job).wrap_mode(egui::TextWrapMode::Extend));
            }
        });
}
