//! `cargo xtask bad-corpus`: regenerates `testdata/bad/`, the corpus of corrupt files, from
//! the fixtures. Every file kind Tessera reads gets truncated, bit-flipped, length-inflated and
//! wrong-version variants (where the kind has lengths or a version), each a small file next
//! to `manifest.json`, which says where each file comes from and what was done to it.
//!
//! The errors each file must give are asserted in `crates/tessera/tests/bad_data.rs`, whose
//! inventory test fails when a file here has no expectation there (or the reverse). The
//! corruptions are made at fixed places of each structure (a header field, the middle of a
//! compressed stream, a length in a re-encoded payload), so the same fixtures give the same
//! files.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Value as Json, json};
use tessera::layers::fragment::ConditionNode;
use tessera::layers::tile::{FramedTile, read_generic_tile, write_generic_tile};
use tessera::layers::types::FORMAT_VERSION;

/// Where the corpus goes, relative to the workspace root.
pub(crate) const BAD_DIR: &str = "testdata/bad";

/// One corrupt file.
struct Bad {
    /// Path relative to `testdata/bad`.
    file: String,
    /// What kind of file it is (the test's loader).
    kind: &'static str,
    /// `truncated`, `bit-flipped`, `length-inflated` or `wrong-version`.
    variant: &'static str,
    /// The fixture it was made from, relative to `testdata/`.
    source: String,
    /// What was done to it.
    corruption: String,
    /// The bytes.
    bytes: Vec<u8>,
    /// Extra manifest fields (the array whose schema reads it, the field of a data tile).
    extra: Json,
}

/// The first file (by name) in `testdata/<dir>`, and its bytes.
fn first_file(testdata: &Path, dir: &str, suffix: &str) -> Result<(String, Vec<u8>)> {
    let mut names: Vec<PathBuf> = fs::read_dir(testdata.join(dir))
        .with_context(|| format!("testdata/{dir}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(suffix))
        .collect();
    names.sort();
    let path = names.first().with_context(|| format!("no *{suffix} file in testdata/{dir}"))?;
    let rel = path.strip_prefix(testdata)?.to_string_lossy().into_owned();
    Ok((rel, fs::read(path)?))
}

/// The first fragment folder of an array, relative to `testdata/`.
fn first_fragment(testdata: &Path, array: &str) -> Result<String> {
    let mut dirs: Vec<String> = fs::read_dir(testdata.join(array).join("__fragments"))?
        .filter_map(|e| Some(e.ok()?.file_name().to_str()?.to_owned()))
        .collect();
    dirs.sort();
    let first = dirs.first().with_context(|| format!("no fragment in {array}"))?;
    Ok(format!("{array}/__fragments/{first}"))
}

fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn get_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

fn with_u32(b: &[u8], at: usize, v: u32) -> Vec<u8> {
    let mut out = b.to_vec();
    out[at..at + 4].copy_from_slice(&v.to_le_bytes());
    out
}

fn with_u64(b: &[u8], at: usize, v: u64) -> Vec<u8> {
    let mut out = b.to_vec();
    out[at..at + 8].copy_from_slice(&v.to_le_bytes());
    out
}

fn flipped(b: &[u8], at: usize, mask: u8) -> Vec<u8> {
    let mut out = b.to_vec();
    out[at] ^= mask;
    out
}

/// Where chunk 0's data starts in a generic tile, and how long it is.
struct TileAt {
    data: usize,
    data_len: usize,
}

fn generic_tile_at(b: &[u8]) -> TileAt {
    let tile = 34 + get_u32(b, 30) as usize;
    let md_len = get_u32(b, tile + 16) as usize;
    let data_len = get_u32(b, tile + 12) as usize;
    TileAt { data: tile + 20 + md_len, data_len }
}

/// A generic tile of format 22 (GZIP level 1, as libtiledb writes it) holding `payload`.
fn tile_of(payload: &[u8]) -> Result<Vec<u8>> {
    Ok(write_generic_tile(payload, FORMAT_VERSION)?)
}

/// The variants every generic-tile file kind shares: cut inside the tile data, a bit of the
/// deflate stream flipped, `persisted_size` inflated, and format version 23.
fn generic_variants(
    kind: &'static str,
    dir: &str,
    stem: &str,
    ext: &str,
    source: &str,
    b: &[u8],
    extra: &Json,
) -> Vec<Bad> {
    let at = generic_tile_at(b);
    let mk = |variant, name: &str, corruption: String, bytes: Vec<u8>| Bad {
        file: format!("{dir}/{stem}{name}{ext}"),
        kind,
        variant,
        source: source.to_owned(),
        corruption,
        bytes,
        extra: extra.clone(),
    };
    let cut = b.len() - 10;
    let flip_at = at.data + at.data_len / 2;
    vec![
        mk(
            "truncated",
            "truncated",
            format!("cut to {cut} of {} bytes (inside the tile data)", b.len()),
            b[..cut].to_vec(),
        ),
        mk(
            "bit-flipped",
            "bitflip_deflate",
            format!("bit 0x10 of byte {flip_at} flipped (the middle of chunk 0's deflate stream)"),
            flipped(b, flip_at, 0x10),
        ),
        mk(
            "length-inflated",
            "inflated_persisted_size",
            "generic tile persisted_size (offset 4) increased by 1000".into(),
            with_u64(b, 4, get_u64(b, 4) + 1000),
        ),
        mk(
            "wrong-version",
            "version_23",
            "generic tile version (offset 0) set to 23".into(),
            with_u32(b, 0, 23),
        ),
    ]
}

/// Offset of the first value node in a serialized condition whose root is an expression
/// of value nodes (or a value node).
fn first_value_node(payload: &[u8]) -> usize {
    if payload[0] == 0 { 10 } else { 0 }
}

/// Every corrupt file, from the fixtures under `testdata`.
fn corpus(testdata: &Path) -> Result<Vec<Bad>> {
    let mut out = Vec::new();
    let none = json!({});

    // Schema files: schemas/dense_defaults.
    let array = "schemas/dense_defaults";
    let (src, b) = first_file(testdata, &format!("{array}/__schema"), "")?;
    let extra = json!({ "array": array });
    out.extend(generic_variants("schema", "schema", "", ".tdb", &src, &b, &extra));
    let payload = read_generic_tile(&b)?;
    let mk = |name: &str, variant, corruption: &str, bytes: Vec<u8>| Bad {
        file: format!("schema/{name}.tdb"),
        kind: "schema",
        variant,
        source: src.clone(),
        corruption: corruption.to_owned(),
        bytes,
        extra: extra.clone(),
    };
    out.push(mk(
        "truncated_header",
        "truncated",
        "cut to 20 bytes (inside the generic tile header)",
        b[..20].to_vec(),
    ));
    out.push(mk(
        "inflated_tile_size",
        "length-inflated",
        "generic tile tile_size (offset 12) increased by 1",
        with_u64(&b, 12, get_u64(&b, 12) + 1),
    ));
    out.push(mk(
        "inflated_filter_count",
        "length-inflated",
        "payload re-encoded with the coords filter count (payload offset 20) set to 1000000",
        tile_of(&with_u32(&payload, 20, 1_000_000))?,
    ));
    out.push(mk(
        "version_payload_23",
        "wrong-version",
        "payload re-encoded with its format version (payload offset 0) set to 23",
        tile_of(&with_u32(&payload, 0, 23))?,
    ));
    out.push(mk(
        "version_payload_4",
        "wrong-version",
        "payload re-encoded with its format version (payload offset 0) set to 4",
        tile_of(&with_u32(&payload, 0, 4))?,
    ));

    // Enumeration files: the first of schemas/enumerations.
    let array = "schemas/enumerations";
    let (src, b) = first_file(testdata, &format!("{array}/__schema/__enumerations"), "")?;
    out.extend(generic_variants("enumeration", "enumeration", "", ".tdb", &src, &b, &none));
    let payload = read_generic_tile(&b)?;
    out.push(Bad {
        file: "enumeration/inflated_name_length.tdb".into(),
        kind: "enumeration",
        variant: "length-inflated",
        source: src.clone(),
        corruption: "payload re-encoded with the name length (payload offset 4) set to 1000000"
            .into(),
        bytes: tile_of(&with_u32(&payload, 4, 1_000_000))?,
        extra: none.clone(),
    });
    out.push(Bad {
        file: "enumeration/version_payload_9.tdb".into(),
        kind: "enumeration",
        variant: "wrong-version",
        source: src.clone(),
        corruption: "payload re-encoded with the enumeration version (payload offset 0) set to 9"
            .into(),
        bytes: tile_of(&with_u32(&payload, 0, 9))?,
        extra: none.clone(),
    });

    // Fragment metadata: the first fragment of fragments/array_metadata.
    let array = "fragments/array_metadata";
    let frag = first_fragment(testdata, array)?;
    let src = format!("{frag}/__fragment_metadata.tdb");
    let b = fs::read(testdata.join(&src))?;
    let extra = json!({ "array": array });
    let footer_len = get_u64(&b, b.len() - 8) as usize;
    let footer = b.len() - 8 - footer_len;
    let rtree = generic_tile_at(&b);
    let mk = |name: &str, variant, corruption: String, bytes: Vec<u8>| Bad {
        file: format!("fragment_metadata/{name}.tdb"),
        kind: "fragment_metadata",
        variant,
        source: src.clone(),
        corruption,
        bytes,
        extra: extra.clone(),
    };
    let cut = b.len() - 100;
    out.push(mk(
        "truncated",
        "truncated",
        format!("cut to {cut} of {} bytes (inside the footer)", b.len()),
        b[..cut].to_vec(),
    ));
    out.push(mk("truncated_length", "truncated", "cut to 5 bytes".into(), b[..5].to_vec()));
    let flip_at = rtree.data + rtree.data_len / 2;
    out.push(mk(
        "bitflip_rtree",
        "bit-flipped",
        format!("bit 0x10 of byte {flip_at} flipped (the R-tree tile's deflate stream)"),
        flipped(&b, flip_at, 0x10),
    ));
    out.push(mk(
        "bitflip_dense_flag",
        "bit-flipped",
        format!(
            "bit 0x02 of the footer's dense byte (offset {}) flipped",
            footer + 12 + get_u64(&b, footer + 4) as usize
        ),
        flipped(&b, footer + 12 + get_u64(&b, footer + 4) as usize, 0x02),
    ));
    out.push(mk(
        "inflated_footer_length",
        "length-inflated",
        format!("the trailing footer length set to the file size ({})", b.len()),
        with_u64(&b, b.len() - 8, b.len() as u64),
    ));
    out.push(mk(
        "inflated_schema_name",
        "length-inflated",
        format!("the footer's schema name size (offset {}) set to 1000000", footer + 4),
        with_u64(&b, footer + 4, 1_000_000),
    ));
    out.push(mk(
        "inflated_rtree_tile",
        "length-inflated",
        "the R-tree generic tile's persisted_size (offset 4) increased by 8".into(),
        with_u64(&b, 4, get_u64(&b, 4) + 8),
    ));
    out.push(mk(
        "version_23",
        "wrong-version",
        format!("the footer version (offset {footer}) set to 23"),
        with_u32(&b, footer, 23),
    ));
    out.push(mk(
        "version_9",
        "wrong-version",
        format!("the footer version (offset {footer}) set to 9"),
        with_u32(&b, footer, 9),
    ));

    // Data tiles: one tile per file in the filters family.
    for (array, file, attribute) in
        [("filters/gzip", "a0.tdb", 0), ("filters/checksums", "a0.tdb", 0)]
    {
        let frag = first_fragment(testdata, array)?;
        let src = format!("{frag}/{file}");
        let b = fs::read(testdata.join(&src))?;
        let framed = FramedTile::parse(b.as_slice())?;
        let extra =
            json!({ "array": array, "attribute": attribute, "tile_size": framed.orig_len() });
        let name = array.trim_start_matches("filters/");
        let data = 20 + get_u32(&b, 16) as usize;
        let data_len = get_u32(&b, 12) as usize;
        let mk = |suffix: &str, variant, corruption: String, bytes: Vec<u8>| Bad {
            file: format!("data_tile/{name}_{suffix}.tdb"),
            kind: "data_tile",
            variant,
            source: src.clone(),
            corruption,
            bytes,
            extra: extra.clone(),
        };
        let flip_at = data + data_len / 2;
        out.push(mk(
            "bitflip",
            "bit-flipped",
            format!("bit 0x10 of byte {flip_at} flipped (the middle of chunk 0's data)"),
            flipped(&b, flip_at, 0x10),
        ));
        if name == "gzip" {
            let cut = b.len() / 2;
            out.push(mk(
                "truncated",
                "truncated",
                format!("cut to {cut} of {} bytes", b.len()),
                b[..cut].to_vec(),
            ));
            out.push(mk(
                "inflated_num_chunks",
                "length-inflated",
                "num_chunks (offset 0) set to 2^40".into(),
                with_u64(&b, 0, 1 << 40),
            ));
            out.push(mk(
                "inflated_filtered_len",
                "length-inflated",
                "chunk 0's filtered_len (offset 12) increased by 1000".into(),
                with_u32(&b, 12, get_u32(&b, 12) + 1000),
            ));
            out.push(mk(
                "inflated_orig_len",
                "length-inflated",
                "chunk 0's orig_len (offset 8) set to 4294967295".into(),
                with_u32(&b, 8, u32::MAX),
            ));
        }
    }

    // Generic tiles, read as such: the first array metadata file of fragments/array_metadata.
    let (src, b) = first_file(testdata, "fragments/array_metadata/__meta", "")?;
    let mk = |name: &str, variant, corruption: &str, bytes: Vec<u8>| Bad {
        file: format!("generic_tile/{name}.tdb"),
        kind: "generic_tile",
        variant,
        source: src.clone(),
        corruption: corruption.to_owned(),
        bytes,
        extra: none.clone(),
    };
    out.push(mk(
        "truncated_pipeline",
        "truncated",
        "cut to 40 bytes (inside the header's filter pipeline)",
        b[..40].to_vec(),
    ));
    out.push(mk(
        "bitflip_datatype",
        "bit-flipped",
        "bit 0x80 of the datatype byte (offset 20) flipped",
        flipped(&b, 20, 0x80),
    ));
    out.push(mk(
        "bitflip_encryption",
        "bit-flipped",
        "bit 0x01 of the encryption_type byte (offset 29) flipped (AES-256-GCM)",
        flipped(&b, 29, 0x01),
    ));
    out.push(mk(
        "inflated_persisted_size",
        "length-inflated",
        "persisted_size (offset 4) set to 2^64 - 10",
        with_u64(&b, 4, u64::MAX - 9),
    ));
    out.push(mk(
        "inflated_pipeline_size",
        "length-inflated",
        "filter_pipeline_size (offset 30) increased by 4",
        with_u32(&b, 30, get_u32(&b, 30) + 4),
    ));
    out.push(mk(
        "inflated_filter_count",
        "length-inflated",
        "the header pipeline's filter count (offset 38) set to 1000",
        with_u32(&b, 38, 1000),
    ));
    out.push(mk("version_0", "wrong-version", "version (offset 0) set to 0", with_u32(&b, 0, 0)));

    // Array metadata files (the same file, read as array metadata).
    out.extend(generic_variants("array_metadata", "array_metadata", "", ".tdb", &src, &b, &none));
    let payload = read_generic_tile(&b)?;
    // The first entry that puts a value (deletions have no datatype or value).
    let mut put = 0;
    loop {
        let key_len = get_u32(&payload, put) as usize;
        if payload[put + 4 + key_len] == 0 {
            break;
        }
        put += 5 + key_len;
        if put >= payload.len() {
            bail!("{src}: no metadata entry puts a value");
        }
    }
    let datatype_at = put + 4 + get_u32(&payload, put) as usize + 1;
    let mk = |name: &str, variant, corruption: String, bytes: Vec<u8>| Bad {
        file: format!("array_metadata/{name}.tdb"),
        kind: "array_metadata",
        variant,
        source: src.clone(),
        corruption,
        bytes,
        extra: none.clone(),
    };
    out.push(mk(
        "inflated_key_len",
        "length-inflated",
        "payload re-encoded with the first key_len (payload offset 0) set to 1000000".into(),
        tile_of(&with_u32(&payload, 0, 1_000_000))?,
    ));
    out.push(mk(
        "inflated_value_num",
        "length-inflated",
        format!(
            "payload re-encoded with the first put's value_num (payload offset {}) set to 1000000",
            datatype_at + 1
        ),
        tile_of(&with_u32(&payload, datatype_at + 1, 1_000_000))?,
    ));
    out.push(mk(
        "bitflip_value_datatype",
        "bit-flipped",
        format!(
            "payload re-encoded with bit 0x80 of the first put's datatype byte (payload offset \
             {datatype_at}) flipped"
        ),
        tile_of(&flipped(&payload, datatype_at, 0x80))?,
    ));

    // Delete commits: the first .del of fragments/sparse_deletes.
    let array = "fragments/sparse_deletes";
    let (src, b) = first_file(testdata, &format!("{array}/__commits"), ".del")?;
    let extra = json!({ "array": array });
    out.extend(generic_variants("delete", "commits", "del_", ".del", &src, &b, &extra));
    let payload = read_generic_tile(&b)?;
    if ConditionNode::parse(&payload)?.is_none() {
        bail!("{src}: empty delete condition");
    }
    let v = first_value_node(&payload);
    let name_len = get_u32(&payload, v + 2) as usize;
    let mk = |name: &str, variant, corruption: String, bytes: Vec<u8>| Bad {
        file: format!("commits/del_{name}.del"),
        kind: "delete",
        variant,
        source: src.clone(),
        corruption,
        bytes,
        extra: extra.clone(),
    };
    out.push(mk(
        "inflated_value_size",
        "length-inflated",
        format!(
            "payload re-encoded with the first value node's value size (payload offset {}) set to 1000000",
            v + 6 + name_len
        ),
        tile_of(&with_u64(&payload, v + 6 + name_len, 1_000_000))?,
    ));
    if payload[0] == 0 {
        out.push(mk(
            "inflated_child_count",
            "length-inflated",
            "payload re-encoded with the root's child count (payload offset 2) set to 1000000"
                .into(),
            tile_of(&with_u64(&payload, 2, 1_000_000))?,
        ));
    }
    out.push(mk(
        "bitflip_op",
        "bit-flipped",
        format!("payload re-encoded with bit 0x40 of the first value node's op (payload offset {}) flipped", v + 1),
        tile_of(&flipped(&payload, v + 1, 0x40))?,
    ));

    // Consolidated commits: the .con of fragments/commits_consolidated.
    let array = "fragments/commits_consolidated";
    let (src, b) = first_file(testdata, &format!("{array}/__commits"), ".con")?;
    let text_end =
        |from: usize| b[from..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| from + p);
    let del_line = (0..b.len())
        .find(|&i| (i == 0 || b[i - 1] == b'\n') && b[i..text_end(i)].ends_with(b".del"))
        .context("the .con fixture has no .del entry")?;
    let size_at = text_end(del_line) + 1;
    let body = size_at + 8;
    let body_len = get_u64(&b, size_at) as usize;
    let mk = |name: &str, variant, corruption: String, bytes: Vec<u8>| Bad {
        file: format!("commits/con_{name}.con"),
        kind: "consolidated_commits",
        variant,
        source: src.clone(),
        corruption,
        bytes,
        extra: none.clone(),
    };
    let cut = body + body_len / 2;
    out.push(mk(
        "truncated",
        "truncated",
        format!("cut to {cut} of {} bytes (inside the embedded .del)", b.len()),
        b[..cut].to_vec(),
    ));
    out.push(mk(
        "inflated_delete_size",
        "length-inflated",
        format!("the embedded .del size (offset {size_at}) increased by 1000"),
        with_u64(&b, size_at, body_len as u64 + 1000),
    ));
    out.push(mk(
        "bitflip_path",
        "bit-flipped",
        "bit 0x80 of byte 3 (in the first path) flipped".into(),
        flipped(&b, 3, 0x80),
    ));
    let del_tile = &b[body..body + body_len];
    let at = generic_tile_at(del_tile);
    let flip_at = body + at.data + at.data_len / 2;
    out.push(mk(
        "bitflip_delete",
        "bit-flipped",
        format!("bit 0x10 of byte {flip_at} flipped (the embedded .del's deflate stream)"),
        flipped(&b, flip_at, 0x10),
    ));
    let first_line = &b[..text_end(0)];
    let version_at = first_line.iter().rposition(|&c| c == b'_').context("no version")? + 1;
    let mut wrong = b[..version_at].to_vec();
    wrong.extend_from_slice(b"99999999999");
    wrong.extend_from_slice(&b[version_at + 2..]);
    out.push(mk(
        "version_99999999999",
        "wrong-version",
        "the first path's format version suffix `_22` replaced by `_99999999999`".into(),
        wrong,
    ));

    // Vacuum files: the .vac of fragments/sparse_consolidated.
    let (src, b) = first_file(testdata, "fragments/sparse_consolidated/__commits", ".vac")?;
    let mk = |name: &str, variant, corruption: String, bytes: Vec<u8>| Bad {
        file: format!("commits/vac_{name}.vac"),
        kind: "vacuum",
        variant,
        source: src.clone(),
        corruption,
        bytes,
        extra: none.clone(),
    };
    out.push(mk(
        "bitflip_utf8",
        "bit-flipped",
        "bit 0x80 of byte 20 flipped (not UTF-8)".into(),
        flipped(&b, 20, 0x80),
    ));
    let cut = b.len() - 20;
    out.push(mk(
        "truncated",
        "truncated",
        format!("cut to {cut} of {} bytes (inside the last line)", b.len()),
        b[..cut].to_vec(),
    ));
    let bare: Vec<u8> = String::from_utf8(b.clone())?
        .lines()
        .map(|l| format!("{}\n", l.rsplit('/').next().unwrap_or(l)))
        .collect::<String>()
        .into_bytes();
    out.push(mk(
        "version_bare_names",
        "wrong-version",
        "every line reduced to the bare fragment name (neither format 19's `/__fragments/…` nor an older absolute URI)".into(),
        bare,
    ));

    // Ignore files: no fixture has one; made from the commit paths of
    // fragments/commits_consolidated, as a commit consolidation with ignores writes them.
    let mut paths: Vec<String> =
        fs::read_dir(testdata.join("fragments/commits_consolidated/__commits"))?
            .filter_map(|e| Some(e.ok()?.file_name().to_str()?.to_owned()))
            .filter(|n| n.ends_with(".wrt"))
            .map(|n| format!("__commits/{n}\n"))
            .collect();
    paths.sort();
    let ign = paths.concat().into_bytes();
    let src = "fragments/commits_consolidated/__commits (the .wrt names)".to_owned();
    out.push(Bad {
        file: "commits/ign_bitflip_utf8.ign".into(),
        kind: "ignore",
        variant: "bit-flipped",
        source: src.clone(),
        corruption: "bit 0x80 of byte 12 flipped (not UTF-8)".into(),
        bytes: flipped(&ign, 12, 0x80),
        extra: none.clone(),
    });
    out.push(Bad {
        file: "commits/ign_truncated.ign".into(),
        kind: "ignore",
        variant: "truncated",
        source: src,
        corruption: format!(
            "cut to {} of {} bytes (inside the last line)",
            ign.len() - 12,
            ign.len()
        ),
        bytes: ign[..ign.len() - 12].to_vec(),
        extra: none.clone(),
    });

    // Consolidated fragment metadata: the .meta of fragments/fragment_meta_consolidated.
    let array = "fragments/fragment_meta_consolidated";
    let (src, b) = first_file(testdata, &format!("{array}/__fragment_meta"), ".meta")?;
    let extra = json!({ "array": array });
    out.extend(generic_variants("fragment_meta", "fragment_meta", "", ".meta", &src, &b, &extra));
    let payload = read_generic_tile(&b)?;
    let name_len = get_u64(&payload, 4) as usize;
    let first_footer = get_u64(&payload, 4 + 8 + name_len) as usize;
    let mk = |name: &str, variant, corruption: String, bytes: Vec<u8>| Bad {
        file: format!("fragment_meta/{name}.meta"),
        kind: "fragment_meta",
        variant,
        source: src.clone(),
        corruption,
        bytes,
        extra: extra.clone(),
    };
    out.push(mk(
        "inflated_count",
        "length-inflated",
        "payload re-encoded with the fragment count (payload offset 0) set to 1000000".into(),
        tile_of(&with_u32(&payload, 0, 1_000_000))?,
    ));
    out.push(mk(
        "inflated_name_length",
        "length-inflated",
        "payload re-encoded with the first name length (payload offset 4) set to 1000000".into(),
        tile_of(&with_u64(&payload, 4, 1_000_000))?,
    ));
    out.push(mk(
        "version_footer_23",
        "wrong-version",
        format!("payload re-encoded with the first footer's version (payload offset {first_footer}) set to 23"),
        tile_of(&with_u32(&payload, first_footer, 23))?,
    ));
    out.extend(encrypted(testdata)?);
    Ok(out)
}

/// `cargo xtask bad-corpus`: deletes and rewrites `testdata/bad/` and its manifest.
pub(crate) fn bad_corpus(root: &Path) -> Result<()> {
    let testdata = root.join("testdata");
    let files = corpus(&testdata)?;
    let dir = root.join(BAD_DIR);
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| dir.display().to_string())?;
    }
    let mut manifest = Vec::new();
    let mut total = 0;
    for f in &files {
        let path = dir.join(&f.file);
        fs::create_dir_all(path.parent().context("file folder")?)?;
        fs::write(&path, &f.bytes)?;
        total += f.bytes.len();
        let mut entry = json!({
            "file": f.file,
            "kind": f.kind,
            "variant": f.variant,
            "source": f.source,
            "corruption": f.corruption,
            "size": f.bytes.len(),
        });
        if let (Some(e), Some(x)) = (entry.as_object_mut(), f.extra.as_object()) {
            e.extend(x.clone());
        }
        manifest.push(entry);
    }
    let manifest = json!({
        "generator": "xtask/src/bad.rs (cargo xtask bad-corpus)",
        "tests": "crates/tessera/tests/bad_data.rs",
        "files": manifest,
    });
    let text = serde_json::to_string_pretty(&manifest)? + "\n";
    fs::write(dir.join("manifest.json"), text)?;
    println!("{BAD_DIR}: {} files, {total} bytes, and manifest.json", files.len());
    Ok(())
}

/// Files of the array libtiledb wrote with an AES-256-GCM key (`testdata/encrypted/dense`,
/// key in `gen_encrypted.py`): its schema file with a flipped tag bit, a flipped ciphertext
/// byte, cut inside the ciphertext, and read with a wrong key or none (the manifest's `key`:
/// `"right"`, `"wrong"` or `"none"`); its first data tile (ZSTD then AES-256-GCM) with a
/// flipped tag bit and cut short.
fn encrypted(testdata: &Path) -> Result<Vec<Bad>> {
    let mut out = Vec::new();
    let array = "encrypted/dense";
    let (src, b) = first_file(testdata, &format!("{array}/__schema"), "")?;
    // Header (34) and pipeline (GZIP, AES: 23 bytes), u64 chunk count, then the chunk's
    // three u32 lengths: the AES header starts at 77; its first part's tag at 77 + 28.
    let md = 34 + get_u32(&b, 30) as usize + 8 + 12;
    let tag = md + 8 + 8 + 12;
    let mk = |name: &str, variant, key: &str, corruption: String, bytes: Vec<u8>| Bad {
        file: format!("encrypted/schema_{name}.tdb"),
        kind: "encrypted_schema",
        variant,
        source: src.clone(),
        corruption,
        bytes,
        extra: json!({ "array": array, "key": key }),
    };
    out.push(mk(
        "bitflip_tag",
        "bit-flipped",
        "right",
        format!("bit 0x04 of byte {tag} flipped (the tag of the first encrypted part)"),
        flipped(&b, tag, 0x04),
    ));
    let last = b.len() - 1;
    out.push(mk(
        "bitflip_ciphertext",
        "bit-flipped",
        "right",
        format!("bit 0x01 of the last byte ({last}, ciphertext) flipped"),
        flipped(&b, last, 0x01),
    ));
    out.push(mk(
        "truncated",
        "truncated",
        "right",
        format!("cut to {} bytes (inside the ciphertext)", b.len() - 10),
        b[..b.len() - 10].to_vec(),
    ));
    out.push(mk(
        "wrong_key",
        "bit-flipped",
        "wrong",
        "unchanged, read with a wrong key".into(),
        b.clone(),
    ));
    out.push(mk(
        "no_key",
        "bit-flipped",
        "none",
        "unchanged, read without a key".into(),
        b.clone(),
    ));

    let frag = first_fragment(testdata, array)?;
    let src = format!("{frag}/a0.tdb");
    let file = fs::read(testdata.join(&src))?;
    // The file holds two tiles of one chunk each: keep the first.
    let first_len = 8 + 12 + get_u32(&file, 16) as usize + get_u32(&file, 12) as usize;
    let b = file[..first_len].to_vec();
    let framed = FramedTile::parse(b.as_slice())?;
    let extra = json!({
        "array": array, "attribute": 0, "tile_size": framed.orig_len(), "key": "right"
    });
    let tag = 8 + 12 + 8 + 8 + 12;
    let mk = |name: &str, variant, corruption: String, bytes: Vec<u8>| Bad {
        file: format!("encrypted/data_tile_{name}.tdb"),
        kind: "encrypted_data_tile",
        variant,
        source: src.clone(),
        corruption,
        bytes,
        extra: extra.clone(),
    };
    out.push(mk(
        "bitflip_tag",
        "bit-flipped",
        format!("bit 0x80 of byte {tag} flipped (the tag of the first encrypted part)"),
        flipped(&b, tag, 0x80),
    ));
    out.push(mk(
        "truncated",
        "truncated",
        format!("cut to {} bytes (inside the ciphertext)", b.len() - 3),
        b[..b.len() - 3].to_vec(),
    ));
    Ok(out)
}
