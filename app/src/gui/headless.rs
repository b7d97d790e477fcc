//! Drawing the workbench without a window: fixed-input frames, the text
//! they draw (for overlap and missing-glyph checks) and a small software
//! rasterizer of egui's meshes (per-vertex colour, the font atlas,
//! premultiplied alpha, clip rects), compared with committed PNGs.
//!
//! `ROCESCOPE_ACCEPT_GOLDEN=1` rewrites the committed images
//! (app/scripts/accept-golden.sh).
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use eframe::egui;
use egui::epaint::{ClippedPrimitive, Primitive, Vertex};
use egui::{Color32, FullOutput, Pos2, RawInput, Rect, Shape, TextureId, pos2, vec2};

use super::Workbench;

/// A context drawing at 1 px a point, without animations or a blinking
/// cursor, and the textures its frames uploaded.
pub struct Headless {
    pub ctx: egui::Context,
    pub size: egui::Vec2,
    textures: HashMap<TextureId, Texture>,
    frames: u32,
}

struct Texture {
    size: [usize; 2],
    px: Vec<Color32>,
}

/// One text shape as drawn: its text, visible rect (clipped) and the
/// rects of its rows (clipped, without leading/trailing blanks).
#[derive(Debug, Clone)]
pub struct DrawnText {
    pub text: String,
    pub rows: Vec<Rect>,
    pub missing: Vec<char>,
    /// Some of its glyphs lie outside its clip rect (cut off).
    pub clipped: bool,
}

impl Headless {
    pub fn new(w: f32, h: f32) -> Headless {
        let ctx = egui::Context::default();
        ctx.style_mut(|s| {
            s.animation_time = 0.0;
            s.visuals.text_cursor.blink = false;
        });
        Headless {
            ctx,
            size: vec2(w, h),
            textures: HashMap::new(),
            frames: 0,
        }
    }

    /// One frame of `wb` with `events`; textures are kept.
    pub fn frame(&mut self, wb: &mut Workbench, events: Vec<egui::Event>) -> FullOutput {
        let raw = RawInput {
            screen_rect: Some(Rect::from_min_size(Pos2::ZERO, self.size)),
            time: Some(f64::from(self.frames) / 60.0),
            predicted_dt: 1.0 / 60.0,
            events,
            ..RawInput::default()
        };
        self.frames += 1;
        let out = self.ctx.run(raw, |ctx| {
            ctx.set_pixels_per_point(1.0);
            wb.frame(ctx);
        });
        self.upload(&out);
        out
    }

    /// Frames until the layout settles; the last one's output.
    pub fn settle(&mut self, wb: &mut Workbench) -> FullOutput {
        for _ in 0..4 {
            self.frame(wb, Vec::new());
        }
        self.frame(wb, Vec::new())
    }

    fn upload(&mut self, out: &FullOutput) {
        for (id, delta) in &out.textures_delta.set {
            let egui::ImageData::Color(img) = &delta.image;
            match delta.pos {
                None => {
                    self.textures.insert(
                        *id,
                        Texture {
                            size: img.size,
                            px: img.pixels.clone(),
                        },
                    );
                }
                Some([x0, y0]) => {
                    let Some(t) = self.textures.get_mut(id) else {
                        continue;
                    };
                    for y in 0..img.size[1] {
                        for x in 0..img.size[0] {
                            let (tx, ty) = (x0 + x, y0 + y);
                            if tx < t.size[0] && ty < t.size[1] {
                                t.px[ty * t.size[0] + tx] = img.pixels[y * img.size[0] + x];
                            }
                        }
                    }
                }
            }
        }
        for id in &out.textures_delta.free {
            self.textures.remove(id);
        }
    }

    /// The text `out` draws, with rows clipped to their clip rects.
    pub fn texts(&self, out: &FullOutput) -> Vec<DrawnText> {
        self.texts_in(&self.ctx, out)
    }

    /// [`Self::texts`] of a frame of another context.
    pub fn texts_in(&self, ctx: &egui::Context, out: &FullOutput) -> Vec<DrawnText> {
        let mut v = Vec::new();
        for c in &out.shapes {
            texts_of(ctx, &c.shape, c.clip_rect, &mut v);
        }
        v
    }

    /// Rasterize `out` into an RGBA image (opaque, on the panel colour).
    pub fn render(&self, out: &FullOutput) -> Rgba {
        let prims = self.ctx.tessellate(out.shapes.clone(), 1.0);
        let bg = self.ctx.style().visuals.panel_fill;
        let mut img = Rgba::new(self.size.x as usize, self.size.y as usize, bg);
        for p in &prims {
            self.draw(&mut img, p);
        }
        img
    }

    fn draw(&self, img: &mut Rgba, p: &ClippedPrimitive) {
        let Primitive::Mesh(mesh) = &p.primitive else {
            return;
        };
        let tex = self.textures.get(&mesh.texture_id);
        let clip = p
            .clip_rect
            .intersect(Rect::from_min_size(Pos2::ZERO, self.size));
        if !clip.is_positive() {
            return;
        }
        for t in mesh.indices.chunks_exact(3) {
            let [a, b, c] = [t[0], t[1], t[2]].map(|i| mesh.vertices.get(i as usize));
            if let (Some(a), Some(b), Some(c)) = (a, b, c) {
                triangle(img, clip, tex, [a, b, c]);
            }
        }
    }
}

fn texts_of(ctx: &egui::Context, shape: &Shape, clip: Rect, v: &mut Vec<DrawnText>) {
    match shape {
        Shape::Vec(s) => s.iter().for_each(|s| texts_of(ctx, s, clip, v)),
        Shape::Text(t) => {
            let g = &t.galley;
            let mut rows = Vec::new();
            let mut clipped = false;
            for row in &g.rows {
                let visible: Vec<_> = row
                    .glyphs
                    .iter()
                    .filter(|g| !g.chr.is_whitespace())
                    .collect();
                let (Some(first), Some(last)) = (visible.first(), visible.last()) else {
                    continue;
                };
                let local = Rect::from_min_max(
                    pos2(row.pos.x + first.pos.x, row.pos.y),
                    pos2(
                        row.pos.x + last.pos.x + last.advance_width,
                        row.pos.y + row.size.y,
                    ),
                );
                // Rotated text (a plot's y label) turns about its position.
                let rot = egui::emath::Rot2::from_angle(t.angle);
                let corners = [
                    local.left_top(),
                    local.right_top(),
                    local.left_bottom(),
                    local.right_bottom(),
                ]
                .map(|c| t.pos + rot * c.to_vec2());
                let whole = Rect::from_points(&corners);
                // Half a pixel of slack: glyph edges are not pixel-exact.
                clipped |= !clip.expand(0.5).contains_rect(whole);
                let r = whole.intersect(clip);
                if r.is_positive() {
                    rows.push(r);
                }
            }
            let mut missing = Vec::new();
            for s in &g.job.sections {
                let Some(part) = g.job.text.get(s.byte_range.clone()) else {
                    continue;
                };
                for ch in part
                    .chars()
                    .filter(|c| !c.is_whitespace() && !c.is_control())
                {
                    if !ctx.fonts(|f| f.has_glyph(&s.format.font_id, ch)) && !missing.contains(&ch)
                    {
                        missing.push(ch);
                    }
                }
            }
            if !rows.is_empty() {
                v.push(DrawnText {
                    text: g.text().to_owned(),
                    rows,
                    missing,
                    clipped,
                });
            }
        }
        _ => {}
    }
}

/// Pairs of texts whose rows overlap by more than `tol` px both ways.
pub fn overlaps(texts: &[DrawnText], tol: f32) -> Vec<String> {
    let mut bad = Vec::new();
    for (i, a) in texts.iter().enumerate() {
        for b in &texts[i + 1..] {
            for ra in &a.rows {
                for rb in &b.rows {
                    let x = ra.intersect(*rb);
                    if x.width() > tol && x.height() > tol {
                        bad.push(format!("{:?} at {ra:?} and {:?} at {rb:?}", a.text, b.text));
                    }
                }
            }
        }
    }
    bad
}

/// An RGBA8 image, row-major.
#[derive(Clone)]
pub struct Rgba {
    pub w: usize,
    pub h: usize,
    /// Premultiplied, 0..=1.
    px: Vec<[f32; 4]>,
}

impl Rgba {
    fn new(w: usize, h: usize, bg: Color32) -> Rgba {
        let c = [bg.r(), bg.g(), bg.b()].map(|v| f32::from(v) / 255.0);
        Rgba {
            w,
            h,
            px: vec![[c[0], c[1], c[2], 1.0]; w * h],
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.px
            .iter()
            .flat_map(|p| p.map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8))
            .collect()
    }
}

fn edge(a: Pos2, b: Pos2, p: Pos2) -> f32 {
    (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x)
}

/// Whether pixel centres exactly on edge a->b belong to this triangle
/// (a top-left rule: of two triangles sharing an edge, one owns it).
fn owns(a: Pos2, b: Pos2) -> bool {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    dy > 0.0 || (dy == 0.0 && dx < 0.0)
}

fn sample(t: &Texture, uv: Pos2) -> [f32; 4] {
    let (w, h) = (t.size[0], t.size[1]);
    if w == 0 || h == 0 {
        return [1.0; 4];
    }
    let x = (uv.x * w as f32 - 0.5).clamp(0.0, (w - 1) as f32);
    let y = (uv.y * h as f32 - 0.5).clamp(0.0, (h - 1) as f32);
    let (x0, y0) = (x.floor() as usize, y.floor() as usize);
    let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
    let (fx, fy) = (x - x0 as f32, y - y0 as f32);
    let at = |x: usize, y: usize| t.px[y * w + x].to_array().map(|v| f32::from(v) / 255.0);
    let (p00, p10, p01, p11) = (at(x0, y0), at(x1, y0), at(x0, y1), at(x1, y1));
    let mut out = [0.0; 4];
    for k in 0..4 {
        let top = p00[k] + (p10[k] - p00[k]) * fx;
        let bottom = p01[k] + (p11[k] - p01[k]) * fx;
        out[k] = top + (bottom - top) * fy;
    }
    out
}

fn triangle(img: &mut Rgba, clip: Rect, tex: Option<&Texture>, v: [&Vertex; 3]) {
    let [mut a, mut b, c] = v;
    let mut area = edge(a.pos, b.pos, c.pos);
    if area == 0.0 || !area.is_finite() {
        return;
    }
    if area < 0.0 {
        std::mem::swap(&mut a, &mut b);
        area = -area;
    }
    let min = a.pos.min(b.pos).min(c.pos).max(clip.min);
    let max = a.pos.max(b.pos).max(c.pos).min(clip.max);
    if min.x >= max.x || min.y >= max.y {
        return;
    }
    let col = |v: &Vertex| v.color.to_array().map(|x| f32::from(x) / 255.0);
    let (ca, cb, cc) = (col(a), col(b), col(c));
    // Solid shapes sample one texel (egui's white pixel) and often have
    // one colour: work that per triangle, not per pixel (debug builds).
    let same_uv = a.uv == b.uv && b.uv == c.uv;
    let same_color = a.color == b.color && b.color == c.color;
    let texel = match tex {
        Some(t) if same_uv => sample(t, a.uv),
        _ => [1.0; 4],
    };
    let mut solid = ca;
    for k in 0..4 {
        solid[k] *= texel[k];
    }
    // Pixel centres inside the clip rect and the bounding box.
    let xs = ((min.x - 0.5).ceil().max(clip.min.x - 0.5).ceil().max(0.0)) as usize;
    let ys = ((min.y - 0.5).ceil().max(clip.min.y - 0.5).ceil().max(0.0)) as usize;
    let xe = ((max.x - 0.5).floor().min(clip.max.x - 0.5).floor()).min(img.w as f32 - 1.0);
    let ye = ((max.y - 0.5).floor().min(clip.max.y - 0.5).floor()).min(img.h as f32 - 1.0);
    if xe < 0.0 || ye < 0.0 {
        return;
    }
    let (xe, ye) = (xe as usize, ye as usize);
    let (own_bc, own_ca, own_ab) = (owns(b.pos, c.pos), owns(c.pos, a.pos), owns(a.pos, b.pos));
    let (ax, ay, bx, by, cx, cy) = (a.pos.x, a.pos.y, b.pos.x, b.pos.y, c.pos.x, c.pos.y);
    for y in ys..=ye {
        let py = y as f32 + 0.5;
        for x in xs..=xe {
            let px = x as f32 + 0.5;
            let ea = (cx - bx) * (py - by) - (cy - by) * (px - bx);
            let eb = (ax - cx) * (py - cy) - (ay - cy) * (px - cx);
            let ec = (bx - ax) * (py - ay) - (by - ay) * (px - ax);
            if ea < 0.0 || eb < 0.0 || ec < 0.0 {
                continue;
            }
            if (ea == 0.0 && !own_bc) || (eb == 0.0 && !own_ca) || (ec == 0.0 && !own_ab) {
                continue;
            }
            let src = if same_uv && same_color {
                solid
            } else {
                let (wa, wb, wc) = (ea / area, eb / area, ec / area);
                let mut src = [0.0f32; 4];
                for k in 0..4 {
                    src[k] = ca[k] * wa + cb[k] * wb + cc[k] * wc;
                }
                if same_uv {
                    for k in 0..4 {
                        src[k] *= texel[k];
                    }
                } else if let Some(t) = tex {
                    let uv = pos2(
                        a.uv.x * wa + b.uv.x * wb + c.uv.x * wc,
                        a.uv.y * wa + b.uv.y * wb + c.uv.y * wc,
                    );
                    let s = sample(t, uv);
                    for k in 0..4 {
                        src[k] *= s[k];
                    }
                }
                src
            };
            let d = &mut img.px[y * img.w + x];
            let keep = 1.0 - src[3];
            d[0] = src[0] + d[0] * keep;
            d[1] = src[1] + d[1] * keep;
            d[2] = src[2] + d[2] * keep;
            d[3] = src[3] + d[3] * keep;
        }
    }
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/gui/golden")
}

fn out_dir() -> PathBuf {
    let app = Path::new(env!("CARGO_MANIFEST_DIR"));
    app.parent().unwrap_or(app).join("target/golden")
}

/// Write an RGBA PNG: `small` (committed images) compresses harder, which
/// takes a second in a debug build.
fn write_png(path: &Path, w: usize, h: usize, rgba: &[u8], small: bool) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut enc = png::Encoder::new(file, w as u32, h as u32);
    enc.set_color(png::ColorType::Rgba);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(if small {
        png::Compression::High
    } else {
        png::Compression::Fast
    });
    enc.write_header().unwrap().write_image_data(rgba).unwrap();
}

fn read_png(path: &Path) -> Option<(usize, usize, Vec<u8>)> {
    let file = std::io::BufReader::new(std::fs::File::open(path).ok()?);
    let mut dec = png::Decoder::new(file);
    dec.set_transformations(png::Transformations::EXPAND);
    let mut reader = dec.read_info().ok()?;
    let mut buf = vec![0; reader.output_buffer_size()?];
    let info = reader.next_frame(&mut buf).ok()?;
    if info.color_type != png::ColorType::Rgba || info.bit_depth != png::BitDepth::Eight {
        return None;
    }
    buf.truncate(info.buffer_size());
    Some((info.width as usize, info.height as usize, buf))
}

/// A pixel differs when a channel is off by more than this.
pub const PIXEL_TOLERANCE: u8 = 24;
/// The image differs when more than this fraction of its pixels do.
pub const MAX_DIFF_FRACTION: f64 = 0.002;

/// Compare `img` with the committed `golden/NAME.png`; with
/// ROCESCOPE_ACCEPT_GOLDEN set, write it there instead. On a mismatch the
/// actual and a diff image are written under target/golden/.
pub fn check_golden(name: &str, img: &Rgba) -> Result<(), String> {
    let golden = golden_dir().join(format!("{name}.png"));
    let actual = img.bytes();
    if std::env::var_os("ROCESCOPE_ACCEPT_GOLDEN").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        write_png(&golden, img.w, img.h, &actual, true);
        return Ok(());
    }
    std::fs::create_dir_all(out_dir()).unwrap();
    let actual_path = out_dir().join(format!("{name}.actual.png"));
    let diff_path = out_dir().join(format!("{name}.diff.png"));
    let accept = "run app/scripts/accept-golden.sh if the change is intended";
    let Some((w, h, want)) = read_png(&golden) else {
        write_png(&actual_path, img.w, img.h, &actual, false);
        return Err(format!(
            "no golden image {} (actual: {}); {accept}",
            golden.display(),
            actual_path.display()
        ));
    };
    if (w, h) != (img.w, img.h) {
        write_png(&actual_path, img.w, img.h, &actual, false);
        return Err(format!(
            "{name}: golden is {w}x{h}, drawn {}x{} (actual: {}); {accept}",
            img.w,
            img.h,
            actual_path.display()
        ));
    }
    let mut diff = vec![0u8; actual.len()];
    let mut differing = 0usize;
    for (i, (a, b)) in actual.chunks_exact(4).zip(want.chunks_exact(4)).enumerate() {
        let off = a
            .iter()
            .zip(b)
            .map(|(x, y)| x.abs_diff(*y))
            .max()
            .unwrap_or(0);
        let d = &mut diff[i * 4..i * 4 + 4];
        if off > PIXEL_TOLERANCE {
            differing += 1;
            d.copy_from_slice(&[255, 0, 255, 255]);
        } else {
            // The golden, dimmed, for orientation.
            d.copy_from_slice(&[b[0] / 4, b[1] / 4, b[2] / 4, 255]);
        }
    }
    let fraction = differing as f64 / (w * h).max(1) as f64;
    if fraction > MAX_DIFF_FRACTION {
        write_png(&actual_path, img.w, img.h, &actual, false);
        write_png(&diff_path, img.w, img.h, &diff, false);
        return Err(format!(
            "{name}: {differing} pixels ({:.2} %) differ from {} by more than {PIXEL_TOLERANCE} \
             (allowed {:.2} %); actual: {}, diff: {}; {accept}",
            fraction * 100.0,
            golden.display(),
            MAX_DIFF_FRACTION * 100.0,
            actual_path.display(),
            diff_path.display()
        ));
    }
    // A pass clears what an earlier failure left.
    let _ = std::fs::remove_file(&actual_path);
    let _ = std::fs::remove_file(&diff_path);
    Ok(())
}
