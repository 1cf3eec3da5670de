//! libtiledb 2.30 behaviours seen in its own files, asserted one by one (they are also covered
//! by the cell-by-cell comparisons in `fixtures.rs`; these name them).

use std::path::{Path, PathBuf};

use tessera_fragment::{Field, Footer, FragmentMetadata, FragmentName};
use tessera_schema::ArraySchema;

fn load(array: &Path) -> Vec<(String, ArraySchema, FragmentMetadata)> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(array.join("__fragments")).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort_by_key(|d| FragmentName::parse(d.to_str().unwrap()).unwrap().t1());
    for d in dirs {
        let b = std::fs::read(d.join("__fragment_metadata.tdb")).unwrap();
        let n = b.len();
        let len = u64::from_le_bytes(b[n - 8..].try_into().unwrap()) as usize;
        let (_, name) = Footer::peek_schema_name(&b[n - 8 - len..n - 8]).unwrap();
        let s = std::fs::read(array.join("__schema").join(name)).unwrap();
        let schema = ArraySchema::parse_file(&s).unwrap();
        let md = FragmentMetadata::parse_all(&b, &schema).unwrap();
        out.push((d.file_name().unwrap().to_str().unwrap().to_owned(), schema, md));
    }
    out
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn idx(schema: &ArraySchema, md: &FragmentMetadata, name: &str) -> usize {
    md.layout(schema).idx_of_name(schema, name).unwrap()
}

#[test]
fn sparse_nulls_facts() {
    let frags = load(&data("sparse_nulls"));
    let (_, s, md) = &frags[0];
    let stats = md.fragment_stats.as_ref().unwrap();

    // Fixed strings compare as unsigned bytes (strncmp): "a\0" < "\x80z".
    let c = idx(s, md, "c");
    assert_eq!(md.tile_mins[c].fixed_value(2, 2), Some(&b"a\0"[..]));
    assert_eq!(md.tile_maxs[c].fixed_value(2, 2), Some(&b"\x80z"[..]));
    // Tile 1 is all null: its min/max stay zero bytes.
    assert_eq!(md.tile_mins[c].fixed_value(1, 2), Some(&b"\0\0"[..]));
    // The fragment fold skips the all-null tile but not its buffer slot, so it compares tile
    // 1's zero bytes instead of tile 2's values: min "\0\0", max "ab" (not "\x80z").
    assert_eq!(stats.fields[c].min, b"\0\0");
    assert_eq!(stats.fields[c].max, b"ab");

    // Numeric all-null tile: zero bytes, and the fragment fold skips it.
    let a = idx(s, md, "a");
    assert_eq!(md.tile_null_counts[a], [2, 3, 0]);
    assert_eq!(md.tile_mins[a].fixed_value(1, 4), Some(&[0u8; 4][..]));
    assert_eq!(stats.fields[a].min, (-8i32).to_le_bytes());

    // CHAR with one value per cell: signed tile sums, but no fragment sum.
    let ch = idx(s, md, "ch");
    assert_eq!(md.tile_sums[ch].0, [196, 205, 308]);
    assert_eq!(stats.fields[ch].sum, 0);

    // NaN replaces the running min/max: tile 0 of "f" (4.0, NaN, 1.5) records 1.5 / 1.5,
    // and the fragment max is -2.0 although 4.0 was written.
    let f = idx(s, md, "f");
    assert_eq!(md.tile_maxs[f].fixed_value(0, 8), Some(&1.5f64.to_le_bytes()[..]));
    assert_eq!(stats.fields[f].max, (-2.0f64).to_le_bytes());

    // Unsigned sums saturate; sparse dimensions get sums; __coords gets zeros.
    let u = idx(s, md, "u64");
    assert_eq!(md.tile_sums[u].0[..2], [u64::MAX, u64::MAX]);
    let x = md.layout(s).idx(Field::Dimension(0)).unwrap();
    assert_eq!(md.tile_sums[x].0, [7, 32, 170]);
    let coords = md.layout(s).idx(Field::Coords).unwrap();
    assert_eq!(md.tile_mins[coords].fixed, [0u8; 3 * 16]);
    assert_eq!(stats.fields[coords].min, [0u8; 8]);

    // UTF-8 and blob attributes have no min/max.
    for name in ["u", "blob"] {
        let i = idx(s, md, name);
        assert!(md.tile_mins[i].is_empty() && stats.fields[i].min.is_empty());
    }
}

#[test]
fn nullable_var_utf8_counts_no_nulls() {
    let frags =
        load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/filters/nullable"));
    let (_, s, md) = &frags[0];
    // The var UTF-8 attribute has null cells, but the generator returns before counting them
    // (no min/max for UTF-8): its tile null count is 0.
    let i = idx(s, md, "s");
    assert_eq!(md.tile_null_counts[i], [0]);
    // An all-null fixed attribute: tile min/max zero bytes, fragment min/max T::max/T::lowest.
    let n = idx(s, md, "none_i64");
    assert_eq!(md.tile_mins[n].fixed, [0u8; 8]);
    let stats = md.fragment_stats.as_ref().unwrap();
    assert_eq!(stats.fields[n].min, i64::MAX.to_le_bytes());
    assert_eq!(stats.fields[n].max, i64::MIN.to_le_bytes());
}

#[test]
fn dense_ordered_writer_quirks() {
    let frags = load(&data("dense_partial"));
    // Fragment at t=2 writes 4x4 cells in 2x2 tiles: two slabs per tile, and a nullable var
    // attribute reads validity from the slab start, so tile 0 of "s" records the value of a
    // null cell ("w0w0") as its minimum.
    let (_, s, md) = &frags[1];
    let i = idx(s, md, "s");
    assert_eq!(md.tile_mins[i].var_value(0).unwrap(), b"w0w0");
    // Fragment at t=3: four attributes, two tiles: every tile's var min lands in slot 0
    // (the last tile's "t2"); slot 1 keeps zero bytes.
    let (_, s, md) = &frags[2];
    let i = idx(s, md, "s");
    assert_eq!(md.tile_mins[i].var_values().unwrap(), [&b"t2"[..], b"\0\0"]);
    // Dense dimensions get no metadata at all; dense footers store 0 sparse tiles and the
    // cells per tile as the last tile's cell count.
    let d = md.layout(s).idx(Field::Dimension(0)).unwrap();
    assert!(md.tile_mins[d].is_empty() && md.tile_sums[d].0.is_empty());
    assert_eq!((md.footer.sparse_tile_num, md.footer.last_tile_cell_num), (0, 4));
    assert_eq!(md.rtree.to_bytes(&tessera_fragment::dim_types(s)), [10, 0, 0, 0, 0, 0, 0, 0]);
}
