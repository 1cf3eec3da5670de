//! The bodies of Tessera's fuzz targets (`fuzz/fuzz_targets/*.rs` are one line each).
//!
//! Each target feeds its input to one parser and, when the input parses, runs what the
//! engine runs next on the value (a round trip through the writer, the derived sizes, the
//! condition resolved against a schema). A target fails on a panic (an index out of bounds,
//! an arithmetic overflow, an `unwrap`), on an allocation libFuzzer refuses (more than
//! `-malloc_limit_mb`, 2 GB by default), on a timeout, and on the round-trip assertions.
//!
//! Input layouts (read with [`input::Input`], so every byte string is valid; the seeds that
//! `cargo xtask fuzz` extracts from `testdata/` use the same layouts):
//!
//! | target | input |
//! |---|---|
//! | `filter_pipeline` | version byte, datatype byte, serialized pipeline |
//! | `filter_<name>` | datatype byte, cells-per-value byte, version byte, `u8` options length, the filter's options, `u16` metadata length, chunk metadata, chunk data |
//! | `tile` | role byte (fixed, var, validity, offsets), version byte, datatype byte, cell-val-num byte, `u16` + pipeline, `u16` + offsets pipeline, `u32` + offsets tile, data tile |
//! | `generic_tile` | count byte, file bytes |
//! | `schema_file`, `schema_payload`, `enumeration` | file or payload bytes |
//! | `footer`, `fragment_metadata`, `rtree` | array byte ([`input::ARRAYS`]), footer / file / R-tree payload |
//! | `fragment_part` | array byte, part byte, part payload |
//! | `commit_files` | kind byte (`.con`, `.vac`, `.ign`, name), file bytes |
//! | `delete_condition` | array byte, kind byte (`.del` file, condition payload, `.upd` payload), bytes |
//! | `consolidated_fragment_meta` | array byte, kind byte (file, payload), bytes |
//! | `array_metadata` | kind byte (file, payload), bytes |
//! | `query_condition`, `cells_jsonl` | array byte, flag byte (`cells_jsonl`: enumeration codes), UTF-8 text |
//! | `schema_json` | UTF-8 text |

#![allow(missing_docs)]

use std::path::PathBuf;
use std::sync::OnceLock;

use tessera::layers::filters::{Filter, FilterPipeline};
use tessera::layers::fragment::{
    CommitEntry, ConditionNode, ConsolidatedCommits, ConsolidatedFragmentMeta, DeleteCommit,
    FieldLayout, Footer, FragmentMetadata, FragmentName, IgnoreFile, LazyPart, TileMinMax,
    TileSums, UpdateCommit, VacuumFile,
    footer::dim_types,
    parts::{FragmentStats, ProcessedConditions, parse_u64s},
};
use tessera::layers::query::condition::QueryCondition;
use tessera::layers::query::metadata::{self, MetadataEntry};
use tessera::layers::rtree::RTree;
use tessera::layers::schema::{ArraySchema, Enumeration, json};
use tessera::layers::tile::{
    FramedTile, GenericTileHeader, GenericTiles, TileCodec, TileLayout, VarTileCodec,
    read_generic_tile, read_generic_tiles,
};
use tessera::layers::types::{FilterType, names::TimestampedName};

pub mod input;

use input::{Input, Seed};

// The CLI's cells JSONL parser, included as it is (the CLI is a binary crate).
#[allow(dead_code, unreachable_pub)]
#[path = "../../crates/tessera-cli/src/cells.rs"]
mod cells;
#[allow(dead_code, unreachable_pub)]
#[path = "../../crates/tessera-cli/src/cells_input.rs"]
mod cells_input;

/// A fixture array's schema and enumerations.
pub struct Fixture {
    pub schema: ArraySchema,
    pub enumerations: Vec<Enumeration>,
}

/// The `testdata/` folder of the workspace.
pub fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata")
}

/// The schemas of [`input::ARRAYS`], opened once.
pub fn fixtures() -> &'static [Fixture] {
    static FIXTURES: OnceLock<Vec<Fixture>> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        input::ARRAYS
            .iter()
            .map(|a| {
                let path = testdata().join(a);
                let array = tessera::open(&path)
                    .unwrap_or_else(|e| panic!("fuzz fixture {}: {e}", path.display()));
                Fixture {
                    schema: array.schema().clone(),
                    enumerations: array.enumerations().to_vec(),
                }
            })
            .collect()
    })
}

/// The fixture a selector byte picks.
pub fn fixture(b: u8) -> &'static Fixture {
    &fixtures()[input::array_index(b)]
}

/// `filter_pipeline`: parse a pipeline; a parsed pipeline writes bytes that parse back to
/// the same bytes, and its codec can be built or refused.
pub fn filter_pipeline(data: &[u8]) {
    let mut i = Input::new(data);
    let version = input::version(i.u8());
    let datatype = input::datatype(i.u8());
    let Ok((p, used)) = FilterPipeline::parse(i.rest(), version) else { return };
    assert!(used <= i.rest().len());
    let bytes = p.to_bytes();
    assert_eq!(bytes.len(), p.serialized_len());
    let (again, used) = FilterPipeline::parse(&bytes, version).expect("written pipeline parses");
    assert_eq!(used, bytes.len());
    assert_eq!(again.to_bytes(), bytes);
    let _ = p.codec(datatype, datatype.size(), version);
}

/// The filter of type `ft` whose options are `options` (the defaults when they do not
/// parse), as a pipeline of format `version` stores it.
pub fn filter_with_options(ft: FilterType, options: &[u8], version: u32) -> Filter {
    let bytes =
        Seed::default().u32(65536).u32(1).u8(ft.id()).u32(options.len() as u32).bytes(options).0;
    match FilterPipeline::parse(&bytes, version) {
        Ok((p, _)) if p.filters.len() == 1 => p.filters[0],
        _ => Filter::with_defaults(ft),
    }
}

/// The cell sizes the `filter_<name>` targets' second byte picks from, in values.
pub const CELL_VALUES: &[usize] = &[1, 2, 3, 4, 8];

/// `filter_<name>`: the reverse of one filter of type `ft` over one chunk with arbitrary
/// metadata and data (and the offset-free string path of RLE and DICTIONARY).
pub fn filter_reverse(ft: FilterType, data: &[u8]) {
    let mut i = Input::new(data);
    let datatype = input::datatype(i.u8());
    let cell_size = datatype.size() * CELL_VALUES[i.u8() as usize % CELL_VALUES.len()];
    let version = input::version(i.u8());
    let n = i.u8() as usize;
    let filter = filter_with_options(ft, i.bytes(n), version);
    let n = i.u16() as usize;
    let metadata = i.bytes(n);
    let chunk = i.rest();
    let Ok(codec) = FilterPipeline::new(vec![filter]).codec(datatype, cell_size, version) else {
        return;
    };
    let mut out = vec![7u8; 3];
    if codec.decode_chunk(metadata, chunk, &mut out).is_ok() {
        assert_eq!(out[..3], [7, 7, 7], "bytes already in the output were changed");
    }
    if codec.is_string_path() {
        let (mut strings, mut offsets) = (Vec::new(), Vec::new());
        if codec.decode_strings(metadata, chunk, &mut strings, &mut offsets).is_ok() {
            for w in offsets.windows(2) {
                assert!(w[0] <= w[1], "decoded string offsets decrease");
            }
        }
    }
}

/// `tile`: parse a tile's framing and decode it as one of the four tile roles.
pub fn tile(data: &[u8]) {
    let mut i = Input::new(data);
    let role = i.u8() % 4;
    let version = input::version(i.u8());
    let datatype = input::datatype(i.u8());
    let cell_val_num = input::CELL_VAL_NUMS[i.u8() as usize % input::CELL_VAL_NUMS.len()];
    let n = i.u16() as usize;
    let pipeline = FilterPipeline::parse(i.bytes(n), version).map(|p| p.0).unwrap_or_default();
    let n = i.u16() as usize;
    let offsets_pipeline =
        FilterPipeline::parse(i.bytes(n), version).map(|p| p.0).unwrap_or_default();
    let n = i.u32() as usize;
    let offsets_tile = i.bytes(n);
    let tile = i.rest();
    if let Ok(layout) = TileLayout::parse(tile) {
        let framed = FramedTile::parse(tile).expect("a tile whose layout parses is framed");
        assert_eq!(framed.orig_len(), layout.orig_len());
        assert_eq!(framed.iter().count(), layout.num_chunks());
    }
    match role {
        0 => {
            if let Ok(c) = TileCodec::fixed_data(&pipeline, datatype, cell_val_num, version) {
                if let Ok(layout) = TileLayout::parse(tile) {
                    let _ = c.decode_exact(tile, layout.orig_len());
                }
            }
        }
        1 => {
            if let Ok(c) = VarTileCodec::new(&pipeline, &offsets_pipeline, datatype, version) {
                if let Ok(t) = c.decode(offsets_tile, tile) {
                    for k in 0..t.cell_count() {
                        assert!(t.cell(k).is_some(), "decoded var tile has a bad cell {k}");
                    }
                    let _ = c.decode_exact(
                        offsets_tile,
                        tile,
                        t.cell_count() as u64,
                        t.data.len() as u64,
                    );
                }
            }
        }
        2 => {
            if let Ok(c) = TileCodec::validity(&pipeline, version) {
                let _ = c.decode(tile);
            }
        }
        _ => {
            if let Ok(c) = TileCodec::offsets(&pipeline, version) {
                let _ = c.decode_offsets(tile);
            }
        }
    }
}

/// `generic_tile`: headers, one tile, `count` tiles back to back, and the iterator.
pub fn generic_tile(data: &[u8]) {
    let mut i = Input::new(data);
    let count = (i.u8() % 16) as usize;
    let file = i.rest();
    if let Ok((header, end)) = GenericTileHeader::parse(file) {
        assert_eq!(end, header.total_len());
        let (again, _) = GenericTileHeader::parse(&header.to_bytes()).expect("header round trip");
        assert_eq!(again.to_bytes(), header.to_bytes());
    }
    if let Ok(payload) = read_generic_tile(file) {
        let _ = payload.len();
    }
    let _ = read_generic_tiles(file, 0, count);
    for t in GenericTiles::new(file).take(64) {
        if t.is_err() {
            break;
        }
    }
}

/// The checks on a parsed schema: it writes bytes that parse back to the same bytes, and
/// its JSON form can be made.
fn check_schema(schema: &ArraySchema) {
    let bytes = schema.to_bytes();
    let again = ArraySchema::parse(&bytes).expect("a written schema parses");
    assert_eq!(again.to_bytes(), bytes, "schema round trip");
    let j = json::to_json(schema, &[]);
    let _ = serde_json::to_string(&j);
}

/// `schema_file`: a whole `__schema/` file.
pub fn schema_file(data: &[u8]) {
    if let Ok(s) = ArraySchema::parse_file(data) {
        check_schema(&s);
    }
}

/// `schema_payload`: a schema's unfiltered payload.
pub fn schema_payload(data: &[u8]) {
    if let Ok(s) = ArraySchema::parse(data) {
        check_schema(&s);
    }
}

/// `enumeration`: an enumeration payload; every value can be had and it writes back.
pub fn enumeration(data: &[u8]) {
    if let Ok(e) = Enumeration::parse(data) {
        for k in 0..e.len() {
            assert!(e.value(k).is_some(), "enumeration value {k} of {}", e.len());
        }
        let again = Enumeration::parse(&e.to_bytes()).expect("a written enumeration parses");
        assert_eq!(again.to_bytes(), e.to_bytes());
    }
}

/// What the engine computes from a footer when it opens a fragment.
fn check_footer(footer: &Footer, schema: &ArraySchema, footer_offset: u64) {
    let _ = footer.tile_num(schema);
    let _ = footer.cell_num(schema);
    if let Ok(n) = footer.tile_num(schema) {
        for t in [0, n / 2, n.saturating_sub(1)] {
            let _ = footer.cell_num_in_tile(schema, t);
        }
    }
    for (part, _) in footer.parts() {
        let _ = footer.part_range(part, footer_offset);
    }
    let _ = footer.layout(schema);
    if let Ok(bytes) = footer.to_bytes_with_length(schema) {
        let again =
            Footer::parse(&bytes[..bytes.len() - 8], schema).expect("a written footer parses");
        assert_eq!(&again, footer, "footer round trip");
    }
}

/// `footer`: a fragment metadata footer (without the trailing length).
pub fn footer(data: &[u8]) {
    let mut i = Input::new(data);
    let f = fixture(i.u8());
    let bytes = i.rest();
    let _ = Footer::peek_schema_name(bytes);
    if let Ok(footer) = Footer::parse(bytes, &f.schema) {
        check_footer(&footer, &f.schema, 0);
    }
}

/// `fragment_metadata`: a whole `__fragment_metadata.tdb`.
pub fn fragment_metadata(data: &[u8]) {
    let mut i = Input::new(data);
    let f = fixture(i.u8());
    let file = i.rest();
    if let Ok(footer) = Footer::parse_file(file, &f.schema) {
        check_footer(&footer, &f.schema, 0);
    }
    // The same bytes as the payload of a format 1-2 metadata file (no footer).
    if let Ok(old) =
        tessera::layers::fragment::previous::v1_v2::V1V2Metadata::parse(file, &f.schema)
    {
        let _ = old.parts(&f.schema);
        let _ = old.footer(&f.schema, true).cell_num(&f.schema);
    }
    if let Ok(md) = FragmentMetadata::parse_all(file, &f.schema) {
        let _ = md.compute_fragment_stats(&f.schema);
        if let Ok(bytes) = md.to_bytes(&f.schema) {
            let again =
                FragmentMetadata::parse_all(&bytes, &f.schema).expect("written metadata parses");
            assert_eq!(again.to_bytes(&f.schema).ok(), Some(bytes), "metadata round trip");
        }
    }
}

/// The lazily loaded parts the `fragment_part` target's second byte picks from.
pub const PARTS: &[LazyPart] = &[
    LazyPart::TileOffsets(0),
    LazyPart::TileVarOffsets(0),
    LazyPart::TileVarSizes(0),
    LazyPart::TileValidityOffsets(0),
    LazyPart::TileMins(0),
    LazyPart::TileMaxs(0),
    LazyPart::TileSums(0),
    LazyPart::TileNullCounts(0),
    LazyPart::FragmentStats,
    LazyPart::ProcessedConditions,
];

/// `fragment_part`: the payload of one lazily loaded part of fragment metadata.
pub fn fragment_part(data: &[u8]) {
    let mut i = Input::new(data);
    let f = fixture(i.u8());
    let sel = i.u8();
    let part = PARTS[sel as usize % PARTS.len()];
    let payload = i.rest();
    match part {
        LazyPart::TileMins(_) | LazyPart::TileMaxs(_) => {
            if let Ok(m) = TileMinMax::parse(part, payload) {
                assert_eq!(m.to_payload(), payload, "tile min/max round trip");
                let _ = m.var_values();
                for t in 0..m.var_tile_count().min(64) {
                    let _ = m.fixed_value(t, 8);
                }
            }
        }
        LazyPart::TileSums(_) => {
            if let Ok(s) = TileSums::parse(payload) {
                assert_eq!(s.to_payload(), payload, "tile sums round trip");
            }
        }
        LazyPart::FragmentStats => {
            let layout = FieldLayout::new(&f.schema, sel & 0x40 != 0, sel & 0x80 != 0);
            if let Ok(s) = FragmentStats::parse(payload, &layout) {
                assert_eq!(s.to_payload(), payload, "fragment stats round trip");
            }
        }
        LazyPart::ProcessedConditions => {
            if let Ok(c) = ProcessedConditions::parse(payload) {
                assert_eq!(c.to_payload(), payload, "processed conditions round trip");
            }
        }
        _ => {
            if let Ok(v) = parse_u64s(part, payload) {
                assert_eq!(tessera::layers::fragment::parts::u64s_payload(&v), payload);
            }
        }
    }
}

/// `rtree`: an R-tree payload for the dimensions of a fixture schema; a parsed tree writes
/// back the bytes it was parsed from, and answers a query over its root.
pub fn rtree(data: &[u8]) {
    let mut i = Input::new(data);
    let f = fixture(i.u8());
    let dims = dim_types(&f.schema);
    let payload = i.rest();
    if let Ok(tree) = RTree::parse(payload, &dims) {
        assert_eq!(tree.to_bytes(&dims), payload, "R-tree round trip");
        let _ = tree.heap_size();
        if let Some(root) = tree.root() {
            let ranges: Vec<Vec<_>> = root.ranges().map(|r| vec![r.to_range()]).collect();
            let _ = tree.query(&dims, &ranges);
        }
        for t in 0..tree.leaf_count().min(64) {
            assert!(tree.leaf(t).is_some());
        }
    }
}

/// `commit_files`: `.con`, `.vac` and `.ign` files and commit names.
pub fn commit_files(data: &[u8]) {
    let mut i = Input::new(data);
    let kind = i.u8() % 4;
    let bytes = i.rest();
    match kind {
        0 => {
            if let Ok(con) = ConsolidatedCommits::parse(bytes) {
                for e in &con.entries {
                    let _ = e.commit();
                    if let Some(d) = &e.delete_file {
                        let _ = DeleteCommit::parse_file(d);
                    }
                }
                let again = ConsolidatedCommits::parse(&con.to_bytes()).expect(".con round trip");
                assert_eq!(again, con);
            }
        }
        1 => {
            if let Ok(v) = VacuumFile::parse(bytes) {
                let _ = v.relative_paths();
            }
        }
        2 => {
            if let Ok(ign) = IgnoreFile::parse(bytes) {
                for p in &ign.paths {
                    let _ = CommitEntry::classify(p);
                }
            }
        }
        _ => {
            if let Ok(text) = std::str::from_utf8(bytes) {
                let _ = CommitEntry::classify(text);
                if let Ok(n) = FragmentName::parse(text) {
                    // A name is printed without the path and extension it was parsed from
                    // (a `.` or `/` in the name itself would be taken for them).
                    if !n.as_str().contains(['.', '/']) {
                        assert_eq!(FragmentName::parse(&n.to_string()).ok(), Some(n));
                    }
                }
                if let Ok(n) = TimestampedName::parse(text) {
                    let _ = n.t1.max(n.t2);
                }
            }
        }
    }
}

/// `delete_condition`: a `.del` file, a condition payload or a `.upd` payload; a parsed
/// condition writes back, negates, and resolves against a fixture schema as a delete
/// commit is loaded.
pub fn delete_condition(data: &[u8]) {
    let mut i = Input::new(data);
    let f = fixture(i.u8());
    let kind = i.u8() % 3;
    let bytes = i.rest();
    let node = match kind {
        0 => DeleteCommit::parse_file(bytes).ok().and_then(|d| d.condition),
        1 => ConditionNode::parse(bytes).ok().flatten(),
        _ => UpdateCommit::parse_payload(bytes).ok().and_then(|u| u.condition),
    };
    let Some(node) = node else { return };
    let again = ConditionNode::parse(&node.to_bytes()).expect("a written condition parses");
    assert_eq!(again.as_ref(), Some(&node), "condition round trip");
    let _ = node.negated();
    let _ = node.set_members();
    let _ = node.field_names();
    if let Ok(q) = QueryCondition::from_node(&node, &f.schema, &f.enumerations) {
        let _ = q.to_node();
        let _ = q.to_string();
    }
}

/// `consolidated_fragment_meta`: a `__fragment_meta/*.meta` file or its payload; every
/// footer in it parsed with a fixture schema.
pub fn consolidated_fragment_meta(data: &[u8]) {
    let mut i = Input::new(data);
    let f = fixture(i.u8());
    let kind = i.u8() % 2;
    let bytes = i.rest();
    let parsed = if kind == 0 {
        ConsolidatedFragmentMeta::parse_file(bytes)
    } else {
        ConsolidatedFragmentMeta::parse_payload(bytes)
    };
    if let Ok(meta) = parsed {
        for e in &meta.entries {
            if let Ok(footer) = e.parse_footer(&f.schema) {
                check_footer(&footer, &f.schema, 0);
            }
        }
        let again = ConsolidatedFragmentMeta::parse_payload(&meta.to_payload())
            .expect("a written .meta payload parses");
        assert_eq!(again, meta, ".meta round trip");
    }
}

/// `array_metadata`: a `__meta/` file or its payload; the entries as JSON and back.
pub fn array_metadata(data: &[u8]) {
    let mut i = Input::new(data);
    let kind = i.u8() % 2;
    let bytes = i.rest();
    let entries = if kind == 0 {
        match read_generic_tile(bytes) {
            Ok(p) => metadata::parse_payload(&p),
            Err(_) => return,
        }
    } else {
        metadata::parse_payload(bytes)
    };
    let Ok(entries) = entries else { return };
    for MetadataEntry { value, .. } in &entries {
        if let Some(v) = value {
            let _ = v.to_json();
            let _ = v.as_str();
            let _ = v.as_i64s();
            let _ = v.as_f64s();
        }
    }
    let payload = metadata::to_payload(&entries).expect("parsed entries encode");
    let again = metadata::parse_payload(&payload).expect("encoded entries parse");
    assert!(again.len() <= entries.len());
}

/// `query_condition`: `--where` text against a fixture schema; a parsed condition prints
/// as text that parses back to it.
pub fn query_condition(data: &[u8]) {
    let mut i = Input::new(data);
    let f = fixture(i.u8());
    let Ok(text) = std::str::from_utf8(i.rest()) else { return };
    let Ok(q) = QueryCondition::parse(text, &f.schema, &f.enumerations) else { return };
    let printed = q.to_string();
    let again = QueryCondition::parse(&printed, &f.schema, &f.enumerations)
        .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which fails: {e}"));
    assert_eq!(again.to_node(), q.to_node(), "{text:?} printed as {printed:?}");
    let _ = QueryCondition::from_node(&q.to_node(), &f.schema, &f.enumerations);
}

/// `schema_json`: schema JSON text; a parsed schema's JSON parses back to the same schema.
pub fn schema_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok((schema, enums)) = json::from_json_str(text) else { return };
    let j = serde_json::to_string(&json::to_json(&schema, &enums)).expect("schema JSON prints");
    let (again, _) = json::from_json_str(&j)
        .unwrap_or_else(|e| panic!("{text:?} printed as {j:?}, which fails: {e}"));
    assert_eq!(again.to_bytes(), schema.to_bytes(), "{text:?} printed as {j:?}");
}

/// `cells_jsonl`: the input of `tessera write` against a fixture schema (a dense array's
/// cells cover its whole domain, as without `--subarray`).
pub fn cells_jsonl(data: &[u8]) {
    let mut i = Input::new(data);
    let f = fixture(i.u8());
    let enum_codes = i.u8() & 1 == 1;
    let Ok(text) = std::str::from_utf8(i.rest()) else { return };
    let subarray = if f.schema.is_dense() {
        match whole_domain(&f.schema) {
            Some(s) => Some(s),
            None => return,
        }
    } else {
        None
    };
    let _ =
        cells_input::parse_cells(&f.schema, &f.enumerations, text, subarray.as_ref(), enum_codes);
}

/// A dense write's region covering the whole domain.
fn whole_domain(schema: &ArraySchema) -> Option<cells_input::Subarray> {
    let mut ranges = Vec::new();
    for d in &schema.dimensions {
        let [lo_bytes, hi_bytes] = d.domain.clone()?;
        ranges.push(cells_input::DimRange {
            dim: d.name.clone(),
            datatype: d.datatype,
            lo: cells_input::as_int(d.datatype, &lo_bytes)?,
            hi: cells_input::as_int(d.datatype, &hi_bytes)?,
            lo_bytes,
            hi_bytes,
        });
    }
    Some(cells_input::Subarray { ranges })
}

/// The key the `encrypted` target decrypts with (the `encrypted` fixture family's).
fn fuzz_key() -> tessera::EncryptionKey {
    tessera::EncryptionKey::parse("0123456789abcdeF0123456789abcdeF").expect("32 bytes")
}

/// `encrypted`: an encrypted generic tile (whole file, or tiles back to back) read with a
/// key, one chunk through the AES-256-GCM filter alone, and a round trip of the input: any
/// input gives a value or an error, never a panic, and what was encrypted decrypts.
pub fn encrypted(data: &[u8]) {
    let key = fuzz_key();
    let mut i = Input::new(data);
    let mode = i.u8() % 3;
    match mode {
        0 => {
            let file = i.rest();
            let _ = tessera::layers::tile::read_generic_tile_with_key(file, Some(&key));
            let _ = tessera::layers::tile::read_generic_tiles_with_key(file, 0, 4, Some(&key));
        }
        1 => {
            let n = i.u16() as usize;
            let metadata = i.bytes(n);
            let chunk = i.rest();
            let Ok(codec) = FilterPipeline::default().codec(
                tessera::layers::types::Datatype::UInt8,
                1,
                tessera::layers::types::FORMAT_VERSION,
            ) else {
                return;
            };
            let codec = codec.encrypted(Some(&key));
            let mut out = vec![7u8; 3];
            if codec.decode_chunk(metadata, chunk, &mut out).is_ok() {
                assert_eq!(out[..3], [7, 7, 7], "bytes already in the output were changed");
            }
        }
        _ => {
            let payload = i.rest();
            let file = tessera::layers::tile::write_generic_tile_with_key(
                payload,
                tessera::layers::types::FORMAT_VERSION,
                Some(&key),
            )
            .expect("any payload encrypts");
            let back = tessera::layers::tile::read_generic_tile_with_key(&file, Some(&key))
                .expect("an encrypted tile decrypts");
            assert_eq!(back, payload, "encryption round trip");
        }
    }
}
