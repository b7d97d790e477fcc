//! Explain: the selected packet in words.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use rocescope_core::{Model, explain};

use super::title;

pub(super) fn explain_view(f: &mut Frame<'_>, model: &Model, area: Rect) {
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
