//! The compression family (GZIP, ZSTD, LZ4, RLE, BZIP2, DOUBLE_DELTA, DELTA, DICTIONARY) and
//! the framing libtiledb's `CompressionFilter` wraps around every one of them.
//!
//! Forward, every input metadata part and then every input data part is compressed on its
//! own; the output is one metadata part (the table below) and one data part (the compressed
//! parts, concatenated). The input metadata is consumed, not copied through.
//!
//! ```text
//! u32 n_md_parts, u32 n_data_parts,
//! (u32 orig_len, u32 compressed_len) × n_md_parts, then × n_data_parts
//! ```
//!
//! Reverse, the decompressed metadata parts become the previous stage's metadata and the data
//! parts its data. Every declared length is checked against what the codec really produced.
//!
//! The offset-free string path of RLE and DICTIONARY does not go through this framing; it
//! lives in [`super::rle`] and [`super::dictionary`] and is called by the pipeline directly.

use tessera_types::{ByteReader, Datatype, FilterType, Primitive};

use crate::{Decoded, Error, Filter, FilterCodec, FilterContext, Parts, Result};

/// Which codec a [`CompressionFilter`] runs, with the options that matter to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    /// zlib stream at the stored level.
    Gzip(i32),
    /// zstd frame at the stored level.
    Zstd(i32),
    /// Raw LZ4 block.
    Lz4,
    /// Fixed-width run-length encoding over the tile's cell size.
    Rle,
    /// bzip2 stream at the stored level.
    Bzip2(i32),
    /// Double delta with its reinterpret datatype.
    DoubleDelta(Datatype),
    /// Delta with its reinterpret datatype.
    Delta(Datatype),
    /// Dictionary encoding, which libtiledb only runs on the string path.
    Dictionary,
}

impl Codec {
    const fn filter_type(self) -> FilterType {
        match self {
            Codec::Gzip(_) => FilterType::Gzip,
            Codec::Zstd(_) => FilterType::Zstd,
            Codec::Lz4 => FilterType::Lz4,
            Codec::Rle => FilterType::Rle,
            Codec::Bzip2(_) => FilterType::Bzip2,
            Codec::DoubleDelta(_) => FilterType::DoubleDelta,
            Codec::Delta(_) => FilterType::Delta,
            Codec::Dictionary => FilterType::Dictionary,
        }
    }
}

/// libtiledb's `CompressionFilter` for one codec.
#[derive(Debug)]
struct CompressionFilter {
    codec: Codec,
}

/// The codec for a compression-family `filter`.
pub(crate) fn build(filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    let codec = match *filter {
        Filter::Gzip { level } => Codec::Gzip(level),
        Filter::Zstd { level } => Codec::Zstd(level),
        Filter::Lz4 { .. } => Codec::Lz4,
        Filter::Rle { .. } => Codec::Rle,
        Filter::Bzip2 { level } => Codec::Bzip2(level),
        Filter::DoubleDelta { reinterpret, .. } => Codec::DoubleDelta(reinterpret),
        Filter::Delta { reinterpret, .. } => Codec::Delta(reinterpret),
        Filter::Dictionary { .. } => Codec::Dictionary,
        _ => {
            return Err(Error::Unsupported(format!(
                "filter {} is not a compression filter",
                filter.filter_type()
            )));
        }
    };
    let feature = match codec {
        Codec::Gzip(_) => Some(("gzip", cfg!(feature = "gzip"))),
        Codec::Zstd(_) => Some(("zstd", cfg!(feature = "zstd"))),
        Codec::Lz4 => Some(("lz4", cfg!(feature = "lz4"))),
        Codec::Bzip2(_) => Some(("bzip2", cfg!(feature = "bzip2"))),
        _ => None,
    };
    if let Some((name, false)) = feature {
        return Err(Error::Unsupported(format!(
            "{} filter: tessera-filters was built without its `{name}` feature",
            codec.filter_type()
        )));
    }
    Ok(Box::new(CompressionFilter { codec }))
}

/// Bytes of the part table for `parts` parts, if it fits in memory arithmetic.
fn table_len(parts: u64) -> Option<u64> {
    parts.checked_mul(8)?.checked_add(8)
}

impl CompressionFilter {
    /// A [`Error::Corrupt`] naming this filter.
    fn corrupt(&self, reason: impl Into<String>) -> Error {
        Error::corrupt(self.codec.filter_type(), reason)
    }

    /// Appends the compressed form of one part to `dst`.
    fn compress_part(&self, ctx: &FilterContext, src: &[u8], dst: &mut Vec<u8>) -> Result<()> {
        match self.codec {
            Codec::Gzip(level) => super::gzip::compress(level, src, dst),
            Codec::Zstd(level) => super::zstd::compress(level, src, dst),
            Codec::Lz4 => super::lz4::compress(src, dst),
            Codec::Rle => super::rle::compress(ctx.cell_size, src, dst),
            Codec::Bzip2(level) => super::bzip2::compress(level, src, dst),
            Codec::DoubleDelta(r) => {
                let kind = IntKind::resolve(FilterType::DoubleDelta, ctx.datatype, r)?;
                super::double_delta::compress(kind, src, dst)
            }
            Codec::Delta(r) => {
                let kind = IntKind::resolve(FilterType::Delta, ctx.datatype, r)?;
                super::delta::compress(kind, src, dst)
            }
            Codec::Dictionary => Err(dictionary_outside_string_path()),
        }
    }

    /// Appends exactly `orig` decompressed bytes of one part to `dst`.
    fn decompress_part(
        &self,
        ctx: &FilterContext,
        src: &[u8],
        orig: usize,
        dst: &mut Vec<u8>,
    ) -> Result<()> {
        match self.codec {
            Codec::Gzip(_) => super::gzip::decompress(src, orig, dst),
            Codec::Zstd(_) => super::zstd::decompress(src, orig, dst),
            Codec::Lz4 => super::lz4::decompress(src, orig, dst),
            Codec::Rle => super::rle::decompress(ctx.cell_size, src, orig, dst),
            Codec::Bzip2(_) => super::bzip2::decompress(src, orig, dst),
            Codec::DoubleDelta(r) => {
                let kind = IntKind::resolve(FilterType::DoubleDelta, ctx.datatype, r)?;
                super::double_delta::decompress(kind, src, orig, dst)
            }
            Codec::Delta(r) => {
                let kind = IntKind::resolve(FilterType::Delta, ctx.datatype, r)?;
                super::delta::decompress(kind, src, orig, dst)
            }
            Codec::Dictionary => Err(Error::corrupt(
                FilterType::Dictionary,
                "dictionary-encoded part outside the var-sized string path \
                 (libtiledb only dictionary-encodes var-sized STRING_ASCII/STRING_UTF8 tiles)",
            )),
        }
    }

    /// Parses the part table at the front of `metadata`: `(n_md_parts, table bytes)`.
    fn parse_table<'a>(&self, metadata: &'a [u8]) -> Result<(usize, &'a [u8])> {
        let mut r = ByteReader::new(metadata, "compression filter metadata");
        let n_md = r.u32("metadata part count")?;
        let n_data = r.u32("data part count")?;
        let parts = u64::from(n_md) + u64::from(n_data);
        let needed = table_len(parts).unwrap_or(u64::MAX);
        if needed > metadata.len() as u64 {
            return Err(self.corrupt(format!(
                "{n_md} metadata and {n_data} data parts need a {needed}-byte part table, \
                 but the metadata has {} bytes",
                metadata.len()
            )));
        }
        let table = r.bytes(parts as usize * 8, "part lengths")?;
        if !r.is_empty() {
            return Err(
                self.corrupt(format!("{} metadata bytes after the part table", r.remaining()))
            );
        }
        Ok((n_md as usize, table))
    }

    /// Reverse of the framing; may leave partial output on error (see `decode`).
    fn decode_parts(
        &self,
        ctx: &FilterContext,
        metadata: &[u8],
        data: &[u8],
        out: &mut Decoded,
    ) -> Result<()> {
        let (n_md, table) = self.parse_table(metadata)?;
        let mut pos = 0usize;
        for (i, entry) in table.chunks_exact(8).enumerate() {
            let orig = u32::read_le(&entry[..4]) as usize;
            let comp = u32::read_le(&entry[4..]) as usize;
            let src =
                pos.checked_add(comp).and_then(|end| data.get(pos..end)).ok_or_else(|| {
                    self.corrupt(format!(
                        "part {i} needs {comp} bytes at offset {pos}, but the data has {} bytes",
                        data.len()
                    ))
                })?;
            pos += comp;
            let dst = if i < n_md { &mut out.metadata } else { &mut out.data };
            let start = dst.len();
            self.decompress_part(ctx, src, orig, dst)?;
            let got = dst.len() - start;
            if got != orig {
                return Err(self.corrupt(format!(
                    "part {i} decoded to {got} bytes instead of the declared {orig}"
                )));
            }
        }
        if pos != data.len() {
            return Err(
                self.corrupt(format!("the parts use {pos} of the {} data bytes", data.len()))
            );
        }
        Ok(())
    }
}

impl FilterCodec for CompressionFilter {
    fn encode(&self, ctx: &FilterContext, input: Parts) -> Result<Parts> {
        if self.codec == Codec::Dictionary {
            return Err(dictionary_outside_string_path());
        }
        let kind = self.codec.filter_type();
        if let Codec::DoubleDelta(r) | Codec::Delta(r) = self.codec {
            check_reinterpret(kind, ctx.datatype, r)?;
        }
        let n_md = input.metadata.len();
        let n_data = input.data.len();
        let (Ok(n_md32), Ok(n_data32)) = (u32::try_from(n_md), u32::try_from(n_data)) else {
            return Err(Error::encode(kind, "too many parts"));
        };
        if input.data_len() > u32::MAX as usize {
            return Err(Error::encode(
                kind,
                format!("input of {} bytes is too large to be compressed", input.data_len()),
            ));
        }
        let mut metadata = Vec::with_capacity(8 + 8 * (n_md + n_data));
        metadata.extend_from_slice(&n_md32.to_le_bytes());
        metadata.extend_from_slice(&n_data32.to_le_bytes());
        let mut data = Vec::with_capacity(input.metadata_len() + input.data_len() + 64);
        for part in input.metadata.iter().chain(&input.data) {
            let Ok(orig) = u32::try_from(part.len()) else {
                return Err(Error::encode(kind, format!("part of {} bytes", part.len())));
            };
            let start = data.len();
            self.compress_part(ctx, part, &mut data)?;
            if data.len() > u32::MAX as usize {
                return Err(Error::encode(kind, "compressed output exceeds u32::MAX bytes"));
            }
            metadata.extend_from_slice(&orig.to_le_bytes());
            metadata.extend_from_slice(&((data.len() - start) as u32).to_le_bytes());
        }
        Ok(Parts { metadata: vec![metadata], data: vec![data] })
    }

    fn decode(
        &self,
        ctx: &FilterContext,
        metadata: &[u8],
        data: &[u8],
        out: &mut Decoded,
    ) -> Result<()> {
        let (md_start, data_start) = (out.metadata.len(), out.data.len());
        let res = self.decode_parts(ctx, metadata, data, out);
        if res.is_err() {
            // Leave the caller's buffers as they were.
            out.metadata.truncate(md_start);
            out.data.truncate(data_start);
        }
        res
    }

    fn decoded_len_hint(&self, metadata: &[u8], _data: &[u8]) -> Option<usize> {
        let (n_md, table) = self.parse_table(metadata).ok()?;
        table
            .chunks_exact(8)
            .skip(n_md)
            .try_fold(0usize, |acc, e| acc.checked_add(u32::read_le(&e[..4]) as usize))
    }
}

/// What libtiledb answers when asked to dictionary-encode outside the string path.
fn dictionary_outside_string_path() -> Error {
    Error::encode(
        FilterType::Dictionary,
        "dictionary encoding only applies to var-sized STRING_ASCII/STRING_UTF8 tiles \
         (as in libtiledb, it cannot encode fixed-size or non-string data)",
    )
}

/// The integer type DOUBLE_DELTA and DELTA compute in, as libtiledb picks it from the
/// reinterpret datatype (or the stage's datatype when that is `ANY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntKind {
    /// `int8_t` (INT8, CHAR).
    I8,
    /// `uint8_t` (UINT8, BOOL, BLOB, GEOM_*, STRING_*, ANY).
    U8,
    /// `int16_t`.
    I16,
    /// `uint16_t`.
    U16,
    /// `int32_t`.
    I32,
    /// `uint32_t`.
    U32,
    /// `int64_t` (INT64 and every DATETIME_*/TIME_*).
    I64,
    /// `uint64_t`.
    U64,
}

impl IntKind {
    /// The integer type of `filter` at a stage of datatype `stage` with reinterpret option
    /// `reinterpret`; floats are refused as libtiledb refuses them.
    ///
    /// # Errors
    /// [`Error::DatatypeNotSupported`] for FLOAT32/FLOAT64.
    pub(crate) fn resolve(
        filter: FilterType,
        stage: Datatype,
        reinterpret: Datatype,
    ) -> Result<Self> {
        let t = if reinterpret == Datatype::Any { stage } else { reinterpret };
        Ok(match t {
            Datatype::Int8 | Datatype::Char => IntKind::I8,
            Datatype::Int16 => IntKind::I16,
            Datatype::UInt16 => IntKind::U16,
            Datatype::Int32 => IntKind::I32,
            Datatype::UInt32 => IntKind::U32,
            Datatype::Int64 => IntKind::I64,
            Datatype::UInt64 => IntKind::U64,
            Datatype::Float32 | Datatype::Float64 => {
                return Err(Error::DatatypeNotSupported { filter, datatype: t });
            }
            t if t.is_datetime() || t.is_time() => IntKind::I64,
            _ => IntKind::U8,
        })
    }
}

/// Refuses, on the write path, what libtiledb refuses before writing a DELTA or DOUBLE_DELTA
/// part: a reinterpret datatype whose size does not divide the stage datatype's
/// (`CompressionFilter::accepts_input_datatype`, checked when the schema is built) or that
/// its buffers cannot be viewed as (`FilterBuffer::buffers_as` throws for CHAR and every
/// STRING_* type). Floats are refused by [`IntKind::resolve`].
pub(crate) fn check_reinterpret(
    filter: FilterType,
    stage: Datatype,
    reinterpret: Datatype,
) -> Result<()> {
    if reinterpret == Datatype::Any {
        return Ok(());
    }
    if reinterpret == Datatype::Char
        || reinterpret.is_string()
        || !stage.size().is_multiple_of(reinterpret.size())
    {
        return Err(Error::DatatypeNotSupported { filter, datatype: reinterpret });
    }
    Ok(())
}

/// A fixed-width integer DOUBLE_DELTA and DELTA compute over, with C-style conversions.
pub(crate) trait Int: Primitive {
    /// `int64_t(v)`: sign- or zero-extends, and wraps for `u64` above `i64::MAX`.
    fn as_i64(self) -> i64;
    /// `T(v)`: keeps the low bits.
    fn from_i64(v: i64) -> Self;
    /// Writes the little-endian bytes into the first `SIZE` bytes of `dst`.
    fn put(self, dst: &mut [u8]);
}

macro_rules! impl_int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            #[inline]
            fn as_i64(self) -> i64 {
                self as i64
            }
            #[inline]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline]
            fn put(self, dst: &mut [u8]) {
                dst[..<$t as Primitive>::SIZE].copy_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
impl_int!(i8, u8, i16, u16, i32, u32, i64, u64);

/// Runs `$body` with `$t` bound to the Rust type of the [`IntKind`] `$kind`.
macro_rules! with_int {
    ($kind:expr, $t:ident => $body:expr) => {
        match $kind {
            $crate::filters::compression::IntKind::I8 => {
                type $t = i8;
                $body
            }
            $crate::filters::compression::IntKind::U8 => {
                type $t = u8;
                $body
            }
            $crate::filters::compression::IntKind::I16 => {
                type $t = i16;
                $body
            }
            $crate::filters::compression::IntKind::U16 => {
                type $t = u16;
                $body
            }
            $crate::filters::compression::IntKind::I32 => {
                type $t = i32;
                $body
            }
            $crate::filters::compression::IntKind::U32 => {
                type $t = u32;
                $body
            }
            $crate::filters::compression::IntKind::I64 => {
                type $t = i64;
                $body
            }
            $crate::filters::compression::IntKind::U64 => {
                type $t = u64;
                $body
            }
        }
    };
}
pub(crate) use with_int;

/// What one call of a streaming decoder did.
#[cfg(any(feature = "gzip", feature = "zstd", feature = "bzip2"))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Step {
    /// Bytes written into the output slice.
    pub(crate) written: usize,
    /// Whether any input was consumed.
    pub(crate) consumed: bool,
    /// Whether the stream ended (and all input was used).
    pub(crate) done: bool,
}

/// Drives a streaming decoder that must produce exactly `orig` bytes, appending them to
/// `dst`. The output grows as the decoder really produces bytes (starting from a size
/// plausible for `comp_len` input bytes), so a forged `orig` cannot make us reserve memory
/// the data does not back. On error `dst` is restored to its length on entry.
#[cfg(any(feature = "gzip", feature = "zstd", feature = "bzip2"))]
pub(crate) fn stream_into(
    filter: FilterType,
    comp_len: usize,
    orig: usize,
    dst: &mut Vec<u8>,
    mut step: impl FnMut(&mut [u8]) -> Result<Step>,
) -> Result<()> {
    const MIN_WINDOW: usize = 1 << 18;
    let start = dst.len();
    // One byte past `orig` lets a stream that is too long show itself.
    let limit = orig.saturating_add(1);
    let mut window = limit.min(comp_len.saturating_mul(8).max(MIN_WINDOW));
    let mut filled = 0usize;
    let res = loop {
        if filled == window {
            window = limit.min(window.saturating_mul(2));
        }
        dst.resize(start + window, 0);
        let step = match step(&mut dst[start + filled..]) {
            Ok(s) => s,
            Err(e) => break Err(e),
        };
        filled += step.written;
        if filled > orig {
            break Err(Error::corrupt(
                filter,
                format!("stream decodes to more than the declared {orig} bytes"),
            ));
        }
        if step.done {
            break if filled == orig {
                Ok(())
            } else {
                Err(Error::corrupt(
                    filter,
                    format!("stream decodes to {filled} bytes instead of the declared {orig}"),
                ))
            };
        }
        if step.written == 0 && !step.consumed && filled < window {
            break Err(Error::corrupt(
                filter,
                format!("stream is truncated after {filled} of {orig} bytes"),
            ));
        }
    };
    match res {
        Ok(()) => {
            dst.truncate(start + orig);
            Ok(())
        }
        Err(e) => {
            dst.truncate(start);
            Err(e)
        }
    }
}

#[cfg(all(test, feature = "gzip", feature = "zstd", feature = "lz4", feature = "bzip2"))]
mod tests {
    use super::*;
    use crate::FilterPipeline;
    use crate::filters::util::test_support::unhex as hex;

    fn ctx(datatype: Datatype, cell_size: usize) -> FilterContext {
        FilterContext { datatype, cell_size, version: 22 }
    }

    fn codec(f: Filter) -> Box<dyn FilterCodec> {
        build(&f).unwrap()
    }

    #[test]
    fn framing_compresses_every_part_and_consumes_metadata() {
        let c = codec(Filter::Gzip { level: -1 });
        let input = Parts {
            metadata: vec![b"abc".to_vec(), Vec::new()],
            data: vec![vec![7u8; 100], b"xyz".to_vec()],
        };
        let out = c.encode(&ctx(Datatype::UInt8, 1), input).unwrap();
        assert_eq!(out.metadata.len(), 1);
        assert_eq!(out.data.len(), 1);
        let md = &out.metadata[0];
        assert_eq!(md.len(), 8 + 4 * 8);
        assert_eq!(&md[..8], &[2, 0, 0, 0, 2, 0, 0, 0]);
        let origs: Vec<u32> = md[8..]
            .chunks_exact(8)
            .map(|e| u32::from_le_bytes(e[..4].try_into().unwrap()))
            .collect();
        assert_eq!(origs, [3, 0, 100, 3]);
        let comp: usize = md[8..]
            .chunks_exact(8)
            .map(|e| u32::from_le_bytes(e[4..].try_into().unwrap()) as usize)
            .sum();
        assert_eq!(comp, out.data[0].len());
        // An empty part is still a zlib stream.
        assert_eq!(&out.data[0][11..19], &[0x78, 0x9c, 0x03, 0, 0, 0, 0, 1]);

        let mut dec = Decoded { metadata: b"M".to_vec(), data: b"D".to_vec() };
        c.decode(&ctx(Datatype::UInt8, 1), md, &out.data[0], &mut dec).unwrap();
        assert_eq!(dec.metadata, b"Mabc");
        let mut want = b"D".to_vec();
        want.extend_from_slice(&[7u8; 100]);
        want.extend_from_slice(b"xyz");
        assert_eq!(dec.data, want);
        assert_eq!(c.decoded_len_hint(md, &out.data[0]), Some(103));
    }

    #[test]
    fn framing_rejects_inconsistent_tables() {
        let c = codec(Filter::Lz4 { level: -1 });
        let cx = ctx(Datatype::UInt8, 1);
        let enc = c.encode(&cx, Parts::from_data(b"hello hello hello".to_vec())).unwrap();
        let (md, data) = (&enc.metadata[0], &enc.data[0]);
        let mut out = Decoded { metadata: b"keep".to_vec(), data: b"keep".to_vec() };
        // Huge part count.
        let mut bad = md.clone();
        bad[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(c.decode(&cx, &bad, data, &mut out).is_err());
        // Leftover metadata.
        let mut bad = md.clone();
        bad.push(0);
        assert!(c.decode(&cx, &bad, data, &mut out).is_err());
        // Leftover data.
        let mut bad = data.clone();
        bad.push(0);
        assert!(c.decode(&cx, md, &bad, &mut out).is_err());
        // Declared original length off by one.
        let mut bad = md.clone();
        bad[8] += 1;
        assert!(c.decode(&cx, &bad, data, &mut out).is_err());
        assert_eq!(out.metadata, b"keep");
        assert_eq!(out.data, b"keep");
    }

    #[test]
    fn dictionary_outside_the_string_path_is_refused() {
        let c = codec(Filter::Dictionary { level: -1 });
        let e = c.encode(&ctx(Datatype::Int32, 4), Parts::from_data(vec![0; 8])).unwrap_err();
        assert!(matches!(e, Error::Encode { filter: FilterType::Dictionary, .. }), "{e}");
        let md = [0, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0];
        assert!(c.decode(&ctx(Datatype::Int32, 4), &md, &[0; 8], &mut Decoded::default()).is_err());
    }

    #[test]
    fn delta_filters_refuse_floats_and_unviewable_reinterpret_types() {
        for f in [
            Filter::DoubleDelta { level: -1, reinterpret: Datatype::Any },
            Filter::Delta { level: -1, reinterpret: Datatype::Any },
        ] {
            let e = codec(f)
                .encode(&ctx(Datatype::Float64, 8), Parts::from_data(vec![0; 16]))
                .unwrap_err();
            assert!(matches!(e, Error::DatatypeNotSupported { datatype: Datatype::Float64, .. }));
        }
        let f = Filter::Delta { level: -1, reinterpret: Datatype::Float32 };
        assert!(codec(f).encode(&ctx(Datatype::Int32, 4), Parts::from_data(vec![0; 8])).is_err());
        let f = Filter::DoubleDelta { level: -1, reinterpret: Datatype::Char };
        assert!(codec(f).encode(&ctx(Datatype::Int8, 1), Parts::from_data(vec![0; 8])).is_err());
        // A reinterpret type wider than the stage's (libtiledb refuses the schema).
        let f = Filter::Delta { level: -1, reinterpret: Datatype::Int64 };
        assert!(codec(f).encode(&ctx(Datatype::Int32, 4), Parts::from_data(vec![0; 16])).is_err());
        // Float data reinterpreted as integers is fine.
        let f = Filter::DoubleDelta { level: -1, reinterpret: Datatype::UInt32 };
        assert!(codec(f).encode(&ctx(Datatype::Float32, 4), Parts::from_data(vec![1; 8])).is_ok());
    }

    #[test]
    fn int_kinds_follow_libtiledb() {
        let r = |t| IntKind::resolve(FilterType::Delta, t, Datatype::Any).unwrap();
        assert_eq!(r(Datatype::Char), IntKind::I8);
        assert_eq!(r(Datatype::Bool), IntKind::U8);
        assert_eq!(r(Datatype::StringUtf8), IntKind::U8);
        assert_eq!(r(Datatype::Blob), IntKind::U8);
        assert_eq!(r(Datatype::DatetimeNs), IntKind::I64);
        assert_eq!(r(Datatype::TimeSec), IntKind::I64);
        assert_eq!(r(Datatype::UInt16), IntKind::U16);
        let dd = IntKind::resolve(FilterType::DoubleDelta, Datatype::Int64, Datatype::UInt32);
        assert_eq!(dd.unwrap(), IntKind::U32);
    }

    /// A generic tile's pipeline and chunk, as `docs/format/filters.md` ("Generic tiles")
    /// shows them: md part table `00000000 01000000 a7000000 49000000` and a level-1 zlib
    /// stream.
    #[test]
    fn generic_tile_pipeline_writes_level_one_zlib() {
        let p = FilterPipeline::generic_tile();
        let codec = p.codec(Datatype::Char, 1, 22).unwrap();
        let payload: Vec<u8> = (0..167u32).map(|i| (i * 7 % 13) as u8).collect();
        let enc = codec.encode_chunk(&payload).unwrap();
        assert_eq!(&enc.metadata[..12], &[0, 0, 0, 0, 1, 0, 0, 0, 167, 0, 0, 0]);
        assert_eq!(&enc.data[..2], &[0x78, 0x01]);
        let mut out = Vec::new();
        codec.decode_chunk(&enc.metadata, &enc.data, &mut out).unwrap();
        assert_eq!(out, payload);
    }

    fn string_cells() -> (Vec<u8>, Vec<u64>) {
        let cells: [&[u8]; 8] = [b"aa", b"aa", b"aa", b"bcd", b"bcd", b"", &[b'e'; 300], b"aa"];
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for c in cells {
            offsets.push(data.len() as u64);
            data.extend_from_slice(c);
        }
        (data, offsets)
    }

    /// libtiledb 2.30 var UTF-8 tiles with `[RLE, ZSTD]` and `[DICTIONARY, ZSTD]`: the first
    /// stage's metadata is compressed as one metadata part.
    #[test]
    fn string_path_chains_match_libtiledb_bytes() {
        let (data, offsets) = string_cells();
        let cases = [
            (
                Filter::Rle { level: -1 },
                "0100000001000000160000001f0000004201000028000000",
                "28b52ffd2016b1000000000000010000003a0100004201000040000000010228b52ffd604200f500\
                 00b8030002616102000362636401000001012c650100026161010050541006",
            ),
            (
                Filter::Dictionary { level: -1 },
                "0100000001000000530100003a0000000800000011000000",
                "28b52ffd605300850100840200000000010000003a01000008000000400000000102390100000002\
                 616100036263640000012c6501004051411928b52ffd20084100000000000101020300",
            ),
        ];
        for (first, md, golden) in cases {
            let p = FilterPipeline::new(vec![first, Filter::Zstd { level: -1 }]);
            let codec = p.codec(Datatype::StringUtf8, 1, 22).unwrap();
            assert!(codec.is_string_path());
            let enc = codec.encode_strings(&data, &offsets).unwrap();
            assert_eq!(enc.metadata, hex(md), "{first:?}");
            assert_eq!(enc.data, hex(golden), "{first:?}");
            let (mut d, mut o) = (b"z".to_vec(), vec![9]);
            codec.decode_strings(&enc.metadata, &enc.data, &mut d, &mut o).unwrap();
            assert_eq!(d[1..], data[..]);
            assert_eq!(o[1..], offsets[..]);
        }
    }

    /// A libtiledb 2.30 int64 tile with `[DOUBLE_DELTA reinterpret UINT32, BZIP2]`: the double
    /// delta part table is the bzip2 stage's metadata part.
    #[test]
    fn chain_with_compressed_metadata_matches_libtiledb_bytes() {
        let values: Vec<u8> = [7i64, 9, 13, 1, 2, 3, 60000, 70000, 70003]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let md = hex("0100000001000000100000002d0000003900000065000000");
        let data = hex(
            "425a6831314159265359ff322ea2000001cc00600000200040200021100cd34b136a87177245385090\
             ff322ea2425a6831314159265359a997fa470000107cdbfc8870c71000200040440200404060004040\
             000201000080200054500000000229f9534d0d0320f48c6a66f289f2bd5d77903a0944fbc1461199ea\
             555ef049b341c28682c2b63ef8bb9229c284854cbfd238",
        );
        let p = FilterPipeline::new(vec![
            Filter::DoubleDelta { level: -1, reinterpret: Datatype::UInt32 },
            Filter::Bzip2 { level: -1 },
        ]);
        let codec = p.codec(Datatype::Int64, 8, 22).unwrap();
        let enc = codec.encode_chunk(&values).unwrap();
        assert_eq!(enc.metadata, md);
        assert_eq!(enc.data, data);
        let mut out = b"q".to_vec();
        codec.decode_chunk(&md, &data, &mut out).unwrap();
        assert_eq!(out[1..], values[..]);
    }

    /// A small deterministic generator for the damage test.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            if n == 0 { 0 } else { (self.next() % n as u64) as usize }
        }
    }

    /// Damaged copies of `bytes`: every truncation, random bit flips, and every aligned
    /// `u32`/`u64` field replaced by large or off-by-one values.
    fn damaged(bytes: &[u8], rng: &mut Rng) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let step = (bytes.len() / 64).max(1);
        for len in (0..bytes.len()).step_by(step) {
            out.push(bytes[..len].to_vec());
        }
        let mut longer = bytes.to_vec();
        longer.extend_from_slice(&[0, 1, 2]);
        out.push(longer);
        for _ in 0..60 {
            let mut b = bytes.to_vec();
            if !b.is_empty() {
                for _ in 0..=rng.below(3) {
                    let i = rng.below(b.len());
                    b[i] ^= 1 << rng.below(8);
                }
            }
            out.push(b);
        }
        for pos in 0..bytes.len().min(48) {
            for width in [4usize, 8] {
                if pos + width > bytes.len() {
                    continue;
                }
                let old = u64::from_le_bytes({
                    let mut a = [0u8; 8];
                    a[..width].copy_from_slice(&bytes[pos..pos + width]);
                    a
                });
                for v in [
                    u64::MAX,
                    1 << 31,
                    0x7fff_ffff,
                    old.wrapping_add(1),
                    old.wrapping_sub(1),
                    old.wrapping_mul(2),
                    0,
                ] {
                    let mut b = bytes.to_vec();
                    b[pos..pos + width].copy_from_slice(&v.to_le_bytes()[..width]);
                    out.push(b);
                }
            }
        }
        out
    }

    #[test]
    fn decoders_never_panic_on_damaged_input() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let ints: Vec<u8> = (0..300i32).flat_map(|i| (i * i % 1000 - 300).to_le_bytes()).collect();
        let level = -1;
        let cases: Vec<(Filter, Datatype, usize)> = vec![
            (Filter::Gzip { level }, Datatype::Int32, 4),
            (Filter::Zstd { level }, Datatype::Int32, 4),
            (Filter::Lz4 { level }, Datatype::Int32, 4),
            (Filter::Bzip2 { level }, Datatype::Int32, 4),
            (Filter::Rle { level }, Datatype::Int32, 4),
            (Filter::Rle { level }, Datatype::UInt8, 1),
            (Filter::DoubleDelta { level, reinterpret: Datatype::Any }, Datatype::Int32, 4),
            (Filter::DoubleDelta { level, reinterpret: Datatype::Any }, Datatype::Int64, 8),
            (Filter::DoubleDelta { level, reinterpret: Datatype::Int8 }, Datatype::Int32, 4),
            (Filter::Delta { level, reinterpret: Datatype::Any }, Datatype::Int32, 4),
            (Filter::Delta { level, reinterpret: Datatype::Int16 }, Datatype::Int32, 4),
        ];
        for (filter, datatype, cell_size) in cases {
            let cx = ctx(datatype, cell_size);
            let c = codec(filter);
            let enc = c.encode(&cx, Parts::from_data(ints.clone())).unwrap();
            let (md, data) = (&enc.metadata[0], &enc.data[0]);
            let mut inputs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for m in damaged(md, &mut rng) {
                inputs.push((m, data.clone()));
            }
            for d in damaged(data, &mut rng) {
                inputs.push((md.clone(), d));
            }
            for (m, d) in inputs {
                let mut out = Decoded { metadata: b"m".to_vec(), data: b"d".to_vec() };
                match c.decode(&cx, &m, &d, &mut out) {
                    Ok(()) => assert!(out.data.starts_with(b"d") && out.metadata.starts_with(b"m")),
                    Err(_) => {
                        assert_eq!((&out.metadata[..], &out.data[..]), (&b"m"[..], &b"d"[..]))
                    }
                }
                let _ = c.decoded_len_hint(&m, &d);
            }
        }

        // The string paths.
        let (data, offsets) = string_cells();
        for (encode, decode) in [
            (
                super::super::rle::encode_strings as fn(&[u8], &[u64]) -> Result<Parts>,
                super::super::rle::decode_strings
                    as fn(&[u8], &[u8], &mut Vec<u8>, &mut Vec<u64>) -> Result<()>,
            ),
            (super::super::dictionary::encode_strings, super::super::dictionary::decode_strings),
        ] {
            let enc = encode(&data, &offsets).unwrap();
            let (md, d) = (&enc.metadata[0], &enc.data[0]);
            let mut inputs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for m in damaged(md, &mut rng) {
                inputs.push((m, d.clone()));
            }
            for x in damaged(d, &mut rng) {
                inputs.push((md.clone(), x));
            }
            for (m, x) in inputs {
                let (mut od, mut oo) = (b"s".to_vec(), vec![5u64]);
                if decode(&m, &x, &mut od, &mut oo).is_err() {
                    assert_eq!((&od[..], &oo[..]), (&b"s"[..], &[5u64][..]));
                } else {
                    assert_eq!(
                        oo.len() - 1,
                        (m.get(16..20)
                            .map_or(0, |b| { u32::from_le_bytes(b.try_into().unwrap()) as usize }))
                            / 8
                    );
                }
            }
        }
    }
}
