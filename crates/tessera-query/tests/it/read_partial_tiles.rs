//! Dense reads of large, many-chunk tiles that need only part of each tile: only the chunks
//! holding the wanted cells are read (unfiltered) or decoded (filtered), and tiles of 1 MB and
//! more go through reused buffers. Every read is checked cell by cell against the values
//! written, on local files and in memory, with and without filters, over two fragments.

use std::sync::Arc;

use tessera_filters::{Filter, FilterPipeline};
use tessera_query::{Array, Error};
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_storage::{LocalStorage, MemoryStorage, Storage};
use tessera_types::{ArrayType, Datatype, ReadLayout};

/// Rows and columns of the array; tiles are 600 x 500 int32 (1.2 MB, 19 chunks of 64 KB).
const ROWS: i64 = 1200;
const COLS: i64 = 1000;

/// The value of cell (r, c): the first fragment's, unless the second (rows 100..=349, cols
/// 450..=749) overwrote it.
fn value(r: i64, c: i64) -> i32 {
    let v = (r * COLS + c) as i32;
    if (100..=349).contains(&r) && (450..=749).contains(&c) { -v } else { v }
}

fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Creates the array with `filters` on the attribute and writes both fragments.
fn make(storage: Arc<dyn Storage>, filters: Vec<Filter>) -> Array {
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int64).domain_i64(0, ROWS - 1).tile_i64(600))
        .dimension(Dimension::new("c", Datatype::Int64).domain_i64(0, COLS - 1).tile_i64(500))
        .attribute(Attribute::new("a", Datatype::Int32).filters(FilterPipeline::new(filters)))
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let array = Array::open(storage.clone()).unwrap();
    let all: Vec<i32> = (0..ROWS * COLS).map(|i| (i) as i32).collect();
    array
        .write()
        .range_i64("r", 0, ROWS - 1)
        .range_i64("c", 0, COLS - 1)
        .values("a", &all)
        .timestamp(1)
        .submit()
        .unwrap();
    let patch: Vec<i32> =
        (100..=349).flat_map(|r| (450..=749).map(move |c| -((r * COLS + c) as i32))).collect();
    array
        .write()
        .range_i64("r", 100, 349)
        .range_i64("c", 450, 749)
        .values("a", &patch)
        .timestamp(2)
        .submit()
        .unwrap();
    Array::open(storage).unwrap()
}

/// The expected values of the cross product of `rows` and `cols` (inclusive ranges) in
/// `layout`.
fn expected(rows: &[(i64, i64)], cols: &[(i64, i64)], layout: ReadLayout) -> Vec<i32> {
    let rs: Vec<i64> = rows.iter().flat_map(|&(lo, hi)| lo..=hi).collect();
    let cs: Vec<i64> = cols.iter().flat_map(|&(lo, hi)| lo..=hi).collect();
    match layout {
        ReadLayout::ColMajor => {
            cs.iter().flat_map(|&c| rs.iter().map(move |&r| value(r, c))).collect()
        }
        _ => rs.iter().flat_map(|&r| cs.iter().map(move |&c| value(r, c))).collect(),
    }
}

/// Reads the cross product of `rows` and `cols` in `layout`, whole and in batches.
fn check(array: &Array, rows: &[(i64, i64)], cols: &[(i64, i64)], layout: ReadLayout, what: &str) {
    let query = || {
        let mut q = array.read().attributes(["a"]).layout(layout);
        for &(lo, hi) in rows {
            q = q.range_i64("r", lo, hi);
        }
        for &(lo, hi) in cols {
            q = q.range_i64("c", lo, hi);
        }
        q
    };
    let want = expected(rows, cols, layout);
    let got = i32s(&query().execute().unwrap().column("a").unwrap().data);
    assert!(got == want, "{what}: execute differs");
    let mut batched = Vec::new();
    for batch in query().memory_budget(1 << 20).batches().unwrap() {
        batched.extend(i32s(&batch.unwrap().column("a").unwrap().data));
    }
    assert!(batched == want, "{what}: batches differ");
}

fn check_all(array: &Array, what: &str) {
    let full = [(0, ROWS - 1)];
    let all_cols = [(0, COLS - 1)];
    check(array, &full, &all_cols, ReadLayout::RowMajor, &format!("{what}, full"));
    check(array, &[(50, 700)], &[(300, 900)], ReadLayout::RowMajor, &format!("{what}, box"));
    check(
        array,
        &[(50, 700)],
        &[(300, 900)],
        ReadLayout::ColMajor,
        &format!("{what}, col-major box"),
    );
    let strided: Vec<(i64, i64)> = (0..12).map(|i| (i * 100 + 7, i * 100 + 7)).collect();
    check(array, &strided, &all_cols, ReadLayout::RowMajor, &format!("{what}, strided rows"));
    check(array, &[(599, 600)], &[(499, 500)], ReadLayout::RowMajor, &format!("{what}, corner"));
    check(
        array,
        &[(1199, 1199)],
        &[(999, 999)],
        ReadLayout::RowMajor,
        &format!("{what}, last cell"),
    );
    check(
        array,
        &[(0, 3), (1190, 1199)],
        &[(0, 9), (995, 999)],
        ReadLayout::RowMajor,
        &format!("{what}, far ranges"),
    );
}

fn filter_sets() -> Vec<(&'static str, Vec<Filter>)> {
    vec![
        ("unfiltered", vec![]),
        ("zstd", vec![Filter::zstd(1)]),
        ("lz4", vec![Filter::Lz4 { level: 1 }]),
    ]
}

#[test]
fn partial_tiles_on_local_files() {
    for (name, filters) in filter_sets() {
        let dir = tempfile::tempdir().unwrap();
        let array = make(Arc::new(LocalStorage::new(dir.path().join("a"))), filters);
        check_all(&array, name);
    }
}

#[test]
fn partial_tiles_in_memory() {
    for (name, filters) in filter_sets() {
        let array = make(Arc::new(MemoryStorage::new()), filters);
        check_all(&array, name);
    }
}

/// A chunk header of an unfiltered tile that does not say what the layout implies is an
/// error naming the file when a read needs that chunk, never a panic or wrong values.
#[test]
fn corrupt_chunk_header_of_an_unfiltered_tile() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("a");
    let array = make(Arc::new(LocalStorage::new(&root)), vec![]);
    // The first fragment's data file: tile 0's chunk 5 header gets a wrong length.
    let frag = array.fragments()[0].name().to_string();
    let path = root.join("__fragments").join(&frag).join("a0.tdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = 8 + 5 * (12 + 65_536);
    bytes[at..at + 4].copy_from_slice(&1234u32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let array = Array::open(Arc::new(LocalStorage::new(&root))).unwrap();
    // Row 170 of tile 0 lies in chunk 5 (2000 bytes per row, 65 536 per chunk).
    let err = array
        .read()
        .attributes(["a"])
        .range_i64("r", 170, 170)
        .range_i64("c", 0, 9)
        .execute()
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Corrupt { .. } | Error::Tile { .. }), "{text}");
    assert!(text.contains("a0.tdb") || text.contains(&frag), "{text}");
    // Rows of other chunks still read.
    let res = array.read().attributes(["a"]).range_i64("r", 0, 0).range_i64("c", 0, 9).execute();
    assert_eq!(i32s(&res.unwrap().column("a").unwrap().data), (0..10).collect::<Vec<i32>>());
}

/// A tile whose chunk announces another length fails a read that places its chunks straight
/// into the result (a full read: every tile on its own worker; filtered tiles decode chunk by
/// chunk, unfiltered ones are read with one vectored read) with an error naming the file, and
/// the rest of the array still reads.
#[test]
fn corrupt_chunk_in_a_full_read() {
    for (name, filters) in [("zstd", vec![Filter::zstd(1)]), ("unfiltered", vec![])] {
        corrupt_chunk_in_a_full_read_with(name, filters);
    }
}

fn corrupt_chunk_in_a_full_read_with(name: &str, filters: Vec<Filter>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("a");
    let unfiltered = filters.is_empty();
    let array = make(Arc::new(LocalStorage::new(&root)), filters);
    let frag = array.fragments()[0].name().to_string();
    let path = root.join("__fragments").join(&frag).join("a0.tdb");
    let mut bytes = std::fs::read(&path).unwrap();
    // The unfiltered length (the first field of a chunk header, after the tile's chunk
    // count): filtered, of tile 0's chunk 0; unfiltered, of chunk 5 of tile 2 (rows 600..,
    // columns ..499), which the second fragment does not overlap, so a full read takes it
    // whole (chunk 0's header gives the layout the others are checked against). Unfiltered
    // tiles take 8 + 19 * 12 + 1 200 000 bytes.
    let at = if unfiltered { 2 * 1_200_236 + 8 + 5 * (12 + 65_536) } else { 8 };
    bytes[at..at + 4].copy_from_slice(&1234u32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let array = Array::open(Arc::new(LocalStorage::new(&root))).unwrap();
    let err = array
        .read()
        .attributes(["a"])
        .range_i64("r", 0, ROWS - 1)
        .range_i64("c", 0, COLS - 1)
        .execute()
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Corrupt { .. } | Error::Tile { .. }), "{name}: {text}");
    assert!(text.contains("a0.tdb"), "{name}: {text}");
    // Tile 3 (rows 600.., cols 500..) is intact.
    let res = array
        .read()
        .attributes(["a"])
        .range_i64("r", 600, ROWS - 1)
        .range_i64("c", 500, COLS - 1)
        .execute()
        .unwrap();
    assert_eq!(
        i32s(&res.column("a").unwrap().data),
        expected(&[(600, ROWS - 1)], &[(500, COLS - 1)], ReadLayout::RowMajor)
    );
}
