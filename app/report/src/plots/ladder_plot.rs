//! The report's ladder plot: one QP's frames as arrows between requester
//! and responder, a row each, with silences and the elided middle marked.

use super::*;

pub(super) struct LadderPlot<'v> {
    view: &'v View<'v>,
    ladder: &'v Ladder,
    /// Arrows preceded by a silence worth a row of its own: (arrow, ns).
    silences: Vec<(usize, u64)>,
}

/// A pause between two frames gets its own row when it is at least this
/// long and many times the usual spacing (a timer firing, a stall).
const SILENCE_MIN_NS: u64 = 10_000;
const SILENCE_TIMES_MEDIAN: u64 = 8;

impl<'v> LadderPlot<'v> {
    pub(super) fn new(view: &'v View<'v>, ladder: &'v Ladder) -> LadderPlot<'v> {
        let gaps: Vec<u64> = ladder
            .arrows
            .windows(2)
            .map(|w| w[1].row.ts_ns.saturating_sub(w[0].row.ts_ns))
            .collect();
        let mut sorted = gaps.clone();
        sorted.sort_unstable();
        let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
        let silences = if view.time.ordinal {
            Vec::new()
        } else {
            gaps.iter()
                .enumerate()
                .filter(|&(i, &g)| {
                    // Not across the elided middle: that row says enough.
                    ladder.gap.is_none_or(|(at, _)| at != i + 1)
                        && g >= SILENCE_MIN_NS
                        && g >= median.saturating_mul(SILENCE_TIMES_MEDIAN)
                })
                .map(|(i, &g)| (i + 1, g))
                .collect()
        };
        LadderPlot {
            view,
            ladder,
            silences,
        }
    }
}

/// Ladder geometry, pixels.
const LADDER_TOP: i32 = 120;
const LADDER_ROW: i32 = 26;
const LADDER_LEFT: i32 = 330;
const LADDER_RIGHT: i32 = 900;
const LADDER_LEGEND: i32 = 70;

/// Colour of an arrow: the most serious thing about its frame.
fn arrow_colour(f: Flags) -> RGBColor {
    if f.contains(Flags::NAK) || f.contains(Flags::ICRC_BAD) {
        RGBColor(200, 30, 30)
    } else if f.contains(Flags::RETRANSMISSION) {
        RGBColor(235, 120, 0)
    } else if f.contains(Flags::DUPLICATE) || f.contains(Flags::OUT_OF_SEQUENCE) {
        RGBColor(148, 103, 189)
    } else if f.contains(Flags::CNP) || f.contains(Flags::ECN_CE) {
        RGBColor(23, 150, 170)
    } else if f.contains(Flags::RESPONSE) {
        RGBColor(44, 140, 44)
    } else {
        RGBColor(31, 90, 160)
    }
}

impl LadderPlot<'_> {
    fn rows(&self) -> i32 {
        self.ladder.arrows.len() as i32
            + i32::from(self.ladder.gap.is_some())
            + self.silences.len() as i32
    }
}

impl Plot for LadderPlot<'_> {
    const NAME: &'static str = "ladder";
    fn size(&self) -> (u32, u32) {
        let h = LADDER_TOP + self.rows() * LADDER_ROW + 30 + LADDER_LEGEND;
        (WIDTH, h.max(0) as u32)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let view = self.view;
        let l = self.ladder;
        let e = &l.episode;
        let font = |size: i32| TextStyle::from((FONT, size).into_font()).color(&INK);
        let q = view.report.qps.get(l.qp);
        let title = match q {
            Some(q) => format!("Worst episode: {}  ({})", qp_name(q), qp_route(q)),
            None => "Worst episode".to_owned(),
        };
        root.draw(&Text::new(title, (20, 14), font(22)))?;
        let inferred = if e.nak_inferred {
            " (the NAK itself was not captured)"
        } else {
            ""
        };
        let mut sub = format!(
            "{}{inferred} at frame {}; resent from PSN {}: {} packets ({})",
            cause_text(e.cause),
            e.first_index + 1,
            e.from_psn,
            e.packets_resent,
            size_text(e.bytes_resent)
        );
        if !e.recovered {
            sub.push_str("; not recovered when the capture ends");
        } else if !view.time.ordinal {
            sub.push_str(&format!("; recovered in {}", duration_text(e.recovery_ns)));
        }
        root.draw(&Text::new(sub, (20, 46), font(15)))?;

        // The two ends and their lifelines.
        let (_, h) = self.size();
        let bottom = LADDER_TOP + self.rows() * LADDER_ROW + 10;
        let head = font(16).pos(Pos::new(HPos::Center, VPos::Bottom));
        let (req_name, resp_name) = match q {
            Some(q) => (
                format!("requester {}", text::addr(q.requester)),
                format!("responder {}", text::addr(q.responder)),
            ),
            None => ("requester".to_owned(), "responder".to_owned()),
        };
        root.draw(&Text::new(
            req_name,
            (LADDER_LEFT, LADDER_TOP - 14),
            head.clone(),
        ))?;
        root.draw(&Text::new(resp_name, (LADDER_RIGHT, LADDER_TOP - 14), head))?;
        root.draw(&Text::new(
            "frame   time",
            (20, LADDER_TOP - 14),
            font(14)
                .color(&MUTED)
                .pos(Pos::new(HPos::Left, VPos::Bottom)),
        ))?;

        // The episode's band, behind everything.
        let first_in = l.arrows.iter().position(|a| a.in_episode);
        if let Some(first_in) = first_in {
            let y0 = LADDER_TOP + first_in as i32 * LADDER_ROW - 4;
            root.draw(&Rectangle::new(
                [(12, y0), (WIDTH as i32 - 12, bottom - 6)],
                RGBColor(255, 246, 200).filled(),
            ))?;
            root.draw(&Text::new(
                "episode",
                (WIDTH as i32 - 18, y0 + 4),
                font(13).color(&MUTED).pos(Pos::new(HPos::Right, VPos::Top)),
            ))?;
        }
        for x in [LADDER_LEFT, LADDER_RIGHT] {
            root.draw(&PathElement::new(
                vec![(x, LADDER_TOP - 8), (x, bottom)],
                INK.stroke_width(2),
            ))?;
        }

        let t_first = l.arrows.first().map_or(0, |a| a.row.ts_ns);
        let mut row = 0i32;
        for (i, a) in l.arrows.iter().enumerate() {
            if let Some((at, skipped)) = l.gap
                && at == i
            {
                let y = LADDER_TOP + row * LADDER_ROW + LADDER_ROW / 2;
                root.draw(&Text::new(
                    format!("… {skipped} frames of this QP not shown …"),
                    ((LADDER_LEFT + LADDER_RIGHT) / 2, y),
                    font(14)
                        .color(&MUTED)
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                ))?;
                row += 1;
            }
            if let Some(&(_, ns)) = self.silences.iter().find(|(at, _)| *at == i) {
                let y = LADDER_TOP + row * LADDER_ROW + LADDER_ROW / 2;
                root.draw(&Text::new(
                    format!("… {} of silence …", duration_text(ns)),
                    ((LADDER_LEFT + LADDER_RIGHT) / 2, y),
                    font(14)
                        .color(&RGBColor(200, 30, 30))
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                ))?;
                row += 1;
            }
            let y = LADDER_TOP + row * LADDER_ROW;
            let colour = arrow_colour(a.row.flags);
            let (x0, x1) = if a.rightward {
                (LADDER_LEFT, LADDER_RIGHT)
            } else {
                (LADDER_RIGHT, LADDER_LEFT)
            };
            // Slanted down: the frame takes time to cross.
            let (y0, y1) = (y + 4, y + LADDER_ROW - 6);
            let width = if a.row.flags.contains(Flags::RETRANSMISSION)
                || a.row.flags.contains(Flags::NAK)
            {
                3
            } else {
                2
            };
            root.draw(&PathElement::new(
                vec![(x0, y0), (x1, y1)],
                colour.stroke_width(width),
            ))?;
            let dir = if a.rightward { -1 } else { 1 };
            root.draw(&Polygon::new(
                vec![(x1, y1), (x1 + dir * 12, y1 - 7), (x1 + dir * 11, y1 + 2)],
                colour.filled(),
            ))?;
            let mut text = format!("{}  PSN {}", short_opcode(a.row.opcode), a.row.psn);
            let tags = flag_text(Flags(
                a.row.flags.0
                    & (Flags::RETRANSMISSION.0
                        | Flags::NAK.0
                        | Flags::DUPLICATE.0
                        | Flags::OUT_OF_SEQUENCE.0
                        | Flags::CAPTURE_LOSS.0
                        | Flags::ECN_CE.0),
            ));
            if !tags.is_empty() {
                text.push_str("  ");
                text.push_str(&tags);
            }
            root.draw(&Text::new(
                text,
                ((LADDER_LEFT + LADDER_RIGHT) / 2, (y0 + y1) / 2 - 3),
                font(14)
                    .color(&colour)
                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))?;
            let when = if view.time.ordinal {
                format!("#{}", a.index + 1)
            } else {
                format!(
                    "#{:<8} +{:.3} µs",
                    a.index + 1,
                    a.row.ts_ns.saturating_sub(t_first) as f64 / 1e3
                )
            };
            root.draw(&Text::new(
                when,
                (20, (y0 + y1) / 2),
                font(14)
                    .color(&MUTED)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
            row += 1;
        }

        // Legend: what the colours mean.
        let items = [
            (RGBColor(31, 90, 160), "request"),
            (RGBColor(44, 140, 44), "ACK / READ response"),
            (RGBColor(235, 120, 0), "resent (RETX)"),
            (RGBColor(200, 30, 30), "NAK"),
            (RGBColor(148, 103, 189), "duplicate / out of sequence"),
            (RGBColor(23, 150, 170), "congestion (CNP, ECN)"),
        ];
        let y = h as i32 - LADDER_LEGEND / 2;
        let mut x = 20;
        for (colour, name) in items {
            root.draw(&PathElement::new(
                vec![(x, y), (x + 22, y)],
                colour.stroke_width(3),
            ))?;
            let style = font(14).pos(Pos::new(HPos::Left, VPos::Center));
            let (tw, _) = root.estimate_text_size(name, &style)?;
            root.draw(&Text::new(name, (x + 28, y), style))?;
            x += 28 + tw as i32 + 22;
        }
        Ok(())
    }
}
