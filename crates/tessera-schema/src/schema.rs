//! The array schema and its binary form (the payload of a `__schema/` file).

use nom::Parser;
use tessera_filters::{Filter, FilterPipeline};
use tessera_types::{
    ArrayType, CURRENT_DOMAIN_MIN_VERSION, DEFAULT_CAPACITY, ENUMERATIONS_MIN_VERSION,
    FORMAT_VERSION, Layout,
};

use crate::dimension::parse_domain;
use crate::parse::{PResult, boolf, count, enum_u8, fail, string_u32, to_error, u32f, u64f};
use crate::{
    Attribute, CurrentDomain, Dimension, DimensionLabel, EnumerationRef, Error, Result,
    current_domain,
};

/// Oldest schema version Tessera reads (versions 1 to 4 go through `previous::v1_v4`).
pub const MIN_READ_VERSION: u32 = 1;

/// An array schema: everything about an array except its data.
#[derive(Debug, Clone, PartialEq)]
pub struct ArraySchema {
    /// Format version the schema was written with (always [`FORMAT_VERSION`] when written).
    pub version: u32,
    /// Whether a sparse array may hold several cells with the same coordinates.
    pub allows_duplicates: bool,
    /// Dense or sparse.
    pub array_type: ArrayType,
    /// Order of space tiles (row- or col-major).
    pub tile_order: Layout,
    /// Order of cells within a tile (row-, col-major or Hilbert).
    pub cell_order: Layout,
    /// Cells per data tile of a sparse array.
    pub capacity: u64,
    /// Default filters of dimensions without their own.
    pub coords_filters: FilterPipeline,
    /// Filters of var-sized offsets tiles.
    pub offsets_filters: FilterPipeline,
    /// Filters of validity tiles.
    pub validity_filters: FilterPipeline,
    /// The dimensions, in order.
    pub dimensions: Vec<Dimension>,
    /// The attributes, in order (data file `a<i>` belongs to the i-th).
    pub attributes: Vec<Attribute>,
    /// Dimension labels.
    pub dimension_labels: Vec<DimensionLabel>,
    /// Enumerations (name and file), in stored order.
    pub enumerations: Vec<EnumerationRef>,
    /// The current domain, when set.
    pub current_domain: Option<CurrentDomain>,
}

impl ArraySchema {
    /// Starts a schema with TileDB's defaults (row-major orders, capacity 10000, coords and
    /// offsets filtered with ZSTD, validity with RLE).
    pub fn builder(array_type: ArrayType) -> SchemaBuilder {
        SchemaBuilder {
            schema: ArraySchema {
                version: FORMAT_VERSION,
                allows_duplicates: false,
                array_type,
                tile_order: Layout::RowMajor,
                cell_order: Layout::RowMajor,
                capacity: DEFAULT_CAPACITY,
                coords_filters: FilterPipeline::new(vec![Filter::Zstd { level: -1 }]),
                offsets_filters: FilterPipeline::new(vec![Filter::Zstd { level: -1 }]),
                validity_filters: FilterPipeline::new(vec![Filter::Rle { level: -1 }]),
                dimensions: Vec::new(),
                attributes: Vec::new(),
                dimension_labels: Vec::new(),
                enumerations: Vec::new(),
                current_domain: None,
            },
        }
    }

    /// Whether the array is dense.
    pub fn is_dense(&self) -> bool {
        self.array_type == ArrayType::Dense
    }

    /// The attribute named `name`.
    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }

    /// The dimension named `name`.
    pub fn dimension(&self, name: &str) -> Option<&Dimension> {
        self.dimensions.iter().find(|d| d.name == name)
    }

    /// The filters that apply to dimension `d`'s coordinate tiles (its own, or the schema's
    /// coords filters when it has none). Schemas of format versions 1 to 4 store no filters
    /// per dimension, and libtiledb 2.30 writes (and reads) the per-dimension files of new
    /// fragments of such arrays unfiltered: their coords filters only apply to the zipped
    /// `__coords.tdb` of the old fragments.
    pub fn dimension_filters<'a>(&'a self, d: &'a Dimension) -> &'a FilterPipeline {
        if d.filters.is_empty() && self.version >= crate::previous::DIMENSION_FILTERS_MIN_VERSION {
            &self.coords_filters
        } else {
            &d.filters
        }
    }

    /// Parses a schema payload (the decompressed content of a `__schema/` file).
    ///
    /// # Errors
    /// [`Error::UnsupportedVersion`] for versions Tessera cannot read, [`Error::Malformed`]
    /// naming the field and offset for anything else that is wrong, including trailing bytes.
    pub fn parse(payload: &[u8]) -> Result<ArraySchema> {
        if payload.len() >= 4 {
            let version = u32::from_le_bytes([payload[0], payload[1], payload[2], payload[3]]);
            if !(MIN_READ_VERSION..=FORMAT_VERSION).contains(&version) {
                return Err(Error::UnsupportedVersion {
                    structure: "array schema",
                    version,
                    supported: "1 to 22",
                });
            }
        }
        let (rest, schema) =
            parse_schema.parse(payload).map_err(|e| to_error("array schema", payload, e))?;
        if !rest.is_empty() {
            return Err(Error::Malformed {
                structure: "array schema",
                field: "end",
                offset: (payload.len() - rest.len()) as u64,
                reason: format!("{} unexpected trailing bytes", rest.len()),
            });
        }
        Ok(schema)
    }

    /// Parses a whole schema file (a generic tile).
    ///
    /// # Errors
    /// As [`Self::parse`], plus generic-tile errors.
    pub fn parse_file(file: &[u8]) -> Result<ArraySchema> {
        Self::parse_file_with_key(file, None)
    }

    /// [`Self::parse_file`] of an array that may be encrypted with `key` (see
    /// [`tessera_tile::read_generic_tile_with_key`]).
    ///
    /// # Errors
    /// As [`Self::parse_file`], and when the file's encryption and `key` disagree or the key
    /// is wrong.
    pub fn parse_file_with_key(
        file: &[u8],
        key: Option<&tessera_types::EncryptionKey>,
    ) -> Result<ArraySchema> {
        let payload = tessera_tile::read_generic_tile_with_key(file, key)?;
        Self::parse(&payload)
    }

    /// The schema payload as libtiledb 2.30 writes it (always format version 22).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.push(u8::from(self.allows_duplicates));
        out.push(self.array_type.id());
        out.push(self.tile_order.id());
        out.push(self.cell_order.id());
        out.extend_from_slice(&self.capacity.to_le_bytes());
        self.coords_filters.write(&mut out);
        self.offsets_filters.write(&mut out);
        self.validity_filters.write(&mut out);
        out.extend_from_slice(&(self.dimensions.len() as u32).to_le_bytes());
        for d in &self.dimensions {
            d.write(&mut out);
        }
        out.extend_from_slice(&(self.attributes.len() as u32).to_le_bytes());
        for a in &self.attributes {
            a.write(&mut out);
        }
        out.extend_from_slice(&(self.dimension_labels.len() as u32).to_le_bytes());
        for l in &self.dimension_labels {
            l.write(&mut out);
        }
        out.extend_from_slice(&(self.enumerations.len() as u32).to_le_bytes());
        for e in &self.enumerations {
            for s in [&e.name, &e.path] {
                out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
        }
        current_domain::write(self.current_domain.as_ref(), &self.dimensions, &mut out);
        out
    }

    /// The whole schema file: the payload in a generic tile.
    ///
    /// # Errors
    /// When compression fails.
    pub fn to_file(&self) -> Result<Vec<u8>> {
        self.to_file_with_key(None)
    }

    /// [`Self::to_file`], encrypted with `key` when there is one.
    ///
    /// # Errors
    /// As [`Self::to_file`].
    pub fn to_file_with_key(&self, key: Option<&tessera_types::EncryptionKey>) -> Result<Vec<u8>> {
        Ok(tessera_tile::write_generic_tile_with_key(&self.to_bytes(), FORMAT_VERSION, key)?)
    }

    /// Checks what libtiledb checks before it accepts a schema.
    ///
    /// # Errors
    /// [`Error::Invalid`] describing the first problem found.
    pub fn validate(&self) -> Result<()> {
        crate::validate::validate(self)
    }
}

fn parse_schema(i: &[u8]) -> PResult<'_, ArraySchema> {
    let (i, version) = u32f("version")(i)?;
    let (i, allows_duplicates) =
        if version >= 5 { boolf("allows duplicates")(i)? } else { (i, false) };
    let (i, array_type) = enum_u8("array type", ArrayType::from_id)(i)?;
    let (i, tile_order) = enum_u8("tile order", Layout::from_id)(i)?;
    let (i, cell_order) = enum_u8("cell order", Layout::from_id)(i)?;
    let (i, capacity) = u64f("capacity")(i)?;
    let (i, coords_filters) = crate::parse::pipeline("coords filters", version)(i)?;
    let (i, offsets_filters) = crate::parse::pipeline("offsets filters", version)(i)?;
    let (i, validity_filters) = if version >= 7 {
        crate::parse::pipeline("validity filters", version)(i)?
    } else {
        (i, FilterPipeline::default())
    };
    let (i, dimensions) = if version < 5 {
        crate::previous::v1_v4::parse_domain(i)?
    } else {
        parse_domain(i, version)?
    };
    let (mut i, n_attrs) = count("attribute count", 13)(i)?;
    let mut attributes = Vec::with_capacity(n_attrs);
    for _ in 0..n_attrs {
        let (rest, a) = Attribute::parse(i, version)?;
        attributes.push(a);
        i = rest;
    }
    let mut dimension_labels = Vec::new();
    if version >= 18 {
        let (mut rest, n) = count("dimension label count", 31)(i)?;
        for _ in 0..n {
            let (r, l) = DimensionLabel::parse(rest)?;
            dimension_labels.push(l);
            rest = r;
        }
        i = rest;
    }
    let mut enumerations = Vec::new();
    if version >= ENUMERATIONS_MIN_VERSION {
        let (mut rest, n) = count("enumeration count", 8)(i)?;
        for _ in 0..n {
            let (r, name) = string_u32("enumeration name")(rest)?;
            let (r, path) = string_u32("enumeration path")(r)?;
            enumerations.push(EnumerationRef { name, path });
            rest = r;
        }
        i = rest;
    }
    let (i, current_domain) = if version >= CURRENT_DOMAIN_MIN_VERSION {
        current_domain::parse(i, &dimensions)?
    } else {
        (i, None)
    };
    if dimensions.is_empty() {
        return fail(i, "dimension count", "a schema needs at least one dimension");
    }
    Ok((
        i,
        ArraySchema {
            version,
            allows_duplicates,
            array_type,
            tile_order,
            cell_order,
            capacity,
            coords_filters,
            offsets_filters,
            validity_filters,
            dimensions,
            attributes,
            dimension_labels,
            enumerations,
            current_domain,
        },
    ))
}

/// Builds an [`ArraySchema`] step by step; [`SchemaBuilder::build`] fills in TileDB's
/// implicit values (tile extents) and validates.
#[derive(Debug, Clone)]
pub struct SchemaBuilder {
    schema: ArraySchema,
}

impl SchemaBuilder {
    /// Adds a dimension.
    #[must_use]
    pub fn dimension(mut self, d: Dimension) -> Self {
        self.schema.dimensions.push(d);
        self
    }

    /// Adds an attribute.
    #[must_use]
    pub fn attribute(mut self, a: Attribute) -> Self {
        self.schema.attributes.push(a);
        self
    }

    /// Sets the tile order.
    #[must_use]
    pub fn tile_order(mut self, l: Layout) -> Self {
        self.schema.tile_order = l;
        self
    }

    /// Sets the cell order.
    #[must_use]
    pub fn cell_order(mut self, l: Layout) -> Self {
        self.schema.cell_order = l;
        self
    }

    /// Sets the sparse tile capacity.
    #[must_use]
    pub fn capacity(mut self, c: u64) -> Self {
        self.schema.capacity = c;
        self
    }

    /// Allows duplicate coordinates (sparse only).
    #[must_use]
    pub fn allows_duplicates(mut self, yes: bool) -> Self {
        self.schema.allows_duplicates = yes;
        self
    }

    /// Sets the coords, offsets and validity filters.
    #[must_use]
    pub fn coords_filters(mut self, p: FilterPipeline) -> Self {
        self.schema.coords_filters = p;
        self
    }

    /// Sets the offsets filters.
    #[must_use]
    pub fn offsets_filters(mut self, p: FilterPipeline) -> Self {
        self.schema.offsets_filters = p;
        self
    }

    /// Sets the validity filters.
    #[must_use]
    pub fn validity_filters(mut self, p: FilterPipeline) -> Self {
        self.schema.validity_filters = p;
        self
    }

    /// Sets the current domain.
    #[must_use]
    pub fn current_domain(mut self, cd: Option<CurrentDomain>) -> Self {
        self.schema.current_domain = cd;
        self
    }

    /// Adds a dimension label.
    #[must_use]
    pub fn dimension_label(mut self, l: DimensionLabel) -> Self {
        self.schema.dimension_labels.push(l);
        self
    }

    /// Lists an enumeration (its values are stored separately).
    #[must_use]
    pub fn enumeration(mut self, e: EnumerationRef) -> Self {
        self.schema.enumerations.push(e);
        self
    }

    /// Fills in implicit tile extents as libtiledb does and validates.
    ///
    /// # Errors
    /// [`Error::Invalid`] for anything libtiledb would reject.
    pub fn build(mut self) -> Result<ArraySchema> {
        crate::validate::fill_default_extents(&mut self.schema)?;
        crate::validate::fill_webp_extents(&mut self.schema);
        self.schema.validate()?;
        Ok(self.schema)
    }
}
