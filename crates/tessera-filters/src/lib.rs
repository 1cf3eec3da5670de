//! Every TileDB 2.30 filter, byte for byte.
//!
//! A [`Filter`] is one stage's options as stored on disk; a [`FilterPipeline`] is the ordered
//! list stored in a schema or a generic-tile header. To run a pipeline over data, build a
//! [`PipelineCodec`] once for the field's datatype and cell size, then call
//! [`PipelineCodec::encode_chunk`] (write path, TileDB's "forward") or
//! [`PipelineCodec::decode_chunk`] (read path, "reverse") on each chunk of a tile. Chunking and
//! tile framing live one layer up, in `tessera-tile`.
//!
//! ```
//! use tessera_filters::{Filter, FilterPipeline};
//! use tessera_types::Datatype;
//!
//! let pipeline = FilterPipeline::new(vec![Filter::DoubleDelta { level: -1, reinterpret: Datatype::Any }]);
//! let codec = pipeline.codec(Datatype::Int32, 4, 22).unwrap();
//! let values: Vec<u8> = (0..100i32).flat_map(|v| (v * 3).to_le_bytes()).collect();
//! let encoded = codec.encode_chunk(&values).unwrap();
//! let mut decoded = Vec::new();
//! codec.decode_chunk(&encoded.metadata, &encoded.data, &mut decoded).unwrap();
//! assert_eq!(decoded, values);
//! ```

mod codec;
mod error;
mod filter;
mod filters;
mod pipeline;

pub use codec::{Decoded, FilterCodec, FilterContext, Parts};
pub use error::{Error, Result};
pub use filter::Filter;
pub use pipeline::{EncodedChunk, FilterPipeline, PipelineCodec, Scratch};
