//! Where the tiles of a field lie: a [`FieldReader`] per field and fragment (its files, tile
//! offsets, sizes and codecs, from the fragment's metadata) and the cells of each tile.

use std::ops::Range;

use tessera_fragment::{Field, LazyPart};
use tessera_schema::ArraySchema;
use tessera_storage::Storage;
use tessera_tile::{TileCodec, VarTileCodec};
use tessera_types::Datatype;

use crate::fragment::Fragment;
use crate::{Error, Result};

/// A field a query reads, named in the array's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum QField {
    /// Dimension `d` (sparse fragments only).
    Dim(usize),
    /// Attribute `a` of the array's schema (found by name in each fragment's schema).
    Attr(usize),
    /// Per-cell timestamps (`t.tdb`).
    Timestamps,
    /// Per-cell delete timestamps (`dt.tdb`).
    DeleteTimestamps,
    /// Per-cell delete condition indexes (`dci.tdb`).
    DeleteConditionIndex,
}

/// How the values of a field are decoded.
#[derive(Debug)]
pub(super) enum Codec {
    Fixed { codec: TileCodec, cell_size: u64 },
    Var(VarTileCodec),
}

/// Everything needed to locate and decode the tiles of one field of one fragment.
#[derive(Debug)]
pub(crate) struct FieldReader {
    pub(super) data_file: String,
    pub(super) var_file: String,
    pub(super) validity_file: String,
    pub(super) codec: Codec,
    pub(super) validity: Option<TileCodec>,
    pub(super) offsets: Vec<u64>,
    pub(super) var_offsets: Vec<u64>,
    pub(super) var_sizes: Vec<u64>,
    pub(super) validity_offsets: Vec<u64>,
    pub(super) file_size: u64,
    pub(super) var_file_size: u64,
    pub(super) validity_file_size: u64,
    /// A dimension of a format 1–4 fragment, stored with the others in `__coords.tdb`:
    /// (dimension, dimension count, stored split); its values are taken out after decoding.
    pub(super) zipped: Option<(usize, usize, bool)>,
}

/// Cells per tile of a fragment (`FragmentMetadata::cell_num(tile)`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TileCells {
    dense_per_tile: Option<u64>,
    capacity: u64,
    last: u64,
    /// Number of tiles.
    pub(crate) tile_num: u64,
}

impl TileCells {
    /// The cell counts of `fragment`'s tiles.
    ///
    /// # Errors
    /// When the footer is inconsistent with the fragment's schema.
    pub(crate) fn of(fragment: &Fragment) -> Result<Self> {
        let schema = fragment.schema();
        let footer = fragment.footer();
        let err = |source| Error::Fragment {
            file: format!("{}/{}", fragment.dir(), crate::FRAGMENT_METADATA_FILE),
            source: Box::new(source),
        };
        let tile_num = footer.tile_num(schema).map_err(err)?;
        let dense_per_tile = if footer.dense {
            Some(tessera_fragment::Footer::dense_cell_num_per_tile(schema).map_err(err)?)
        } else {
            None
        };
        Ok(TileCells {
            dense_per_tile,
            capacity: schema.capacity,
            last: footer.last_tile_cell_num,
            tile_num,
        })
    }

    /// Cells in tile `t`.
    pub(crate) fn get(&self, t: u64) -> u64 {
        match self.dense_per_tile {
            Some(n) => n,
            None if t + 1 == self.tile_num => self.last,
            None => self.capacity,
        }
    }
}

impl FieldReader {
    /// The reader of `field` in `fragment`, loading its tile offsets; `None` when the fragment
    /// does not have the field (an attribute added by schema evolution after it was written,
    /// timestamps it does not store).
    ///
    /// # Errors
    /// Storage errors and corrupt metadata; [`Error::Unsupported`] when the fragment stores
    /// an attribute of the same name with another type.
    pub(crate) fn new(
        storage: &dyn Storage,
        fragment: &Fragment,
        array_schema: &ArraySchema,
        field: QField,
    ) -> Result<Option<Self>> {
        let schema = fragment.schema();
        let footer = fragment.footer();
        let version = footer.version;
        // A pipeline that cannot run on the field (a filter Tessera does not implement).
        let tile_err = |file: &str| {
            let file = file.to_owned();
            move |e: tessera_tile::Error| Error::Unsupported(format!("{file}: {e}"))
        };
        let (ffield, datatype, cell_val_num, pipeline, nullable) = match field {
            QField::Dim(d) => {
                let dim = &schema.dimensions[d];
                (
                    Field::Dimension(d),
                    dim.datatype,
                    dim.cell_val_num,
                    // the zipped coordinates of versions 1-4 take the coords filters
                    if tessera_fragment::previous::zipped_coords(version) {
                        &schema.coords_filters
                    } else {
                        schema.dimension_filters(dim)
                    },
                    false,
                )
            }
            QField::Attr(a) => {
                let want = &array_schema.attributes[a];
                let Some(i) = schema.attributes.iter().position(|x| x.name == want.name) else {
                    return Ok(None);
                };
                let attr = &schema.attributes[i];
                if attr.datatype != want.datatype || attr.cell_val_num != want.cell_val_num {
                    return Err(Error::Unsupported(format!(
                        "fragment {} stores attribute {:?} as {} x {}, the schema says {} x {}",
                        fragment.name().as_str(),
                        want.name,
                        attr.datatype,
                        attr.cell_val_num,
                        want.datatype,
                        want.cell_val_num
                    )));
                }
                (
                    Field::Attribute(i),
                    attr.datatype,
                    attr.cell_val_num,
                    &attr.filters,
                    attr.nullable,
                )
            }
            QField::Timestamps if footer.has_timestamps => {
                (Field::Timestamps, Datatype::UInt64, 1, &schema.coords_filters, false)
            }
            QField::DeleteTimestamps if footer.has_delete_meta => {
                (Field::DeleteTimestamps, Datatype::UInt64, 1, &schema.coords_filters, false)
            }
            QField::DeleteConditionIndex if footer.has_delete_meta => {
                (Field::DeleteConditionIndex, Datatype::UInt64, 1, &schema.coords_filters, false)
            }
            QField::Timestamps | QField::DeleteTimestamps | QField::DeleteConditionIndex => {
                return Ok(None);
            }
        };
        let layout = footer.layout(schema);
        let idx = layout.idx(ffield).ok_or_else(|| {
            Error::Unsupported(format!("fragment {} has no {ffield:?}", fragment.name().as_str()))
        })?;
        let dir = fragment.dir();
        let stem = |name: Option<String>| format!("{dir}/{}", name.unwrap_or_default());
        // File names and zipped coordinates of older versions: tessera_fragment::previous.
        use tessera_fragment::previous::{coords_stored_split, files, zipped_coords};
        let data_file = stem(files::data_file(ffield, version, schema));
        let var_file = stem(files::var_file(ffield, version, schema));
        let validity_file = stem(files::validity_file(ffield, version, schema));
        let zipped = match ffield {
            Field::Dimension(d) if zipped_coords(version) => {
                Some((d, schema.dimensions.len(), coords_stored_split(version, schema)))
            }
            _ => None,
        };
        let cell_val_num = zipped.map_or(cell_val_num, |(_, n, _)| n as u32);
        let var = cell_val_num == tessera_types::CELL_VAL_NUM_VAR;
        let codec = if var {
            Codec::Var(
                VarTileCodec::new(pipeline, &schema.offsets_filters, datatype, version)
                    .map_err(tile_err(&var_file))?
                    .encrypted(storage.encryption_key()),
            )
        } else {
            Codec::Fixed {
                codec: TileCodec::fixed_data(pipeline, datatype, cell_val_num, version)
                    .map_err(tile_err(&data_file))?
                    .encrypted(storage.encryption_key()),
                cell_size: datatype.size() as u64 * u64::from(cell_val_num),
            }
        };
        let validity = if nullable {
            Some(
                TileCodec::validity(&schema.validity_filters, version)
                    .map_err(tile_err(&validity_file))?
                    .encrypted(storage.encryption_key()),
            )
        } else {
            None
        };
        let list = |part| fragment.u64s(storage, part);
        let offsets = list(LazyPart::TileOffsets(idx))?;
        let (var_offsets, var_sizes) = if var {
            (list(LazyPart::TileVarOffsets(idx))?, list(LazyPart::TileVarSizes(idx))?)
        } else {
            (Vec::new(), Vec::new())
        };
        let validity_offsets =
            if nullable { list(LazyPart::TileValidityOffsets(idx))? } else { Vec::new() };
        let size = |v: &Vec<u64>| v.get(idx).copied().unwrap_or(0);
        Ok(Some(FieldReader {
            data_file,
            var_file,
            validity_file,
            codec,
            validity,
            offsets,
            var_offsets,
            var_sizes,
            validity_offsets,
            file_size: size(&footer.file_sizes),
            var_file_size: size(&footer.file_var_sizes),
            validity_file_size: size(&footer.file_validity_sizes),
            zipped,
        }))
    }

    /// The file of the field's fixed-size values (or offsets), for errors.
    pub(crate) fn data_file(&self) -> &str {
        &self.data_file
    }

    /// Whether the field is var-sized.
    pub(crate) fn is_var(&self) -> bool {
        matches!(self.codec, Codec::Var(_))
    }

    /// Bytes per cell of a fixed-size field, `None` for a var-sized one.
    pub(crate) fn fixed_cell_size(&self) -> Option<u64> {
        match &self.codec {
            Codec::Fixed { cell_size, .. } => Some(*cell_size),
            Codec::Var(_) => None,
        }
    }

    /// The unfiltered bytes of tile `t` holding `cells` cells: values, offsets and validity.
    pub(crate) fn decoded_size(&self, t: u64, cells: u64) -> u64 {
        let values = match &self.codec {
            Codec::Fixed { cell_size, .. } => cells * cell_size,
            Codec::Var(_) => cells * 8 + self.var_sizes.get(t as usize).copied().unwrap_or(0),
        };
        values + if self.validity.is_some() { cells } else { 0 }
    }

    /// Total var bytes over all tiles (for size estimates), `None` for fixed-size fields.
    pub(crate) fn total_var_size(&self) -> Option<u64> {
        self.is_var().then(|| self.var_sizes.iter().sum())
    }

    pub(super) fn range_in(
        &self,
        file: &str,
        offsets: &[u64],
        file_size: u64,
        t: u64,
    ) -> Result<Range<u64>> {
        let corrupt = |reason: String| Error::Corrupt { file: file.to_owned(), reason };
        let i = t as usize;
        let start = *offsets.get(i).ok_or_else(|| {
            corrupt(format!("tile {t} has no offset ({} tiles listed)", offsets.len()))
        })?;
        let end = offsets.get(i + 1).copied().unwrap_or(file_size);
        if start > end || end > file_size {
            return Err(corrupt(format!(
                "tile {t} spans bytes {start}..{end} of a {file_size}-byte file"
            )));
        }
        Ok(start..end)
    }
}
