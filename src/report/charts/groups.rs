//! Small multiples of the summary's rows per group: one panel per group, a
//! bar per row (baseline, recommendation, family bests, union) for the share
//! of the group's labelled loops it catches, its false positives written at
//! the bar's end. A choice that helps one agent and hurts another shows as a
//! longer bar in one panel and a shorter one (or a red count) in another.

use super::{font, short, svg, Draw, GRID, INK, LABEL_PT, MUTED, PALETTE, SMALL_PT};
use crate::report::model::GroupsView;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Panels per line of the chart.
const PER_LINE: usize = 3;
/// Width and row height of one panel.
const PANEL_W: u32 = 330;
const ROW_PX: u32 = 22;

/// One colour per role, the same in every panel: the baseline ink, the
/// recommendation vermillion, every family's best blue, the union green.
fn colour(role: &str) -> RGBColor {
    match role {
        "baseline" => INK,
        "recommended" => PALETTE[0],
        "union" => PALETTE[2],
        _ => PALETTE[1],
    }
}

/// The chart's size for a view.
pub fn groups_size(v: &GroupsView) -> (u32, u32) {
    let lines = v.names.len().div_ceil(PER_LINE).max(1) as u32;
    let panel_h = 56 + ROW_PX * v.rows.len().max(1) as u32;
    (PANEL_W * PER_LINE as u32, lines * panel_h)
}

/// Draw the small multiples.
pub fn groups_chart(v: &GroupsView) -> Draw<String> {
    let size = groups_size(v);
    if v.rows.is_empty() || v.names.is_empty() {
        return super::empty_chart(size, "Nothing to compare: no labelled loops.");
    }
    let panel_h = size.1 / v.names.len().div_ceil(PER_LINE).max(1) as u32;
    svg(size, |root| {
        for (gi, name) in v.names.iter().enumerate() {
            let (col, line) = ((gi % PER_LINE) as i32, (gi / PER_LINE) as i32);
            let (x0, y0) = (col * PANEL_W as i32, line * panel_h as i32);
            let area = root.clone().shrink((x0, y0), (PANEL_W, panel_h));
            let loops = v.rows[0].counts[gi].loops;
            let clean = v.rows[0].counts[gi].clean;
            area.draw(&Text::new(
                format!("{} ({loops} loops, {clean} clean)", short(name, 26)),
                (8, 6),
                font(LABEL_PT),
            ))?;
            let left = 118i32;
            let right = PANEL_W as i32 - 70;
            let top = 30i32;
            // The 0% and 100% marks.
            for x in [left, right] {
                area.draw(&PathElement::new(
                    vec![(x, top), (x, top + (ROW_PX * v.rows.len() as u32) as i32)],
                    GRID.stroke_width(1),
                ))?;
            }
            for (k, row) in v.rows.iter().enumerate() {
                let c = row.counts[gi];
                let y = top + (k as u32 * ROW_PX) as i32;
                area.draw(&Text::new(
                    short(&row.role, 16),
                    (6, y + ROW_PX as i32 / 2),
                    font(SMALL_PT).pos(Pos::new(HPos::Left, VPos::Center)),
                ))?;
                if c.loops > 0 {
                    let w = ((right - left) as f64 * c.tp as f64 / c.loops as f64).round() as i32;
                    area.draw(&Rectangle::new(
                        [(left, y + 4), (left + w.max(1), y + ROW_PX as i32 - 4)],
                        colour(&row.role).filled(),
                    ))?;
                } else {
                    area.draw(&PathElement::new(
                        vec![
                            (left, y + ROW_PX as i32 / 2),
                            (right, y + ROW_PX as i32 / 2),
                        ],
                        MUTED.stroke_width(1),
                    ))?;
                }
                let base = v.rows[0].counts[gi];
                let worse = k > 0 && c.worse_than(&base);
                let text = if c.loops > 0 {
                    format!("{}/{} · fp {}", c.tp, c.loops, c.fp)
                } else {
                    format!("fp {}/{}", c.fp, c.clean)
                };
                area.draw(&Text::new(
                    text,
                    (right + 4, y + ROW_PX as i32 / 2),
                    font(SMALL_PT)
                        .color(if worse { &PALETTE[0] } else { &INK })
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                ))?;
            }
        }
        Ok(())
    })
}
