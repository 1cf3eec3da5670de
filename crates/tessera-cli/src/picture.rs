//! Pictures: `tessera show --png` (a 2-D slice of a dense array as a heat map with a colour
//! bar, sparse cells as a scatter coloured by an attribute) and `tessera fragments --svg`
//! (each fragment's non-empty domain over the array's domain, coloured by timestamp).

use std::fmt::Write as _;
use std::io::BufWriter;
use std::path::Path;

use anyhow::{Context, Result, bail};
use tessera::layers::query::Column;
use tessera::layers::schema::Value;
use tessera::layers::types::Datatype;
use tessera::{Array, Dimension};

/// A colour of the viridis map at `t` in `[0, 1]` (linear between nine stops).
fn viridis(t: f64) -> [u8; 3] {
    const STOPS: [[u8; 3]; 9] = [
        [68, 1, 84],
        [71, 44, 122],
        [59, 81, 139],
        [44, 113, 142],
        [33, 144, 141],
        [39, 173, 129],
        [92, 200, 99],
        [170, 220, 50],
        [253, 231, 37],
    ];
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let x = t * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    [
        mix(STOPS[i][0], STOPS[i + 1][0]),
        mix(STOPS[i][1], STOPS[i + 1][1]),
        mix(STOPS[i][2], STOPS[i + 1][2]),
    ]
}

/// A number of a numeric datatype's bytes (`None` for strings and blobs).
fn number(dt: Datatype, bytes: &[u8]) -> Option<f64> {
    match Value::decode(dt, bytes).ok()? {
        Value::Int(v) => Some(v as f64),
        Value::UInt(v) => Some(v as f64),
        Value::Float(v) => Some(v),
        Value::Bytes(_) => None,
    }
}

/// The numbers of a column with one value per cell (`None` for null cells and NaN).
fn numbers(c: &Column) -> Result<Vec<Option<f64>>> {
    if c.is_var() || c.cell_val_num != 1 {
        bail!("{:?} does not hold one number per cell", c.name);
    }
    (0..c.len())
        .map(|i| {
            if !c.is_valid(i) {
                return Ok(None);
            }
            let b = c.cell(i).unwrap_or_default();
            let v =
                number(c.datatype, b).with_context(|| format!("{:?} is not numeric", c.name))?;
            Ok(Some(v).filter(|v| !v.is_nan()))
        })
        .collect()
}

/// Bounds of the values that are there, `(0, 1)` when none are.
fn bounds(values: &[Option<f64>]) -> (f64, f64) {
    let (lo, hi) = values
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) }
}

/// What `tessera show --png` wrote, for its one-line report.
#[derive(Debug)]
pub(crate) struct Shown {
    /// Image width and height in pixels.
    pub(crate) size: (u32, u32),
    /// The cells drawn.
    pub(crate) cells: usize,
    /// The attribute's smallest and largest value (the bottom and top of the colour bar).
    pub(crate) range: (f64, f64),
}

/// Background, and the colour of null or fill cells.
const BACKGROUND: [u8; 4] = [255, 255, 255, 255];
const MISSING: [u8; 4] = [200, 200, 200, 255];
/// Pixels of the colour bar and of the gap before it.
const BAR: u32 = 24;
const GAP: u32 = 12;

/// An RGBA canvas.
struct Canvas {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: u32, height: u32) -> Self {
        Canvas { width, height, pixels: BACKGROUND.repeat((width * height) as usize) }
    }

    fn fill(&mut self, x0: u32, y0: u32, w: u32, h: u32, rgba: [u8; 4]) {
        for y in y0..(y0 + h).min(self.height) {
            for x in x0..(x0 + w).min(self.width) {
                let at = ((y * self.width + x) * 4) as usize;
                self.pixels[at..at + 4].copy_from_slice(&rgba);
            }
        }
    }

    /// The colour bar at the right edge, `lo` at the bottom, `hi` at the top.
    fn colour_bar(&mut self, top: u32, height: u32) {
        let x0 = self.width - BAR;
        self.fill(x0 - 1, top.saturating_sub(1), BAR + 1, height + 2, [0, 0, 0, 255]);
        for y in 0..height {
            let t = 1.0 - f64::from(y) / f64::from((height - 1).max(1));
            let [r, g, b] = viridis(t);
            self.fill(x0, top + y, BAR - 1, 1, [r, g, b, 255]);
        }
    }

    fn save(&self, path: &Path, texts: &[(&str, String)]) -> Result<()> {
        let file = std::fs::File::create(path).with_context(|| path.display().to_string())?;
        let mut encoder = png::Encoder::new(BufWriter::new(file), self.width, self.height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        for (key, value) in texts {
            encoder.add_text_chunk((*key).to_owned(), value.clone())?;
        }
        let mut writer = encoder.write_header()?;
        writer.write_image_data(&self.pixels)?;
        writer.finish()?;
        Ok(())
    }
}

/// The two dimensions a picture spans: those whose coordinates vary among the cells (made up
/// with the first others when fewer vary), in schema order; rows are the first, columns the
/// second (none for a 1-D array).
fn axes(coords: &[Vec<f64>]) -> Result<(usize, Option<usize>)> {
    let varies = |d: usize| coords[d].iter().any(|&v| v != coords[d][0]);
    let mut chosen: Vec<usize> = (0..coords.len()).filter(|&d| varies(d)).collect();
    if chosen.len() > 2 {
        bail!("the cells span {} dimensions: fix all but two with --range DIM=V:V", chosen.len());
    }
    for d in 0..coords.len() {
        if chosen.len() < 2 && !chosen.contains(&d) {
            chosen.push(d);
        }
    }
    chosen.sort_unstable();
    Ok((chosen[0], chosen.get(1).copied()))
}

/// `tessera show ARRAY --attr A --png FILE` on the cells of `result` (dimensions then `attr`).
pub(crate) fn show_png(
    array: &Array,
    name: &str,
    result: &tessera::ReadResult,
    attr: &str,
    path: &Path,
) -> Result<Shown> {
    let schema = array.schema();
    let dims: Vec<&Column> = schema
        .dimensions
        .iter()
        .map(|d| result.column(&d.name).context("the read has no coordinates"))
        .collect::<Result<_>>()?;
    for (d, c) in schema.dimensions.iter().zip(&dims) {
        if c.is_var() {
            bail!("dimension {:?} is a {}: a picture needs numeric dimensions", d.name, d.datatype);
        }
    }
    let values = numbers(result.column(attr).with_context(|| format!("no attribute {attr:?}"))?)?;
    let coords: Vec<Vec<f64>> = dims
        .iter()
        .map(|c| numbers(c).map(|v| v.into_iter().map(|v| v.unwrap_or(0.0)).collect()))
        .collect::<Result<_>>()?;
    let (lo, hi) = bounds(&values);
    let colour = |v: Option<f64>| match v {
        Some(v) => {
            let [r, g, b] = viridis(if hi > lo { (v - lo) / (hi - lo) } else { 0.5 });
            [r, g, b, 255]
        }
        None => MISSING,
    };
    let cells = values.len();
    if cells == 0 {
        bail!("no cells to show");
    }
    let (row_dim, col_dim) = axes(&coords)?;
    let (rlo, rhi) = bounds(&coords[row_dim].iter().map(|&v| Some(v)).collect::<Vec<_>>());
    let (clo, chi) = match col_dim {
        Some(c) => bounds(&coords[c].iter().map(|&v| Some(v)).collect::<Vec<_>>()),
        None => (0.0, 0.0),
    };
    let col_of = |i: usize| col_dim.map_or(0.0, |c| coords[c][i]);
    let canvas = if schema.is_dense() {
        // One square of `scale` pixels per cell.
        let (rows, cols) = ((rhi - rlo) as u32 + 1, (chi - clo) as u32 + 1);
        if rows > 4096 || cols > 4096 {
            bail!("{rows} x {cols} cells is too large a picture: choose a slice with --range");
        }
        let scale = (512 / rows.max(cols)).clamp(1, 32);
        let (w, h) = (cols * scale, rows * scale);
        let mut canvas = Canvas::new(w + GAP + BAR, h.max(64));
        for (i, &v) in values.iter().enumerate() {
            let (r, c) = ((coords[row_dim][i] - rlo) as u32, (col_of(i) - clo) as u32);
            canvas.fill(c * scale, r * scale, scale, scale, colour(v));
        }
        canvas.colour_bar(0, h.max(64));
        canvas
    } else {
        // A scatter over the array's domain: a dot of 5 pixels per cell.
        let domain =
            |d: usize, lo: f64, hi: f64| domain_f64(&schema.dimensions[d]).unwrap_or((lo, hi));
        let (dr, dc) =
            (domain(row_dim, rlo, rhi), col_dim.map_or((0.0, 0.0), |c| domain(c, clo, chi)));
        const SIDE: u32 = 512;
        let mut canvas = Canvas::new(SIDE + GAP + BAR, SIDE);
        canvas.fill(0, 0, SIDE, SIDE, [245, 245, 245, 255]);
        let place = |v: f64, (lo, hi): (f64, f64)| {
            if hi > lo {
                ((v - lo) / (hi - lo) * f64::from(SIDE - 5)) as u32
            } else {
                (SIDE - 5) / 2
            }
        };
        for (i, &v) in values.iter().enumerate() {
            let (y, x) = (place(coords[row_dim][i], dr), place(col_of(i), dc));
            canvas.fill(x, y, 5, 5, colour(v));
        }
        canvas.colour_bar(0, SIDE);
        canvas
    };
    let texts = [
        ("Title", format!("{attr} of {name}")),
        ("Tessera-Rows", schema.dimensions[row_dim].name.clone()),
        ("Tessera-Columns", col_dim.map(|c| schema.dimensions[c].name.clone()).unwrap_or_default()),
        ("Tessera-Colour-Bar", format!("{lo} (bottom) to {hi} (top)")),
    ];
    canvas.save(path, &texts)?;
    Ok(Shown { size: (canvas.width, canvas.height), cells, range: (lo, hi) })
}

/// The domain of a numeric dimension as numbers.
fn domain_f64(d: &Dimension) -> Option<(f64, f64)> {
    let [lo, hi] = d.domain.as_ref()?;
    Some((number(d.datatype, lo)?, number(d.datatype, hi)?))
}

/// XML text.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A number as the SVG shows it: integers without a fraction, others with up to 6 digits.
fn show_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.6}").trim_end_matches('0').to_owned()
    }
}

/// `tessera fragments ARRAY --svg FILE`: each fragment's non-empty domain (first two
/// dimensions) over the array's domain, coloured from the oldest fragment (dark) to the
/// newest (yellow); hovering a rectangle shows the fragment's name, timestamps and cells.
pub(crate) fn fragments_svg(array: &Array, name: &str) -> Result<String> {
    let schema = array.schema();
    let dims: Vec<&Dimension> = schema.dimensions.iter().take(2).collect();
    let mut domain = Vec::new();
    for d in &dims {
        domain.push(domain_f64(d).with_context(|| {
            format!(
                "dimension {:?} is a {}: the picture needs numeric dimensions",
                d.name, d.datatype
            )
        })?);
    }
    let (plot_w, plot_h) = (640.0, if dims.len() > 1 { 480.0 } else { 120.0 });
    let (left, top) = (90.0, 40.0);
    let (width, height) = (left + plot_w + 180.0, top + plot_h + 60.0);
    // Rows: the first dimension downwards; columns: the second rightwards (a 1-D array: one
    // band along the first dimension).
    let (ry, cx) = if dims.len() > 1 { (domain[0], domain[1]) } else { ((0.0, 0.0), domain[0]) };
    let scale = |v: f64, (lo, hi): (f64, f64), len: f64| {
        if hi > lo { (v - lo) / (hi - lo + 1.0) * len } else { 0.0 }
    };
    let fragments = array.fragments();
    let stamps: Vec<u64> = fragments.iter().map(|f| f.name().timestamp_range().1).collect();
    let (t_lo, t_hi) =
        (stamps.iter().min().copied().unwrap_or(0), stamps.iter().max().copied().unwrap_or(0));
    let mut svg = String::new();
    writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    )?;
    writeln!(svg, r#"<title>fragments of {}</title>"#, escape(name))?;
    writeln!(
        svg,
        r##"<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#f5f5f5" stroke="#000"/>"##
    )?;
    let (cname, rname) =
        if dims.len() > 1 { (&dims[1].name, Some(&dims[0].name)) } else { (&dims[0].name, None) };
    writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">{} [{}, {}]</text>"#,
        left + plot_w / 2.0,
        top + plot_h + 36.0,
        escape(cname),
        show_number(cx.0),
        show_number(cx.1)
    )?;
    if let Some(rname) = rname {
        writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">{} [{}, {}]</text>"#,
            left - 40.0,
            top + plot_h / 2.0,
            left - 40.0,
            top + plot_h / 2.0,
            escape(rname),
            show_number(ry.0),
            show_number(ry.1)
        )?;
    }
    for (f, &t) in fragments.iter().zip(&stamps) {
        let Some(ned) = f.footer().non_empty_domain.as_ref() else { continue };
        let range = |d: usize| -> Option<(f64, f64)> {
            let r = ned.0.get(d)?;
            Some((number(dims[d].datatype, &r.low)?, number(dims[d].datatype, &r.high)?))
        };
        let (rows, cols) = if dims.len() > 1 { (range(0), range(1)) } else { (Some(ry), range(0)) };
        let (Some(rows), Some(cols)) = (rows, cols) else { continue };
        let x = left + scale(cols.0, cx, plot_w);
        let w = scale(cols.1 + 1.0, cx, plot_w) - scale(cols.0, cx, plot_w);
        let (y, h) = if dims.len() > 1 {
            (
                top + scale(rows.0, ry, plot_h),
                scale(rows.1 + 1.0, ry, plot_h) - scale(rows.0, ry, plot_h),
            )
        } else {
            (top, plot_h)
        };
        let [r, g, b] =
            viridis(if t_hi > t_lo { (t - t_lo) as f64 / (t_hi - t_lo) as f64 } else { 1.0 });
        let (t1, t2) = f.name().timestamp_range();
        writeln!(
            svg,
            r##"<rect x="{x:.2}" y="{y:.2}" width="{w:.2}" height="{h:.2}" fill="#{r:02x}{g:02x}{b:02x}" fill-opacity="0.55" stroke="#{r:02x}{g:02x}{b:02x}"><title>{} [{t1}, {t2}] {} cells</title></rect>"##,
            escape(f.name().as_str()),
            f.cell_num()?,
        )?;
    }
    // The legend: timestamps from oldest (bottom) to newest (top).
    let lx = left + plot_w + 30.0;
    for i in 0..=20 {
        let t = f64::from(i) / 20.0;
        let [r, g, b] = viridis(t);
        writeln!(
            svg,
            r##"<rect x="{lx}" y="{:.2}" width="20" height="{:.2}" fill="#{r:02x}{g:02x}{b:02x}"/>"##,
            top + plot_h * (1.0 - t) - plot_h / 21.0,
            plot_h / 21.0
        )?;
    }
    writeln!(svg, r#"<text x="{}" y="{}">newest {t_hi} ms</text>"#, lx + 26.0, top + 10.0)?;
    writeln!(svg, r#"<text x="{}" y="{}">oldest {t_lo} ms</text>"#, lx + 26.0, top + plot_h)?;
    writeln!(svg, r#"<text x="{left}" y="{}">{} fragments</text>"#, top - 12.0, fragments.len())?;
    svg.push_str("</svg>\n");
    Ok(svg)
}
