//! Fragments of an open array: their footers, loaded when the array opens, and the rest of
//! their metadata, loaded on demand and kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use rayon::prelude::*;
use tessera_fragment::{
    ConsolidatedFragmentMeta, Footer, FragmentName, LazyPart, footer_length_range, footer_range,
    parse_footer_length,
};
use tessera_rtree::RTree;
use tessera_schema::ArraySchema;
use tessera_storage::Storage;

use crate::{Error, Result};
use tessera_fragment::dirs;

pub use tessera_fragment::FRAGMENT_METADATA_FILE;

/// How many bytes at the end of a metadata file to read at once, hoping to get the whole
/// footer in one request.
const FOOTER_PROBE: u64 = 16 * 1024;

/// A fragment visible in the open array, with its footer and the schema it was written with.
#[derive(Debug)]
pub struct Fragment {
    name: FragmentName,
    schema: Arc<ArraySchema>,
    footer: Footer,
    /// Size of `__fragment_metadata.tdb` and where its footer starts.
    file_size: u64,
    footer_offset: u64,
    parts: Mutex<HashMap<LazyPart, Arc<Vec<u8>>>>,
    /// The R-tree, parsed the first time it is asked for.
    rtree: OnceLock<Arc<RTree>>,
}

impl Fragment {
    /// The fragment's name (its folder under `__fragments/`).
    pub fn name(&self) -> &FragmentName {
        &self.name
    }

    /// The folder of the fragment, relative to the array (see `fragment_dir`).
    pub fn dir(&self) -> String {
        fragment_dir(&self.name)
    }

    /// The schema the fragment was written with (named in its footer).
    pub fn schema(&self) -> &Arc<ArraySchema> {
        &self.schema
    }

    /// The footer: non-empty domain, tile counts, file sizes, where the rest lives.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// Number of cells, counted as libtiledb does (whole tiles for dense fragments).
    ///
    /// # Errors
    /// When the footer is inconsistent with the schema.
    pub fn cell_num(&self) -> Result<u64> {
        self.footer.cell_num(&self.schema).map_err(|source| self.error(source))
    }

    /// Number of data tiles.
    ///
    /// # Errors
    /// When the footer is inconsistent with the schema.
    pub fn tile_num(&self) -> Result<u64> {
        self.footer.tile_num(&self.schema).map_err(|source| self.error(source))
    }

    /// Byte size of the fragment metadata file.
    pub fn metadata_file_size(&self) -> u64 {
        self.file_size
    }

    fn metadata_path(&self) -> String {
        format!("{}/{FRAGMENT_METADATA_FILE}", self.dir())
    }

    fn error(&self, source: tessera_fragment::Error) -> Error {
        Error::Fragment { file: self.metadata_path(), source: Box::new(source) }
    }

    /// The decoded payload of a lazily loaded part, read with one ranged read the first time
    /// and kept.
    ///
    /// # Errors
    /// Storage errors, or a part that is absent or corrupt (naming the file and offset).
    pub fn part(&self, storage: &dyn Storage, part: LazyPart) -> Result<Arc<Vec<u8>>> {
        if let Some(p) =
            self.parts.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&part)
        {
            return Ok(p.clone());
        }
        let range = self.footer.part_range(part, self.footer_offset).map_err(|s| self.error(s))?;
        let bytes = storage
            .read_range(&self.metadata_path(), range.clone())
            .map_err(|e| removed_or(e, &self.metadata_path()))?;
        let payload = Arc::new(
            part.decode_tile_with_key(&bytes, range.start, storage.encryption_key())
                .map_err(|s| self.error(s))?,
        );
        self.parts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(part, payload.clone());
        Ok(payload)
    }

    /// The R-tree over the fragment's tile MBRs, loaded and parsed the first time and kept
    /// (queries of small boxes ask for it every time).
    ///
    /// # Errors
    /// As [`Self::part`].
    pub fn rtree(&self, storage: &dyn Storage) -> Result<Arc<RTree>> {
        if let Some(tree) = self.rtree.get() {
            return Ok(tree.clone());
        }
        let payload = self.part(storage, LazyPart::RTree)?;
        // Versions 3-4 start the R-tree with a header of their own.
        let payload = tessera_fragment::previous::v3_v9::rtree_payload(
            self.footer.version,
            payload.to_vec(),
            self.schema.dimensions.len(),
        )
        .map_err(|s| self.error(s))?;
        let tree = RTree::parse(&payload, &tessera_fragment::dim_types(&self.schema)).map_err(
            |source| {
                self.error(tessera_fragment::Error::RTree {
                    structure: "R-tree",
                    offset: 0,
                    source,
                })
            },
        )?;
        Ok(self.rtree.get_or_init(|| Arc::new(tree)).clone())
    }

    /// A per-field list of `u64`s (tile offsets, var offsets, var sizes, validity offsets,
    /// null counts) of field `idx`.
    ///
    /// # Errors
    /// As [`Self::part`], and when `part` is not such a list.
    pub fn u64s(&self, storage: &dyn Storage, part: LazyPart) -> Result<Vec<u64>> {
        let payload = self.part(storage, part)?;
        tessera_fragment::parse_u64s(part, &payload).map_err(|s| self.error(s))
    }
}

/// The folder of fragment `name`, relative to the array: `__fragments/<name>` from format
/// version 12, the array folder itself before (libtiledb keeps old fragments where they were
/// written).
pub(crate) fn fragment_dir(name: &FragmentName) -> String {
    if name.format_version() < tessera_fragment::previous::FRAGMENTS_DIR_MIN_VERSION {
        name.as_str().to_owned()
    } else {
        format!("{}/{}", dirs::FRAGMENTS, name.as_str())
    }
}

/// Loads a fragment of format version 1 or 2, whose metadata is one generic tile without a
/// footer (`tessera_fragment::previous::v1_v2`): the footer is built from it and every part
/// is decoded at once and kept.
fn load_v1_v2(
    storage: &dyn Storage,
    name: &FragmentName,
    schema_for: &(dyn Fn(&str) -> Result<Arc<ArraySchema>> + Sync),
) -> Result<Fragment> {
    use tessera_fragment::previous::v1_v2::{SCHEMA_NAME, V1V2Metadata};
    let dir = fragment_dir(name);
    let path = format!("{dir}/{FRAGMENT_METADATA_FILE}");
    let err = |source| Error::Fragment { file: path.clone(), source: Box::new(source) };
    let file = storage.read(&path)?;
    let payload = tessera_tile::read_generic_tile_with_key(&file, storage.encryption_key())
        .map_err(|source| {
            err(tessera_fragment::Error::Tile {
                structure: "fragment metadata (format 1-2)",
                offset: 0,
                source,
            })
        })?;
    let schema = schema_for(SCHEMA_NAME)?;
    let meta = V1V2Metadata::parse(&payload, &schema).map_err(err)?;
    let coords = format!("{dir}/{}.tdb", tessera_fragment::previous::files::COORDS_STEM);
    let sparse = storage.exists(&coords)?;
    let footer = meta.footer(&schema, sparse);
    let parts = meta
        .parts(&schema)
        .map_err(err)?
        .into_iter()
        .map(|(part, payload)| (part, Arc::new(payload)))
        .collect();
    let file_size = file.len() as u64;
    Ok(Fragment {
        name: name.clone(),
        schema,
        footer,
        file_size,
        footer_offset: file_size,
        parts: Mutex::new(parts),
        rtree: OnceLock::new(),
    })
}

/// Loads a fragment of format versions 3 to 9, whose footer has no schema name
/// (`tessera_fragment::previous::v3_v9`): its size follows from the schema, or from the
/// trailing length when a dimension is var-sized. Footers in consolidated fragment metadata
/// are not used for these versions: the fragment's own file holds the same footer.
fn load_v3_v9(
    storage: &dyn Storage,
    name: &FragmentName,
    schema_for: &(dyn Fn(&str) -> Result<Arc<ArraySchema>> + Sync),
) -> Result<Fragment> {
    use tessera_fragment::previous::v3_v9;
    let path = format!("{}/{FRAGMENT_METADATA_FILE}", fragment_dir(name));
    let err = |source| Error::Fragment { file: path.clone(), source: Box::new(source) };
    let schema = schema_for(v3_v9::SCHEMA_NAME)?;
    let (tail, file_size) =
        storage.read_tail(&path, FOOTER_PROBE).map_err(|e| removed_or(e, &path))?;
    let probe_start = file_size.saturating_sub(tail.len() as u64);
    let footer_range = match v3_v9::fixed_footer_size(name.format_version(), &schema) {
        Some(n) => file_size.checked_sub(n).map(|start| start..file_size).ok_or_else(|| {
            Error::Corrupt {
                file: path.clone(),
                reason: format!(
                    "{file_size} bytes, shorter than the {n}-byte footer of its format version"
                ),
            }
        })?,
        None => {
            let len_range = footer_length_range(file_size).map_err(err)?;
            let len_at = len_range.start.saturating_sub(probe_start) as usize;
            let len_bytes = tail.get(len_at..).ok_or_else(|| Error::Corrupt {
                file: path.clone(),
                reason: format!("the storage gave {} bytes for its tail", tail.len()),
            })?;
            let footer_len = parse_footer_length(len_bytes).map_err(err)?;
            footer_range(file_size, footer_len).map_err(err)?
        }
    };
    let footer_bytes = if footer_range.start >= probe_start {
        tail.slice(
            (footer_range.start - probe_start) as usize..(footer_range.end - probe_start) as usize,
        )
    } else {
        storage.read_range(&path, footer_range.clone())?
    };
    let footer = v3_v9::parse(&footer_bytes, &schema).map_err(err)?;
    Ok(Fragment {
        name: name.clone(),
        schema,
        footer,
        file_size,
        footer_offset: footer_range.start,
        parts: Mutex::new(HashMap::new()),
        rtree: OnceLock::new(),
    })
}

/// A storage error reading `file`, a file of a fragment the open array shows: "not found"
/// means the fragment was removed (vacuumed) after the array was opened.
pub(crate) fn removed_or(e: tessera_storage::Error, file: &str) -> Error {
    if e.is_not_found() {
        Error::FragmentRemoved { file: file.to_owned(), source: e }
    } else {
        Error::Storage(e)
    }
}

/// Loads the footers of `names` in parallel. Footers found in consolidated fragment metadata
/// (`__fragment_meta/*.meta`, newest first) are taken from there; the others are read from
/// the end of each fragment's metadata file. `schema_for` gives the schema a footer names.
///
/// # Errors
/// Storage errors and corrupt footers, naming the file.
pub(crate) fn load_fragments(
    storage: &dyn Storage,
    names: &[FragmentName],
    schema_for: &(dyn Fn(&str) -> Result<Arc<ArraySchema>> + Sync),
) -> Result<Vec<Fragment>> {
    let consolidated = load_consolidated_footers(storage, names)?;
    names
        .par_iter()
        .map(|name| {
            if name.format_version() <= 2 {
                return load_v1_v2(storage, name, schema_for);
            }
            if name.format_version() < tessera_fragment::previous::FOOTER_MIN_VERSION {
                return load_v3_v9(storage, name, schema_for);
            }
            let dir = fragment_dir(name);
            let path = format!("{dir}/{FRAGMENT_METADATA_FILE}");
            let err = |source| Error::Fragment { file: path.clone(), source: Box::new(source) };
            // Consolidated metadata holds the footer: only the file's size is needed. Else one
            // read of the file's tail (with its size) usually holds the whole footer.
            let (consolidated_footer, tail, file_size) = match consolidated.get(name.as_str()) {
                Some(b) => (Some(b.clone()), Bytes::new(), storage.size(&path)?),
                None => {
                    let (tail, size) = storage.read_tail(&path, FOOTER_PROBE)?;
                    (None, tail, size)
                }
            };
            let len_range = footer_length_range(file_size).map_err(err)?;
            let footer_bytes: Bytes = match consolidated_footer {
                Some(b) => b,
                None => {
                    let probe_start = file_size.saturating_sub(tail.len() as u64);
                    let len_at = len_range.start.saturating_sub(probe_start) as usize;
                    let len_bytes = tail.get(len_at..).ok_or_else(|| Error::Corrupt {
                        file: path.clone(),
                        reason: format!("the storage gave {} bytes for its tail", tail.len()),
                    })?;
                    let footer_len = parse_footer_length(len_bytes).map_err(err)?;
                    let range = footer_range(file_size, footer_len).map_err(err)?;
                    if range.start >= probe_start {
                        tail.slice((range.start - probe_start) as usize..len_at)
                    } else {
                        storage.read_range(&path, range)?
                    }
                }
            };
            let (_, schema_name) = Footer::peek_schema_name(&footer_bytes).map_err(err)?;
            let schema = schema_for(&schema_name)?;
            let footer = Footer::parse(&footer_bytes, &schema).map_err(err)?;
            // A footer from consolidated fragment metadata must still fit in this file.
            let footer_offset =
                len_range.start.checked_sub(footer_bytes.len() as u64).ok_or_else(|| {
                    Error::Corrupt {
                        file: path.clone(),
                        reason: format!(
                            "its footer ({} bytes) is larger than the file ({file_size} bytes)",
                            footer_bytes.len()
                        ),
                    }
                })?;
            Ok(Fragment {
                name: name.clone(),
                schema,
                footer,
                file_size,
                footer_offset,
                parts: Mutex::new(HashMap::new()),
                rtree: OnceLock::new(),
            })
        })
        .collect()
}

/// Footers of `names` stored in consolidated fragment metadata files (in `__fragment_meta/`,
/// and in the array folder when an old-layout fragment is among `names`), by fragment name.
fn load_consolidated_footers(
    storage: &dyn Storage,
    names: &[FragmentName],
) -> Result<HashMap<String, Bytes>> {
    let mut out = HashMap::new();
    // `__fragment_meta/` from format version 12; the array folder itself before.
    let old = names
        .iter()
        .any(|n| n.format_version() < tessera_fragment::previous::FRAGMENTS_DIR_MIN_VERSION);
    let mut metas: Vec<(FragmentName, String)> = Vec::new();
    for dir in [dirs::FRAGMENT_META, ""] {
        if dir.is_empty() && !old {
            continue;
        }
        let entries = match storage.list(dir) {
            Ok(e) => e,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        metas.extend(
            entries
                .iter()
                .filter(|e| !e.is_dir && e.name.ends_with(".meta"))
                .filter_map(|e| FragmentName::parse(&e.name).ok())
                .map(|m| {
                    let file = m.with_extension("meta");
                    let path = if dir.is_empty() { file } else { format!("{dir}/{file}") };
                    (m, path)
                }),
        );
    }
    if metas.is_empty() {
        return Ok(out);
    }
    let wanted: std::collections::HashSet<&str> = names.iter().map(FragmentName::as_str).collect();
    // Newest first, so a newer consolidation wins.
    metas.sort_by(|(a, _), (b, _)| (b.t2(), b.as_str()).cmp(&(a.t2(), a.as_str())));
    for (_, path) in metas {
        let meta = ConsolidatedFragmentMeta::parse_file_with_key(
            &storage.read(&path)?,
            storage.encryption_key(),
        )
        .map_err(|source| Error::Fragment { file: path.clone(), source: Box::new(source) })?;
        for f in meta.entries {
            if wanted.contains(f.name.as_str()) {
                out.entry(f.name).or_insert_with(|| Bytes::from(f.footer));
            }
        }
    }
    Ok(out)
}
