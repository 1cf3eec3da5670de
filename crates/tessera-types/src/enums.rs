//! The small one-byte enums of the format, each with its on-disk ID.

use crate::{Error, Result};

macro_rules! id_enum {
    ($(#[$doc:meta])* $ty:ident, $kind:literal { $( $(#[$vdoc:meta])* $variant:ident = $id:literal, $name:literal; )* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $ty {
            $( $(#[$vdoc])* $variant = $id, )*
        }

        impl $ty {
            /// Every value, in ID order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant,)*];

            /// The on-disk ID.
            pub const fn id(self) -> u8 {
                self as u8
            }

            /// The value stored on disk as `id`.
            ///
            /// # Errors
            /// [`Error::UnknownId`] for an ID TileDB 2.30 does not define.
            pub fn from_id(id: u8) -> Result<Self> {
                match id {
                    $( $id => Ok($ty::$variant), )*
                    _ => Err(Error::UnknownId { kind: $kind, id: u64::from(id) }),
                }
            }

            /// The lowercase name used in Tessera's JSON and CLI.
            pub const fn name(self) -> &'static str {
                match self { $( $ty::$variant => $name, )* }
            }

            /// The value named `name` (as [`Self::name`] prints it).
            ///
            /// # Errors
            /// [`Error::UnknownName`] when nothing has that name.
            pub fn from_name(name: &str) -> Result<Self> {
                match name {
                    $( $name => Ok($ty::$variant), )*
                    _ => Err(Error::UnknownName { kind: $kind, name: name.to_owned() }),
                }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

id_enum! {
    /// Tile order, cell order and query layout.
    Layout, "layout" {
        /// Row-major: the last dimension varies fastest.
        RowMajor = 0, "row-major";
        /// Column-major: the first dimension varies fastest.
        ColMajor = 1, "col-major";
        /// The array's tile order, then cell order.
        GlobalOrder = 2, "global";
        /// Any order (query layout only).
        Unordered = 3, "unordered";
        /// Hilbert curve order (sparse cell order only).
        Hilbert = 4, "hilbert";
    }
}

id_enum! {
    /// Dense or sparse array.
    ArrayType, "array type" {
        /// Every cell of the domain exists; unwritten cells read as fill values.
        Dense = 0, "dense";
        /// Only written cells exist, addressed by coordinates.
        Sparse = 1, "sparse";
    }
}

id_enum! {
    /// The `Compressor` enum stored as the first option byte of compression-like filters.
    Compressor, "compressor" {
        /// No compression.
        None = 0, "none";
        /// zlib stream.
        Gzip = 1, "gzip";
        /// zstd frame.
        Zstd = 2, "zstd";
        /// Raw LZ4 block.
        Lz4 = 3, "lz4";
        /// Run-length encoding.
        Rle = 4, "rle";
        /// bzip2 stream.
        Bzip2 = 5, "bzip2";
        /// Double-delta encoding.
        DoubleDelta = 6, "double_delta";
        /// Dictionary encoding of strings.
        Dictionary = 7, "dictionary";
        /// Delta encoding.
        Delta = 8, "delta";
    }
}

id_enum! {
    /// Filter type IDs as stored in a serialized filter pipeline.
    FilterType, "filter type" {
        /// No-op filter (also a compression filter with compressor NONE).
        None = 0, "none";
        /// zlib compression.
        Gzip = 1, "gzip";
        /// zstd compression.
        Zstd = 2, "zstd";
        /// LZ4 block compression.
        Lz4 = 3, "lz4";
        /// Run-length encoding.
        Rle = 4, "rle";
        /// bzip2 compression.
        Bzip2 = 5, "bzip2";
        /// Double-delta encoding.
        DoubleDelta = 6, "double_delta";
        /// Bit-width reduction in windows.
        BitWidthReduction = 7, "bit_width_reduction";
        /// Bit transpose (bitshuffle).
        Bitshuffle = 8, "bitshuffle";
        /// Byte transpose (byteshuffle).
        Byteshuffle = 9, "byteshuffle";
        /// Positive delta in windows.
        PositiveDelta = 10, "positive_delta";
        /// AES-256-GCM encryption (internal; only in generic-tile headers).
        EncryptionAes256Gcm = 11, "encryption_aes256gcm";
        /// MD5 checksum.
        ChecksumMd5 = 12, "checksum_md5";
        /// SHA-256 checksum.
        ChecksumSha256 = 13, "checksum_sha256";
        /// Dictionary encoding (strings).
        Dictionary = 14, "dictionary";
        /// Float to scaled integer.
        ScaleFloat = 15, "scale_float";
        /// XOR with the previous value.
        Xor = 16, "xor";
        /// WebP image compression.
        Webp = 18, "webp";
        /// Delta encoding.
        Delta = 19, "delta";
    }
}

id_enum! {
    /// Encryption of generic tiles and data files.
    EncryptionType, "encryption type" {
        /// Not encrypted.
        NoEncryption = 0, "none";
        /// AES-256-GCM.
        Aes256Gcm = 1, "aes-256-gcm";
    }
}

id_enum! {
    /// Declared order of an attribute's (or dimension label's) values.
    DataOrder, "data order" {
        /// No order.
        Unordered = 0, "unordered";
        /// Non-decreasing along the array's order.
        Increasing = 1, "increasing";
        /// Non-increasing along the array's order.
        Decreasing = 2, "decreasing";
    }
}

id_enum! {
    /// Kind of a schema's current domain.
    CurrentDomainType, "current domain type" {
        /// One range per dimension.
        NdRectangle = 0, "ndrectangle";
    }
}

id_enum! {
    /// Pixel layout given to the WebP filter.
    WebpInputFormat, "webp input format" {
        /// Not set (rejected by the encoder).
        None = 0, "none";
        /// 3 bytes per pixel, red first.
        Rgb = 1, "rgb";
        /// 3 bytes per pixel, blue first.
        Bgr = 2, "bgr";
        /// 4 bytes per pixel with alpha, red first.
        Rgba = 3, "rgba";
        /// 4 bytes per pixel with alpha, blue first.
        Bgra = 4, "bgra";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for f in FilterType::ALL {
            assert_eq!(FilterType::from_id(f.id()).unwrap(), *f);
            assert_eq!(FilterType::from_name(f.name()).unwrap(), *f);
        }
        assert!(FilterType::from_id(17).is_err());
        assert!(FilterType::from_id(20).is_err());
        assert_eq!(Compressor::from_id(8).unwrap(), Compressor::Delta);
        assert_eq!(Layout::from_id(4).unwrap(), Layout::Hilbert);
        assert!(ArrayType::from_id(2).is_err());
    }
}
