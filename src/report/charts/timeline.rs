//! A disagreement session's timeline: activity per turn and where each
//! selected configuration fires.

use super::*;

/// One detection lane: the configurations that fired at the same turn with the same kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// Configuration labels.
    pub labels: Vec<String>,
    /// Their ids, in the same order.
    pub configs: Vec<String>,
    /// Turn of the first detection.
    pub turn: u64,
    /// Detection kind.
    pub kind: String,
    /// Includes the recommended configuration.
    pub recommended: bool,
}

/// A disagreement session's timeline numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// Session id.
    pub session: String,
    /// Turns.
    pub turns: u64,
    /// Labeled onset.
    pub onset: Option<u64>,
    /// Per turn: tool calls, tool errors, content chunks.
    pub activity: Vec<[u64; 3]>,
    /// Detection lanes, earliest first.
    pub lanes: Vec<Lane>,
    /// Selected configurations that did not fire on this session.
    pub silent: Vec<String>,
}

/// A session's activity per turn and where each selected configuration fires.
pub fn timeline_data(d: &ReportData, s: &Disagreement) -> Timeline {
    let rec = d
        .rows
        .iter()
        .find(|r| r.recommended)
        .map(|r| r.config.as_str());
    let mut activity = vec![[0u64; 3]; s.turns as usize + 1];
    for t in &s.timeline {
        if let Some(a) = activity.get_mut(t.turn as usize) {
            *a = [t.tool_calls, t.tool_errors, t.content];
        }
    }
    let mut lanes: Vec<Lane> = Vec::new();
    for det in &s.detections {
        let is_rec = rec == Some(det.config.as_str());
        match lanes
            .iter_mut()
            .find(|l| l.turn == det.turn && l.kind == det.kind)
        {
            Some(l) => {
                l.labels.push(det.label.clone());
                l.configs.push(det.config.clone());
                l.recommended |= is_rec;
            }
            None => lanes.push(Lane {
                labels: vec![det.label.clone()],
                configs: vec![det.config.clone()],
                turn: det.turn,
                kind: det.kind.clone(),
                recommended: is_rec,
            }),
        }
    }
    lanes.sort_by_key(|l| l.turn);
    let silent = selected(d)
        .into_iter()
        .filter(|r| !s.detections.iter().any(|x| x.config == r.config))
        .map(|r| d.label(r).to_string())
        .collect();
    Timeline {
        session: s.session.clone(),
        turns: s.turns,
        onset: s.onset_turn,
        activity,
        lanes,
        silent,
    }
}

fn lane_name(l: &Lane) -> String {
    let first = short(&l.labels[0], 26);
    let name = if l.labels.len() > 1 {
        format!("{first} +{}", l.labels.len() - 1)
    } else {
        first
    };
    if l.recommended {
        format!("★ {name}")
    } else {
        name
    }
}

/// Turns across; lanes for tool calls, tool errors and content (bar height is
/// the count relative to the session's busiest turn), then one lane per group
/// of configurations firing together; the labeled onset as a dashed line.
pub fn timeline_chart(t: &Timeline) -> Draw<String> {
    let activity = ["tool calls", "tool errors", "content"];
    let n = activity.len() + t.lanes.len();
    let height = 84 + LANE_PX * n as u32 + 10;
    let x1 = t.turns as f64 + 0.5;
    svg_marked((TIMELINE_WIDTH, height), |root, marks| {
        let (labels, plot) = root.split_horizontally(230);
        // Lane 0 at the top: y runs from n (top) down to 0.
        let mut ch = ChartBuilder::on(&plot)
            .margin_top(24)
            .margin_right(16)
            .x_label_area_size(40)
            .y_label_area_size(0)
            .build_cartesian_2d(-0.5..x1, 0.0..n as f64)?;
        ch.configure_mesh()
            .disable_y_mesh()
            .light_line_style(WHITE)
            .bold_line_style(GRID)
            .x_desc("turn")
            .label_style(font(SMALL_PT - 1.0))
            .axis_desc_style(font(SMALL_PT - 1.0))
            .x_label_formatter(&whole)
            .draw()?;
        let lane_y = |i: usize| n as f64 - i as f64 - 0.5;
        let lane_px: Vec<i32> = (0..n)
            .map(|i| ch.backend_coord(&(0.0, lane_y(i))).1)
            .collect();
        let lane_label = |i: usize, text: String, colour: RGBColor| -> Draw {
            let py = lane_px[i];
            labels.draw(&Text::new(
                text,
                (222, py),
                font(SMALL_PT - 1.0)
                    .color(&colour)
                    .pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
            Ok(())
        };
        for (k, name) in activity.iter().enumerate() {
            let colour = [TOOL, ERR, CONTENT][k];
            lane_label(k, (*name).to_string(), INK)?;
            let max = t.activity.iter().map(|a| a[k]).max().unwrap_or(0).max(1) as f64;
            let base = lane_y(k) - 0.4;
            ch.draw_series(t.activity.iter().enumerate().filter(|(_, a)| a[k] > 0).map(
                |(turn, a)| {
                    let h = 0.8 * (a[k] as f64 / max).max(0.2);
                    let x = turn as f64;
                    Rectangle::new([(x - 0.4, base), (x + 0.4, base + h)], colour.filled())
                },
            ))?;
        }
        for (i, l) in t.lanes.iter().enumerate() {
            let k = activity.len() + i;
            let colour = if l.recommended { PALETTE[0] } else { INK };
            lane_label(k, lane_name(l), colour)?;
            let y = lane_y(k);
            ch.draw_series(std::iter::once(PathElement::new(
                vec![(-0.5, y), (l.turn as f64, y)],
                GRID.stroke_width(2),
            )))?;
            ch.draw_series(std::iter::once(Circle::new(
                (l.turn as f64, y),
                6,
                colour.filled(),
            )))?;
            let (px, py) = ch.backend_coord(&(l.turn as f64, y));
            let who = match (l.recommended, l.configs.len()) {
                (false, _) => "",
                (true, 1) => "the recommended configuration\n",
                (true, _) => "includes the recommended configuration\n",
            };
            let title = format!(
                "{}\n{who}first fires at turn {} ({})",
                members_text(&l.labels),
                l.turn,
                l.kind
            );
            let link = members_link(&l.configs);
            marks.push(Mark::new(link, title.clone(), Shape::Circle((px, py), 8)));
            // The lane's name too: a bigger target than the dot.
            let half = LANE_PX as i32 / 2;
            marks.push(Mark::new(
                link,
                title,
                Shape::Rect((0, py - half), (228, py + half)),
            ));
            // Beside the marker, on whichever side has room.
            let right = (l.turn as f64) > t.turns as f64 * 0.7;
            root.draw(&Text::new(
                format!("turn {} · {}", l.turn, l.kind),
                (if right { px - 10 } else { px + 10 }, py),
                font(SMALL_PT - 2.0).pos(Pos::new(
                    if right { HPos::Right } else { HPos::Left },
                    VPos::Center,
                )),
            ))?;
        }
        if let Some(on) = t.onset {
            let x = on as f64 - 0.5;
            ch.draw_series(DashedLineSeries::new(
                vec![(x, 0.0), (x, n as f64)],
                6,
                4,
                PALETTE[2].stroke_width(2),
            ))?;
            let (px, py) = ch.backend_coord(&(x, n as f64));
            root.draw(&Text::new(
                format!("labeled onset (turn {on})"),
                (px + 4, py - 4),
                font(SMALL_PT - 1.5)
                    .color(&PALETTE[2])
                    .pos(Pos::new(HPos::Left, VPos::Bottom)),
            ))?;
        }
        Ok(())
    })
}
