//! One filter's options and their on-disk bytes.

use tessera_types::{
    ByteReader, Compressor, DEFAULT_BIT_WIDTH_MAX_WINDOW, DEFAULT_COMPRESSION_LEVEL,
    DEFAULT_POSITIVE_DELTA_MAX_WINDOW, DELTA_REINTERPRET_MIN_VERSION,
    DOUBLE_DELTA_REINTERPRET_MIN_VERSION, Datatype, FilterType, WebpInputFormat,
};

use crate::{FilterCodec, Result};

/// One stage of a filter pipeline with the options TileDB stores for it.
///
/// Levels are kept exactly as stored (TileDB records `-1` when the user gave none), so that a
/// parsed pipeline writes back to the same bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Filter {
    /// Passes data through (also what a compression filter with compressor NONE is written as).
    None,
    /// zlib stream; level -1 means zlib's default (6), at most 9.
    Gzip {
        /// Stored compression level.
        level: i32,
    },
    /// zstd frame; negative levels are zstd's fast levels.
    Zstd {
        /// Stored compression level.
        level: i32,
    },
    /// Raw LZ4 block; the level is stored but ignored.
    Lz4 {
        /// Stored (ignored) level.
        level: i32,
    },
    /// Run-length encoding; the level is stored but ignored.
    Rle {
        /// Stored (ignored) level.
        level: i32,
    },
    /// bzip2 stream; levels below 1 mean 1.
    Bzip2 {
        /// Stored block-size level.
        level: i32,
    },
    /// Double-delta encoding of integers.
    DoubleDelta {
        /// Stored (ignored) level.
        level: i32,
        /// Datatype the bytes are reinterpreted as, or `Any` for the field's own type.
        reinterpret: Datatype,
    },
    /// Bit-width reduction of integers in windows.
    BitWidthReduction {
        /// Window size in bytes.
        max_window: u32,
    },
    /// Bit transpose within blocks.
    Bitshuffle,
    /// Byte transpose.
    Byteshuffle,
    /// Deltas of non-decreasing integers in windows.
    PositiveDelta {
        /// Window size in bytes.
        max_window: u32,
    },
    /// AES-256-GCM (only ever appended internally to encrypted generic tiles).
    EncryptionAes256Gcm,
    /// MD5 digest of every part.
    ChecksumMd5,
    /// SHA-256 digest of every part.
    ChecksumSha256,
    /// Dictionary encoding of var-sized strings.
    Dictionary {
        /// Stored (ignored) level.
        level: i32,
    },
    /// Lossy float → scaled signed integer.
    ScaleFloat {
        /// Divisor applied after subtracting `offset`.
        factor: f64,
        /// Subtracted before scaling.
        offset: f64,
        /// Width of the stored integers: 1, 2, 4 or 8.
        byte_width: u64,
    },
    /// XOR of each value with the previous one.
    Xor,
    /// WebP image compression of `uint8` pixel tiles.
    Webp {
        /// Lossy quality 0..=100.
        quality: f32,
        /// Pixel layout.
        format: WebpInputFormat,
        /// Lossless mode.
        lossless: bool,
        /// Tile extent along the first (y) dimension.
        y_extent: u16,
        /// Tile extent along the second (x) dimension, in bytes.
        x_extent: u16,
    },
    /// Delta encoding of integers.
    Delta {
        /// Stored (ignored) level.
        level: i32,
        /// Datatype the bytes are reinterpreted as, or `Any` for the field's own type.
        reinterpret: Datatype,
    },
}

impl Filter {
    /// zstd at level `level`.
    pub const fn zstd(level: i32) -> Self {
        Filter::Zstd { level }
    }

    /// gzip (zlib) at level `level`.
    pub const fn gzip(level: i32) -> Self {
        Filter::Gzip { level }
    }

    /// The filter type ID written before the options.
    pub const fn filter_type(&self) -> FilterType {
        match self {
            Filter::None => FilterType::None,
            Filter::Gzip { .. } => FilterType::Gzip,
            Filter::Zstd { .. } => FilterType::Zstd,
            Filter::Lz4 { .. } => FilterType::Lz4,
            Filter::Rle { .. } => FilterType::Rle,
            Filter::Bzip2 { .. } => FilterType::Bzip2,
            Filter::DoubleDelta { .. } => FilterType::DoubleDelta,
            Filter::BitWidthReduction { .. } => FilterType::BitWidthReduction,
            Filter::Bitshuffle => FilterType::Bitshuffle,
            Filter::Byteshuffle => FilterType::Byteshuffle,
            Filter::PositiveDelta { .. } => FilterType::PositiveDelta,
            Filter::EncryptionAes256Gcm => FilterType::EncryptionAes256Gcm,
            Filter::ChecksumMd5 => FilterType::ChecksumMd5,
            Filter::ChecksumSha256 => FilterType::ChecksumSha256,
            Filter::Dictionary { .. } => FilterType::Dictionary,
            Filter::ScaleFloat { .. } => FilterType::ScaleFloat,
            Filter::Xor => FilterType::Xor,
            Filter::Webp { .. } => FilterType::Webp,
            Filter::Delta { .. } => FilterType::Delta,
        }
    }

    /// The filter with TileDB's default options for `filter_type`, as the Python and C APIs
    /// create it when no option is set.
    pub const fn with_defaults(filter_type: FilterType) -> Self {
        let level = DEFAULT_COMPRESSION_LEVEL;
        match filter_type {
            FilterType::None => Filter::None,
            FilterType::Gzip => Filter::Gzip { level },
            FilterType::Zstd => Filter::Zstd { level },
            FilterType::Lz4 => Filter::Lz4 { level },
            FilterType::Rle => Filter::Rle { level },
            FilterType::Bzip2 => Filter::Bzip2 { level },
            FilterType::DoubleDelta => Filter::DoubleDelta { level, reinterpret: Datatype::Any },
            FilterType::BitWidthReduction => {
                Filter::BitWidthReduction { max_window: DEFAULT_BIT_WIDTH_MAX_WINDOW }
            }
            FilterType::Bitshuffle => Filter::Bitshuffle,
            FilterType::Byteshuffle => Filter::Byteshuffle,
            FilterType::PositiveDelta => {
                Filter::PositiveDelta { max_window: DEFAULT_POSITIVE_DELTA_MAX_WINDOW }
            }
            FilterType::EncryptionAes256Gcm => Filter::EncryptionAes256Gcm,
            FilterType::ChecksumMd5 => Filter::ChecksumMd5,
            FilterType::ChecksumSha256 => Filter::ChecksumSha256,
            FilterType::Dictionary => Filter::Dictionary { level },
            FilterType::ScaleFloat => {
                Filter::ScaleFloat { factor: 1.0, offset: 0.0, byte_width: 8 }
            }
            FilterType::Xor => Filter::Xor,
            FilterType::Webp => Filter::Webp {
                quality: 100.0,
                format: WebpInputFormat::None,
                lossless: false,
                y_extent: 0,
                x_extent: 0,
            },
            FilterType::Delta => Filter::Delta { level, reinterpret: Datatype::Any },
        }
    }

    /// The `Compressor` enum byte of compression-like filters.
    pub const fn compressor(&self) -> Option<Compressor> {
        Some(match self {
            Filter::Gzip { .. } => Compressor::Gzip,
            Filter::Zstd { .. } => Compressor::Zstd,
            Filter::Lz4 { .. } => Compressor::Lz4,
            Filter::Rle { .. } => Compressor::Rle,
            Filter::Bzip2 { .. } => Compressor::Bzip2,
            Filter::DoubleDelta { .. } => Compressor::DoubleDelta,
            Filter::Dictionary { .. } => Compressor::Dictionary,
            Filter::Delta { .. } => Compressor::Delta,
            _ => return None,
        })
    }

    /// The datatype the next filter sees when this one is given `input`.
    pub fn output_datatype(&self, input: Datatype) -> Datatype {
        match *self {
            Filter::Delta { reinterpret, .. } | Filter::DoubleDelta { reinterpret, .. }
                if reinterpret != Datatype::Any =>
            {
                reinterpret
            }
            Filter::ScaleFloat { byte_width, .. } => {
                Datatype::signed_of_width(byte_width as usize).unwrap_or(input)
            }
            Filter::Xor => Datatype::signed_of_width(input.size()).unwrap_or(input),
            _ => input,
        }
    }

    /// Builds the codec that runs this filter, validating the options once.
    ///
    /// # Errors
    /// When the options are invalid (e.g. a scale-float byte width of 3) or the filter cannot
    /// run here (AES-256-GCM).
    pub fn codec(&self) -> Result<Box<dyn FilterCodec>> {
        crate::filters::build(self)
    }

    /// Byte length of the options as serialized.
    pub const fn options_len(&self) -> usize {
        match self {
            Filter::None
            | Filter::Bitshuffle
            | Filter::Byteshuffle
            | Filter::EncryptionAes256Gcm
            | Filter::ChecksumMd5
            | Filter::ChecksumSha256
            | Filter::Xor => 0,
            Filter::Gzip { .. }
            | Filter::Zstd { .. }
            | Filter::Lz4 { .. }
            | Filter::Rle { .. }
            | Filter::Bzip2 { .. }
            | Filter::Dictionary { .. } => 5,
            Filter::DoubleDelta { .. } | Filter::Delta { .. } => 6,
            Filter::BitWidthReduction { .. } | Filter::PositiveDelta { .. } => 4,
            Filter::ScaleFloat { .. } => 24,
            Filter::Webp { .. } => 12,
        }
    }

    /// Appends `u8 type, u32 options_len, options` as libtiledb 2.30 writes them.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(self.filter_type().id());
        out.extend_from_slice(&(self.options_len() as u32).to_le_bytes());
        let compressed = |out: &mut Vec<u8>, c: Compressor, level: i32| {
            out.push(c.id());
            out.extend_from_slice(&level.to_le_bytes());
        };
        match *self {
            Filter::None
            | Filter::Bitshuffle
            | Filter::Byteshuffle
            | Filter::EncryptionAes256Gcm
            | Filter::ChecksumMd5
            | Filter::ChecksumSha256
            | Filter::Xor => {}
            Filter::Gzip { level }
            | Filter::Zstd { level }
            | Filter::Lz4 { level }
            | Filter::Rle { level }
            | Filter::Bzip2 { level }
            | Filter::Dictionary { level } => {
                // SAFETY of unwrap-free code: every variant here has a compressor byte.
                if let Some(c) = self.compressor() {
                    compressed(out, c, level);
                }
            }
            Filter::DoubleDelta { level, reinterpret } | Filter::Delta { level, reinterpret } => {
                if let Some(c) = self.compressor() {
                    compressed(out, c, level);
                }
                out.push(reinterpret.id());
            }
            Filter::BitWidthReduction { max_window } | Filter::PositiveDelta { max_window } => {
                out.extend_from_slice(&max_window.to_le_bytes());
            }
            Filter::ScaleFloat { factor, offset, byte_width } => {
                out.extend_from_slice(&factor.to_le_bytes());
                out.extend_from_slice(&offset.to_le_bytes());
                out.extend_from_slice(&byte_width.to_le_bytes());
            }
            Filter::Webp { quality, format, lossless, y_extent, x_extent } => {
                out.extend_from_slice(&quality.to_le_bytes());
                out.push(format.id());
                out.push(u8::from(lossless));
                out.extend_from_slice(&y_extent.to_le_bytes());
                out.extend_from_slice(&x_extent.to_le_bytes());
                out.extend_from_slice(&[0, 0]);
            }
        }
    }

    /// Reads one filter (`u8 type, u32 options_len, options`) from `r`, as a schema or
    /// generic-tile header of format `version` stores it.
    ///
    /// The options are parsed from exactly `options_len` bytes, so a reader resynchronises on
    /// the next filter even if a future version appends options.
    ///
    /// # Errors
    /// Truncated input, an unknown filter type, or options that contradict the type.
    pub(crate) fn read(r: &mut ByteReader<'_>, version: u32) -> Result<Self> {
        let type_offset = r.position() as u64;
        let filter_type = FilterType::from_id(r.u8("filter type")?).map_err(|e| {
            tessera_types::Error::invalid(
                "filter pipeline",
                "filter type",
                type_offset,
                e.to_string(),
            )
        })?;
        let len = r.u32("filter options length")?;
        let options_offset = r.position() as u64;
        let bytes = r.bytes(len as usize, "filter options")?;
        let mut o = ByteReader::new(bytes, "filter options");
        let at = |e: tessera_types::Error| e.at_offset(options_offset);
        let filter = match filter_type {
            FilterType::None
            | FilterType::Bitshuffle
            | FilterType::Byteshuffle
            | FilterType::EncryptionAes256Gcm
            | FilterType::ChecksumMd5
            | FilterType::ChecksumSha256
            | FilterType::Xor => Filter::with_defaults(filter_type),
            FilterType::Gzip
            | FilterType::Zstd
            | FilterType::Lz4
            | FilterType::Rle
            | FilterType::Bzip2
            | FilterType::Dictionary
            | FilterType::DoubleDelta
            | FilterType::Delta => {
                let compressor_id = o.u8("compressor").map_err(at)?;
                let level = o.i32("compression level").map_err(at)?;
                let template = Filter::with_defaults(filter_type);
                if template.compressor().map(Compressor::id) != Some(compressor_id) {
                    return Err(at(tessera_types::Error::invalid(
                        "filter options",
                        "compressor",
                        0,
                        format!(
                            "compressor id {compressor_id} does not match filter {filter_type}"
                        ),
                    ))
                    .into());
                }
                let reinterpret_from = match filter_type {
                    FilterType::DoubleDelta => Some(DOUBLE_DELTA_REINTERPRET_MIN_VERSION),
                    FilterType::Delta => Some(DELTA_REINTERPRET_MIN_VERSION),
                    _ => None,
                };
                let reinterpret = match reinterpret_from {
                    Some(min) if version >= min => {
                        let pos = o.position() as u64;
                        Datatype::from_id(o.u8("reinterpret datatype").map_err(at)?).map_err(
                            |e| {
                                tessera_types::Error::invalid(
                                    "filter options",
                                    "reinterpret datatype",
                                    options_offset + pos,
                                    e.to_string(),
                                )
                            },
                        )?
                    }
                    _ => Datatype::Any,
                };
                match filter_type {
                    FilterType::Gzip => Filter::Gzip { level },
                    FilterType::Zstd => Filter::Zstd { level },
                    FilterType::Lz4 => Filter::Lz4 { level },
                    FilterType::Rle => Filter::Rle { level },
                    FilterType::Bzip2 => Filter::Bzip2 { level },
                    FilterType::Dictionary => Filter::Dictionary { level },
                    FilterType::DoubleDelta => Filter::DoubleDelta { level, reinterpret },
                    _ => Filter::Delta { level, reinterpret },
                }
            }
            FilterType::BitWidthReduction => {
                Filter::BitWidthReduction { max_window: o.u32("max window").map_err(at)? }
            }
            FilterType::PositiveDelta => {
                Filter::PositiveDelta { max_window: o.u32("max window").map_err(at)? }
            }
            FilterType::ScaleFloat => Filter::ScaleFloat {
                factor: o.f64("scale").map_err(at)?,
                offset: o.f64("offset").map_err(at)?,
                byte_width: o.u64("byte width").map_err(at)?,
            },
            FilterType::Webp => {
                let quality = o.f32("webp quality").map_err(at)?;
                let pos = o.position() as u64;
                let format =
                    WebpInputFormat::from_id(o.u8("webp format").map_err(at)?).map_err(|e| {
                        tessera_types::Error::invalid(
                            "filter options",
                            "webp format",
                            options_offset + pos,
                            e.to_string(),
                        )
                    })?;
                let lossless = o.u8("webp lossless").map_err(at)? != 0;
                let y_extent = o.u16("webp y extent").map_err(at)?;
                let x_extent = o.u16("webp x extent").map_err(at)?;
                Filter::Webp { quality, format, lossless, y_extent, x_extent }
            }
        };
        Ok(filter)
    }
}
