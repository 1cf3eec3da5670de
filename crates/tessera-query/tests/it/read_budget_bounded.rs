//! Budgeted dense reads that cannot stream (a condition, nullable or var-sized attributes)
//! load only the batch's cells of each tile they meet: their batches, put end to end, equal
//! the unbudgeted read byte for byte (values, offsets, validity), in row-major, col-major and
//! global order, over three fragments that leave some cells to the fill value, with tiles
//! stored plain, zstd-compressed, and var-sized strings on the RLE string path.

use std::sync::Arc;

use tessera_filters::{Filter, FilterPipeline};
use tessera_query::{Array, Column, ReadResult};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::{MemoryStorage, Storage};
use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype, ReadLayout};

/// Rows and columns of the array; tiles are 100 x 250 (25 000 cells: several chunks of
/// 64 KiB for values, offsets and var-sized bytes).
const ROWS: i64 = 300;
const COLS: i64 = 500;

/// The cells each fragment writes (rows, columns, inclusive), oldest first: rows 225..=249,
/// and rows 250..=299 past column 199, are left to the fill value.
const FRAGMENTS: [((i64, i64), (i64, i64)); 3] =
    [((0, 224), (0, 499)), ((50, 149), (200, 449)), ((250, 299), (0, 199))];

/// The array, with `filters` on every attribute (`strings` on `s` instead, when given).
fn make(storage: Arc<dyn Storage>, filters: &[Filter], strings: Option<&[Filter]>) -> Array {
    let pipe = |f: &[Filter]| FilterPipeline::new(f.to_vec());
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int64).domain_i64(0, ROWS - 1).tile_i64(100))
        .dimension(Dimension::new("c", Datatype::Int64).domain_i64(0, COLS - 1).tile_i64(250))
        .attribute(Attribute::new("a", Datatype::Int32).filters(pipe(filters)))
        .attribute(Attribute::new("n", Datatype::Int32).nullable(true).filters(pipe(filters)))
        .attribute(
            Attribute::new("s", Datatype::StringUtf8)
                .cell_val_num(CELL_VAL_NUM_VAR)
                .nullable(true)
                .filters(pipe(strings.unwrap_or(filters))),
        )
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let array = Array::open(storage.clone()).unwrap();
    for (k, &((r0, r1), (c0, c1))) in FRAGMENTS.iter().enumerate() {
        let k = k as i64 + 1;
        let cells: Vec<(i64, i64)> =
            (r0..=r1).flat_map(|r| (c0..=c1).map(move |c| (r, c))).collect();
        let a: Vec<i32> = cells.iter().map(|&(r, c)| ((r * COLS + c) * k) as i32).collect();
        let n: Vec<i32> = cells.iter().map(|&(r, c)| ((r * 7 + c * 3 + k) % 1000) as i32).collect();
        let n_valid: Vec<u8> = cells.iter().map(|&(r, c)| u8::from((r * 3 + c) % 7 != 0)).collect();
        let s: Vec<String> = cells
            .iter()
            .map(|&(r, c)| format!("{k}{}", "ab".repeat(((r * c + k) % 9) as usize)))
            .collect();
        let s_valid: Vec<u8> =
            cells.iter().map(|&(r, c)| u8::from((r + 2 * c + k) % 5 != 0)).collect();
        array
            .write()
            .range_i64("r", r0, r1)
            .range_i64("c", c0, c1)
            .values("a", &a)
            .values("n", &n)
            .validity("n", n_valid)
            .var_values("s", &s)
            .validity("s", s_valid)
            .timestamp(k as u64)
            .submit()
            .unwrap();
    }
    Array::open(storage).unwrap()
}

/// `b` appended to `a` (columns of the same fields).
fn append(a: &mut ReadResult, b: ReadResult) {
    for (x, y) in a.columns.iter_mut().zip(b.columns) {
        append_column(x, y);
    }
}

fn append_column(x: &mut Column, y: Column) {
    if let (Some(xo), Some(yo)) = (&mut x.offsets, &y.offsets) {
        let shift = x.data.len() as u64;
        xo.extend(yo.iter().map(|o| o + shift));
    }
    if let (Some(xv), Some(yv)) = (&mut x.validity, &y.validity) {
        xv.extend_from_slice(yv);
    }
    x.data.extend_from_slice(&y.data);
}

/// One read: its ranges per dimension, layout, attributes and condition.
struct Read<'a> {
    rows: &'a [(i64, i64)],
    cols: &'a [(i64, i64)],
    layout: ReadLayout,
    attrs: Option<&'a [&'a str]>,
    cond: Option<&'a str>,
}

/// Reads `read` whole, then under each of `budgets` in batches, and checks that the batches
/// put end to end equal the whole read, field by field.
fn check(array: &Array, read: &Read<'_>, budgets: &[u64], what: &str) {
    let query = || {
        let mut q = array.read().layout(read.layout);
        if let Some(attrs) = read.attrs {
            q = q.attributes(attrs.iter().copied());
        }
        for &(lo, hi) in read.rows {
            q = q.range_i64("r", lo, hi);
        }
        for &(lo, hi) in read.cols {
            q = q.range_i64("c", lo, hi);
        }
        if let Some(cond) = read.cond {
            q = q.where_text(cond);
        }
        q
    };
    let whole = query().execute().unwrap();
    assert!(whole.cell_num() > 0, "{what}: nothing read");
    for &budget in budgets {
        let mut batches = query().memory_budget(budget).batches().unwrap();
        let mut got: Option<ReadResult> = None;
        let mut count = 0;
        for batch in &mut batches {
            let batch = batch.unwrap();
            count += 1;
            match &mut got {
                Some(got) => append(got, batch),
                None => got = Some(batch),
            }
        }
        let got = got.unwrap();
        assert!(count > 1, "{what}, budget {budget}: one batch only");
        for (w, g) in whole.columns.iter().zip(&got.columns) {
            let ctx = format!("{what}, budget {budget}, field {}", w.name);
            assert_eq!(w.len(), g.len(), "{ctx}: cells");
            assert!(w.data == g.data, "{ctx}: values differ");
            assert_eq!(w.offsets, g.offsets, "{ctx}: offsets");
            assert_eq!(w.validity, g.validity, "{ctx}: validity");
        }
    }
}

/// Every layout and condition over a box that meets every tile of every fragment, the
/// fill-value cells included (each condition in row-major order, some in the others, all
/// of them with `full`); multi-range reads (overlapping ranges, repeated cells) in row- and
/// col-major order; a condition on an attribute that is not returned.
fn check_all(array: &Array, what: &str, full: bool) {
    let conditions: [Option<&str>; 5] = [
        None,
        Some("a >= 150000 or a < 20000"),
        Some("n < 400"),
        Some("s >= '2ab' and s is not null"),
        Some("r >= 120 and c < 260"),
    ];
    let layouts = [ReadLayout::RowMajor, ReadLayout::ColMajor, ReadLayout::GlobalOrder];
    for layout in layouts {
        for (k, cond) in conditions.into_iter().enumerate() {
            if !full && layout != ReadLayout::RowMajor && k % 2 == 1 {
                continue;
            }
            let read = Read { rows: &[(20, 280)], cols: &[(120, 480)], layout, attrs: None, cond };
            check(array, &read, &[1 << 20], &format!("{what}, {layout:?}, {cond:?}"));
        }
        if !full {
            continue;
        }
        let read = Read {
            rows: &[(0, ROWS - 1)],
            cols: &[(0, COLS - 1)],
            layout,
            attrs: Some(&["s"]),
            cond: Some("a < 100000"),
        };
        check(array, &read, &[2 << 20], &format!("{what}, {layout:?}, whole, s where a"));
    }
    for layout in [ReadLayout::RowMajor, ReadLayout::ColMajor] {
        let read = Read {
            rows: &[(140, 160), (0, 5), (145, 260)],
            cols: &[(240, 260), (490, 499), (0, 30)],
            layout,
            attrs: None,
            cond: Some("n >= 100"),
        };
        check(array, &read, &[256 << 10], &format!("{what}, {layout:?}, multi-range"));
    }
    // Tiny budgets: batches of a few cells, cut inside runs.
    let read = Read {
        rows: &[(145, 155)],
        cols: &[(240, 262)],
        layout: ReadLayout::RowMajor,
        attrs: Some(&["s", "n"]),
        cond: Some("a > 72600"),
    };
    check(array, &read, &[1, 2 << 10], &format!("{what}, tiny budgets"));
}

#[test]
fn bounded_dense_batches_equal_the_whole_read_plain() {
    check_all(&make(Arc::new(MemoryStorage::new()), &[], None), "plain", true);
}

#[test]
fn bounded_dense_batches_equal_the_whole_read_zstd() {
    check_all(&make(Arc::new(MemoryStorage::new()), &[Filter::zstd(1)], None), "zstd", true);
}

/// RLE strings have no offsets on disk: their tiles are decoded whole, then only the batch's
/// cells are kept.
#[test]
fn bounded_dense_batches_equal_the_whole_read_rle_strings() {
    let strings = [Filter::Rle { level: -1 }];
    let dir = tempfile::tempdir().unwrap();
    let storage = Arc::new(tessera_storage::LocalStorage::new(dir.path().join("a")));
    check_all(&make(storage, &[Filter::Lz4 { level: 1 }], Some(&strings)), "rle strings", false);
}
