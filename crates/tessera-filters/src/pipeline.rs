//! Filter pipelines: their on-disk form and running them over one chunk.

use tessera_types::{
    ByteReader, Datatype, EncryptionKey, FORMAT_VERSION, FilterType, MAX_TILE_CHUNK_SIZE,
};

use crate::{Decoded, Error, Filter, FilterCodec, FilterContext, Parts, Result, filters};

/// The ordered filters applied to a field's tiles (or a generic tile), as stored on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterPipeline {
    /// Stored `max_chunk_size`; only its being 0 matters (0 switches chunking off). TileDB
    /// 2.30 always writes 65536.
    pub max_chunk_size: u32,
    /// Filters in forward (write) order.
    pub filters: Vec<Filter>,
}

impl Default for FilterPipeline {
    fn default() -> Self {
        FilterPipeline::new(Vec::new())
    }
}

impl FilterPipeline {
    /// A pipeline of `filters` with the `max_chunk_size` libtiledb writes.
    pub fn new(filters: Vec<Filter>) -> Self {
        FilterPipeline { max_chunk_size: MAX_TILE_CHUNK_SIZE as u32, filters }
    }

    /// The pipeline of every generic tile: GZIP level 1.
    pub fn generic_tile() -> Self {
        FilterPipeline::new(vec![Filter::Gzip {
            level: tessera_types::GENERIC_TILE_COMPRESSION_LEVEL,
        }])
    }

    /// No filters.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// Whether a filter of type `t` is in the pipeline.
    pub fn contains(&self, t: FilterType) -> bool {
        self.filters.iter().any(|f| f.filter_type() == t)
    }

    /// Parses a pipeline (`u32 max_chunk_size, u32 n, n × filter`) from the front of `bytes`,
    /// returning it and the number of bytes it used.
    ///
    /// # Errors
    /// Truncated input, unknown filter types or malformed options, with their offset.
    pub fn parse(bytes: &[u8], version: u32) -> Result<(Self, usize)> {
        let mut r = ByteReader::new(bytes, "filter pipeline");
        let max_chunk_size = r.u32("max chunk size")?;
        let count_at = r.position() as u64;
        let n = r.u32("filter count")?;
        // Each filter takes at least 5 bytes; refuse counts the input cannot hold before
        // reserving anything.
        if u64::from(n) * 5 > r.remaining() as u64 {
            return Err(tessera_types::Error::invalid(
                "filter pipeline",
                "filter count",
                count_at,
                format!("{n} filters cannot fit in {} bytes", r.remaining()),
            )
            .into());
        }
        let mut filters = Vec::with_capacity(n as usize);
        for _ in 0..n {
            filters.push(Filter::read(&mut r, version)?);
        }
        Ok((FilterPipeline { max_chunk_size, filters }, r.position()))
    }

    /// Appends the serialized pipeline.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.max_chunk_size.to_le_bytes());
        out.extend_from_slice(&(self.filters.len() as u32).to_le_bytes());
        for f in &self.filters {
            f.write(out);
        }
    }

    /// Byte length of [`Self::write`]'s output.
    pub fn serialized_len(&self) -> usize {
        8 + self.filters.iter().map(|f| 5 + f.options_len()).sum::<usize>()
    }

    /// The serialized pipeline as a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.serialized_len());
        self.write(&mut out);
        out
    }

    /// The datatype each stage sees, given the field's datatype: `n + 1` entries, the last
    /// being the type of the stored bytes.
    pub fn stage_datatypes(&self, input: Datatype) -> Vec<Datatype> {
        let mut types = Vec::with_capacity(self.filters.len() + 1);
        types.push(input);
        for f in &self.filters {
            let last = *types.last().unwrap_or(&input);
            types.push(f.output_datatype(last));
        }
        types
    }

    /// Whether a var-sized tile of `datatype` takes the offset-free string path of RLE or
    /// DICTIONARY: its data is encoded together with its offsets, the offsets tile is written
    /// as a single zero `u64`, and the data tile is not chunked.
    pub fn skips_offsets_filtering(&self, datatype: Datatype, version: u32) -> bool {
        let rle = self.contains(FilterType::Rle);
        let dict = self.contains(FilterType::Dictionary);
        match datatype {
            Datatype::StringAscii => (rle && version >= 12) || (dict && version >= 13),
            Datatype::StringUtf8 => (rle || dict) && version >= 17,
            _ => false,
        }
    }

    /// Builds the runner of this pipeline for a field of `datatype` whose tiles have
    /// `cell_size`-byte cells, at format `version`.
    ///
    /// # Errors
    /// When a filter's options are invalid or a filter cannot run on the datatype of its stage.
    pub fn codec(
        &self,
        datatype: Datatype,
        cell_size: usize,
        version: u32,
    ) -> Result<PipelineCodec> {
        self.codec_with_key(datatype, cell_size, version, None)
    }

    /// [`Self::codec`] for a pipeline that may hold the AES-256-GCM filter (the header
    /// pipeline of an encrypted generic tile), which runs with `key`.
    ///
    /// # Errors
    /// As [`Self::codec`]; [`Error::KeyRequired`] when the pipeline has the AES-256-GCM
    /// filter and `key` is `None`.
    pub fn codec_with_key(
        &self,
        datatype: Datatype,
        cell_size: usize,
        version: u32,
        key: Option<&EncryptionKey>,
    ) -> Result<PipelineCodec> {
        let types = self.stage_datatypes(datatype);
        let mut stages = Vec::with_capacity(self.filters.len());
        for (f, &t) in self.filters.iter().zip(&types) {
            let codec = match (f, key) {
                (Filter::EncryptionAes256Gcm, Some(key)) => filters::aes::build(key),
                (Filter::EncryptionAes256Gcm, None) => return Err(Error::KeyRequired),
                _ => f.codec()?,
            };
            stages.push(Stage {
                filter: *f,
                codec,
                ctx: FilterContext { datatype: t, cell_size, version },
            });
        }
        Ok(PipelineCodec { stages, string_path: self.skips_offsets_filtering(datatype, version) })
    }
}

#[derive(Debug)]
struct Stage {
    filter: Filter,
    codec: Box<dyn FilterCodec>,
    ctx: FilterContext,
}

/// A pipeline ready to run over chunks: codecs built and each stage's datatype fixed. Cheap to
/// share between threads.
#[derive(Debug)]
pub struct PipelineCodec {
    stages: Vec<Stage>,
    string_path: bool,
}

/// One chunk after the whole forward pipeline: what goes after the chunk's length fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncodedChunk {
    /// The final stage's metadata (all metadata parts, concatenated).
    pub metadata: Vec<u8>,
    /// The final stage's data (all data parts, concatenated).
    pub data: Vec<u8>,
}

impl PipelineCodec {
    /// Whether data tiles take the offset-free RLE/DICTIONARY string path; use
    /// [`Self::encode_strings`] / [`Self::decode_strings`] for them.
    pub fn is_string_path(&self) -> bool {
        self.string_path
    }

    /// This pipeline with the AES-256-GCM filter appended, running with `key`, as libtiledb
    /// appends it at run time to the pipeline of every data tile of an encrypted array; with
    /// `None`, the pipeline unchanged.
    #[must_use]
    pub fn encrypted(mut self, key: Option<&EncryptionKey>) -> Self {
        if let Some(key) = key {
            let ctx = self.stages.last().map_or(
                FilterContext { datatype: Datatype::Blob, cell_size: 1, version: FORMAT_VERSION },
                |s| s.ctx,
            );
            let datatype = self
                .stages
                .last()
                .map_or(ctx.datatype, |s| s.filter.output_datatype(s.ctx.datatype));
            self.stages.push(Stage {
                filter: Filter::EncryptionAes256Gcm,
                codec: filters::aes::build(key),
                ctx: FilterContext { datatype, ..ctx },
            });
        }
        self
    }

    /// Number of filters.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// Whether the pipeline has no filters.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// Runs the forward pipeline over one chunk.
    ///
    /// # Errors
    /// When a filter cannot encode the data.
    pub fn encode_chunk(&self, chunk: &[u8]) -> Result<EncodedChunk> {
        self.encode_from(0, Parts::from_data(chunk.to_vec()))
    }

    /// Runs the forward pipeline over a whole var-sized string tile on the offset-free path:
    /// the first filter (RLE or DICTIONARY) encodes `data` with the cell `offsets`, the rest
    /// run as usual.
    ///
    /// # Errors
    /// When the pipeline is not on the string path or a filter cannot encode the data.
    pub fn encode_strings(&self, data: &[u8], offsets: &[u64]) -> Result<EncodedChunk> {
        let first = self.string_stage()?;
        let parts = match first.filter {
            Filter::Rle { .. } => filters::rle::encode_strings(data, offsets)?,
            _ => filters::dictionary::encode_strings(data, offsets)?,
        };
        self.encode_from(1, parts)
    }

    fn encode_from(&self, start: usize, mut parts: Parts) -> Result<EncodedChunk> {
        for stage in &self.stages[start.min(self.stages.len())..] {
            parts = stage.codec.encode(&stage.ctx, parts)?;
        }
        Ok(EncodedChunk { metadata: parts.metadata.concat(), data: parts.data.concat() })
    }

    /// Runs the reverse pipeline over one chunk, appending the original bytes to `out`.
    ///
    /// # Errors
    /// When the chunk's metadata or data are corrupt, a checksum does not match, or metadata
    /// is left over after the first filter.
    pub fn decode_chunk(&self, metadata: &[u8], data: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let mut scratch = Scratch::default();
        self.decode_chunk_with(metadata, data, out, &mut scratch)
    }

    /// [`Self::decode_chunk`] reusing `scratch`'s buffers between calls, for hot loops.
    ///
    /// # Errors
    /// As [`Self::decode_chunk`].
    pub fn decode_chunk_with(
        &self,
        metadata: &[u8],
        data: &[u8],
        out: &mut Vec<u8>,
        scratch: &mut Scratch,
    ) -> Result<()> {
        match self.stages.len() {
            0 => {
                check_no_metadata(metadata)?;
                out.extend_from_slice(data);
                Ok(())
            }
            _ => {
                let Scratch { a, b, spare } = scratch;
                let (md, d) = self.decode_down_to(1, metadata, data, a, b)?;
                let first = &self.stages[0];
                // The first filter appends straight into the caller's buffer.
                spare.metadata.clear();
                let mut last = Decoded {
                    metadata: std::mem::take(&mut spare.metadata),
                    data: std::mem::take(out),
                };
                let res = first.codec.decode(&first.ctx, md, d, &mut last);
                *out = last.data;
                spare.metadata = last.metadata;
                let leftover = spare.metadata.len();
                res?;
                if leftover != 0 {
                    return Err(Error::corrupt(
                        first.filter.filter_type(),
                        format!("{leftover} bytes of chunk metadata left after the first filter"),
                    ));
                }
                Ok(())
            }
        }
    }

    /// Reverse of [`Self::encode_strings`]: appends the strings to `out_data` and their start
    /// offsets (relative to the tile) to `out_offsets`.
    ///
    /// # Errors
    /// When the pipeline is not on the string path or the input is corrupt.
    pub fn decode_strings(
        &self,
        metadata: &[u8],
        data: &[u8],
        out_data: &mut Vec<u8>,
        out_offsets: &mut Vec<u64>,
    ) -> Result<()> {
        let first = self.string_stage()?;
        let (mut a, mut b) = (Decoded::default(), Decoded::default());
        let (md, d) = self.decode_down_to(1, metadata, data, &mut a, &mut b)?;
        match first.filter {
            Filter::Rle { .. } => filters::rle::decode_strings(md, d, out_data, out_offsets),
            _ => filters::dictionary::decode_strings(md, d, out_data, out_offsets),
        }
    }

    fn string_stage(&self) -> Result<&Stage> {
        match self.stages.first() {
            Some(s) if self.string_path && matches!(s.filter, Filter::Rle { .. } | Filter::Dictionary { .. }) => Ok(s),
            _ => Err(Error::Unsupported(
                "the offset-free string path needs a var-sized string field whose first filter is RLE or DICTIONARY".into(),
            )),
        }
    }

    /// Reverses stages `n-1 .. stop`, returning the metadata and data the stage `stop - 1`
    /// must decode (borrowed from the input or from `scratch`).
    fn decode_down_to<'a>(
        &self,
        stop: usize,
        metadata: &'a [u8],
        data: &'a [u8],
        a: &'a mut Decoded,
        b: &'a mut Decoded,
    ) -> Result<(&'a [u8], &'a [u8])> {
        let n = self.stages.len();
        if n <= stop {
            return Ok((metadata, data));
        }
        // Ping-pong between two buffers so a long pipeline allocates at most twice.
        a.clear();
        let top = &self.stages[n - 1];
        top.codec.decode(&top.ctx, metadata, data, a)?;
        let mut cur_is_a = true;
        for i in (stop..n - 1).rev() {
            let stage = &self.stages[i];
            let (src, dst) = if cur_is_a { (&*a, &mut *b) } else { (&*b, &mut *a) };
            dst.clear();
            stage.codec.decode(&stage.ctx, &src.metadata, &src.data, dst)?;
            cur_is_a = !cur_is_a;
        }
        let cur = if cur_is_a { &*a } else { &*b };
        Ok((&cur.metadata, &cur.data))
    }
}

fn check_no_metadata(metadata: &[u8]) -> Result<()> {
    if metadata.is_empty() {
        Ok(())
    } else {
        Err(Error::corrupt(
            FilterType::None,
            format!("chunk has {} metadata bytes but the pipeline is empty", metadata.len()),
        ))
    }
}

/// Reusable buffers for [`PipelineCodec::decode_chunk_with`]; one per worker thread.
#[derive(Debug, Default)]
pub struct Scratch {
    a: Decoded,
    b: Decoded,
    spare: Decoded,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_impossible_filter_count_is_refused_at_its_own_offset() {
        let mut bytes = FilterPipeline::new(vec![Filter::zstd(3)]).to_bytes();
        bytes[4..8].copy_from_slice(&1000u32.to_le_bytes());
        let e = FilterPipeline::parse(&bytes, 22).unwrap_err();
        assert!(
            matches!(
                &e,
                Error::Format(tessera_types::Error::Invalid {
                    structure: "filter pipeline",
                    field: "filter count",
                    offset: 4,
                    ..
                })
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("1000 filters cannot fit in 10 bytes"), "{e}");
    }
}
