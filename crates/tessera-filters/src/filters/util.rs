//! Small helpers shared by the byte-level filters: fixed-width integers generic over their
//! width, the common `u32 n, u32 len × n` part-size header, and output rollback on errors.

use tessera_types::{ByteReader, FilterType};

use crate::{Decoded, Error, Result};

/// A fixed-width integer as the window filters (bit-width reduction, positive delta) and XOR
/// see it: little-endian, with C-like wrapping arithmetic.
pub(crate) trait Int:
    Copy + Ord + Default + std::fmt::Debug + Send + Sync + 'static
{
    /// Width in bytes.
    const SIZE: usize;
    /// Whether the type is signed (narrow stored values are then sign-extended).
    const SIGNED: bool;
    /// The value of the first `SIZE` bytes of `b`, which must hold at least `SIZE` bytes.
    fn load(b: &[u8]) -> Self;
    /// Writes the little-endian bytes of `self` into the first `SIZE` bytes of `out`.
    fn store(self, out: &mut [u8]);
    /// Appends the little-endian bytes of `self`.
    fn push(self, out: &mut Vec<u8>);
    /// `self + o`, wrapping.
    fn wrapping_add(self, o: Self) -> Self;
    /// `self - o`, wrapping.
    fn wrapping_sub(self, o: Self) -> Self;
    /// `self - o`, or `None` on overflow.
    fn checked_sub(self, o: Self) -> Option<Self>;
    /// `self + 1`, or `None` on overflow.
    fn checked_inc(self) -> Option<Self>;
    /// `self ^ o`.
    fn xor(self, o: Self) -> Self;
    /// The value converted from the low bytes of `v`, as a C cast to this type does.
    fn from_u64_wrapping(v: u64) -> Self;
    /// The value as `i128`, without loss.
    fn to_i128(self) -> i128;
}

macro_rules! impl_int {
    ($($t:ty => $signed:expr),* $(,)?) => {$(
        impl Int for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const SIGNED: bool = $signed;
            #[inline(always)]
            fn load(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..Self::SIZE]);
                <$t>::from_le_bytes(a)
            }
            #[inline(always)]
            fn store(self, out: &mut [u8]) {
                out[..Self::SIZE].copy_from_slice(&self.to_le_bytes());
            }
            #[inline(always)]
            fn push(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[inline(always)]
            fn wrapping_add(self, o: Self) -> Self {
                <$t>::wrapping_add(self, o)
            }
            #[inline(always)]
            fn wrapping_sub(self, o: Self) -> Self {
                <$t>::wrapping_sub(self, o)
            }
            #[inline(always)]
            fn checked_sub(self, o: Self) -> Option<Self> {
                <$t>::checked_sub(self, o)
            }
            #[inline(always)]
            fn checked_inc(self) -> Option<Self> {
                <$t>::checked_add(self, 1)
            }
            #[inline(always)]
            fn xor(self, o: Self) -> Self {
                self ^ o
            }
            #[inline(always)]
            fn from_u64_wrapping(v: u64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i128(self) -> i128 {
                i128::from(self)
            }
        }
    )*};
}

impl_int!(i8 => true, u8 => false, i16 => true, u16 => false, i32 => true, u32 => false,
    i64 => true, u64 => false);

/// Reads a `W`-byte little-endian integer from the front of `b`, sign-extended when `T` is
/// signed and zero-extended otherwise, converted to `T` as a C cast does.
#[inline(always)]
pub(crate) fn widen<T: Int, const W: usize>(b: &[u8]) -> T {
    let mut a = [0u8; 8];
    a[..W].copy_from_slice(&b[..W]);
    let mut v = u64::from_le_bytes(a);
    if T::SIGNED && W < 8 {
        let shift = 64 - 8 * W as u32;
        v = (((v << shift) as i64) >> shift) as u64;
    }
    T::from_u64_wrapping(v)
}

/// The integer type a window filter runs `run` with for a TileDB datatype, or `None` when the
/// filter passes data of that type through.
macro_rules! dispatch_int {
    ($int:expr, $run:ident ( $($arg:expr),* )) => {
        match $int {
            $crate::filters::util::IntKind::I8 => $run::<i8>($($arg),*),
            $crate::filters::util::IntKind::U8 => $run::<u8>($($arg),*),
            $crate::filters::util::IntKind::I16 => $run::<i16>($($arg),*),
            $crate::filters::util::IntKind::U16 => $run::<u16>($($arg),*),
            $crate::filters::util::IntKind::I32 => $run::<i32>($($arg),*),
            $crate::filters::util::IntKind::U32 => $run::<u32>($($arg),*),
            $crate::filters::util::IntKind::I64 => $run::<i64>($($arg),*),
            $crate::filters::util::IntKind::U64 => $run::<u64>($($arg),*),
        }
    };
}
pub(crate) use dispatch_int;

/// One of the eight integer types a filter can compute with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntKind {
    /// `i8`.
    I8,
    /// `u8`.
    U8,
    /// `i16`.
    I16,
    /// `u16`.
    U16,
    /// `i32`.
    I32,
    /// `u32`.
    U32,
    /// `i64`.
    I64,
    /// `u64`.
    U64,
}

/// Appends the `u32 n_parts, u32 len × n_parts` header of the shuffle, XOR and scale-float
/// filters.
pub(crate) fn write_part_sizes(
    filter: FilterType,
    sizes: impl ExactSizeIterator<Item = usize>,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.extend_from_slice(&u32_len(filter, sizes.len(), "part count")?.to_le_bytes());
    for s in sizes {
        out.extend_from_slice(&u32_len(filter, s, "part length")?.to_le_bytes());
    }
    Ok(())
}

/// `n` as the `u32` libtiledb stores, or an encode error when it does not fit.
pub(crate) fn u32_len(filter: FilterType, n: usize, what: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::encode(filter, format!("{what} {n} does not fit in a u32")))
}

/// Reads the part count of a `u32 n_parts, u32 len × n_parts` header, checking that the `n`
/// lengths fit in what is left of the metadata.
pub(crate) fn read_part_count(r: &mut ByteReader<'_>, filter: FilterType) -> Result<usize> {
    let n = r.u32("part count")? as usize;
    if n.checked_mul(4).is_none_or(|b| b > r.remaining()) {
        return Err(Error::corrupt(
            filter,
            format!("{n} part lengths cannot fit in {} metadata bytes", r.remaining()),
        ));
    }
    Ok(n)
}

/// Runs `f`, and if it fails, truncates both of `out`'s buffers back to their lengths before
/// the call, so a failed decode leaves the caller's bytes exactly as they were.
pub(crate) fn rollback_on_error(
    out: &mut Decoded,
    f: impl FnOnce(&mut Decoded) -> Result<()>,
) -> Result<()> {
    let (md, data) = (out.metadata.len(), out.data.len());
    let res = f(out);
    if res.is_err() {
        out.metadata.truncate(md);
        out.data.truncate(data);
    }
    res
}

/// Passes metadata and data through unchanged (the filter does not apply to the datatype).
pub(crate) fn pass_through(metadata: &[u8], data: &[u8], out: &mut Decoded) {
    out.metadata.extend_from_slice(metadata);
    out.data.extend_from_slice(data);
}

/// Puts `header` in front of the input metadata parts, as libtiledb's `prepend_buffer` does.
pub(crate) fn prepend_header(header: Vec<u8>, input_md: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut md = Vec::with_capacity(input_md.len() + 1);
    md.push(header);
    md.extend(input_md);
    md
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Helpers for the filter unit tests.

    use tessera_types::Datatype;

    use crate::{Decoded, Filter, FilterCodec, FilterContext, Parts};

    /// The deterministic generator the golden vectors were made with (the Python generator
    /// that wrote them through tiledb-py 0.36.1 / libtiledb 2.30 computes the same): a 64-bit
    /// LCG whose outputs are the top 31 bits.
    pub(crate) fn lcg(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                x >> 33
            })
            .collect()
    }

    /// `n` values of `size` bytes: the low bytes of `f(i, lcg(seed)[i])`, little-endian.
    pub(crate) fn make(
        n: usize,
        seed: u64,
        size: usize,
        f: impl Fn(usize, i128) -> i128,
    ) -> Vec<u8> {
        let r = lcg(seed, n);
        (0..n).flat_map(|i| f(i, i128::from(r[i])).to_le_bytes()[..size].to_vec()).collect()
    }

    /// `n` values of `size` bytes: the bytes of the float `f(i, lcg(seed)[i])` (as `f32` when
    /// `size` is 4).
    pub(crate) fn make_float(
        n: usize,
        seed: u64,
        size: usize,
        f: impl Fn(usize, i128) -> f64,
    ) -> Vec<u8> {
        let r = lcg(seed, n);
        (0..n)
            .flat_map(|i| {
                let v = f(i, i128::from(r[i]));
                if size == 4 { (v as f32).to_le_bytes().to_vec() } else { v.to_le_bytes().to_vec() }
            })
            .collect()
    }

    /// The bytes of hex text (whitespace ignored), for golden vectors.
    pub(crate) fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// Var-sized cells as one data buffer and their start offsets.
    pub(crate) fn strings(cells: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for c in cells {
            offsets.push(data.len() as u64);
            data.extend_from_slice(c);
        }
        (data, offsets)
    }

    /// Lower-case hex of `b`.
    pub(crate) fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// SHA-256 of `b` in hex.
    pub(crate) fn sha256_hex(b: &[u8]) -> String {
        use sha2::Digest;
        hex(&sha2::Sha256::digest(b))
    }

    /// A context for `datatype` at format version 22.
    pub(crate) fn ctx(datatype: Datatype) -> FilterContext {
        FilterContext { datatype, cell_size: datatype.size(), version: 22 }
    }

    /// Encodes one chunk with `filter` alone and returns the concatenated (metadata, data).
    pub(crate) fn encode(filter: &Filter, ctx: &FilterContext, data: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let codec = filter.codec().unwrap();
        let parts = codec.encode(ctx, Parts::from_data(data.to_vec())).unwrap();
        (parts.metadata.concat(), parts.data.concat())
    }

    /// Checks that a libtiledb-written chunk (single filter) is what we write for `input` and
    /// decodes back to `back` (the values libtiledb reads, `input` unless lossy).
    pub(crate) fn check_golden(
        filter: &Filter,
        datatype: Datatype,
        input: &[u8],
        md_hex: &str,
        data_sha: &str,
        back_sha: &str,
    ) {
        let ctx = ctx(datatype);
        let (md, data) = encode(filter, &ctx, input);
        assert_eq!(hex(&md), md_hex, "metadata of {filter:?} on {datatype}");
        assert_eq!(sha256_hex(&data), data_sha, "data of {filter:?} on {datatype}");
        let mut out = Decoded::default();
        filter.codec().unwrap().decode(&ctx, &md, &data, &mut out).unwrap();
        assert!(out.metadata.is_empty());
        assert_eq!(sha256_hex(&out.data), back_sha, "decoded {filter:?} on {datatype}");
    }

    /// Encodes `parts` with `codec` and decodes the result after junk already in the output,
    /// returning the decoded (metadata, data) without the junk.
    pub(crate) fn round_trip_parts(
        codec: &dyn FilterCodec,
        ctx: &FilterContext,
        parts: Parts,
    ) -> (Vec<u8>, Vec<u8>) {
        let enc = codec.encode(ctx, parts).unwrap();
        let (md, data) = (enc.metadata.concat(), enc.data.concat());
        let mut out = Decoded { metadata: b"junk-md".to_vec(), data: b"junk-data".to_vec() };
        codec.decode(ctx, &md, &data, &mut out).unwrap();
        assert!(out.metadata.starts_with(b"junk-md"));
        assert!(out.data.starts_with(b"junk-data"));
        if let Some(h) = codec.decoded_len_hint(&md, &data) {
            assert!(h >= out.data.len() - 9, "hint {h} below {}", out.data.len() - 9);
        }
        (out.metadata[7..].to_vec(), out.data[9..].to_vec())
    }

    /// Round-trips `data` as one part and checks it comes back unchanged.
    pub(crate) fn assert_round_trip(filter: &Filter, ctx: &FilterContext, data: &[u8]) {
        let codec = filter.codec().unwrap();
        let (md, back) = round_trip_parts(codec.as_ref(), ctx, Parts::from_data(data.to_vec()));
        assert!(md.is_empty());
        assert_eq!(back, data, "{filter:?} on {} with {} bytes", ctx.datatype, data.len());
    }

    /// Sample values of `datatype` (`n` of them) mixing small ranges and extremes.
    pub(crate) fn sample(datatype: Datatype, n: usize, seed: u64) -> Vec<u8> {
        let size = datatype.size();
        let r = lcg(seed, n);
        let mut out = Vec::with_capacity(n * size);
        for (i, x) in r.iter().enumerate() {
            let v: u64 = match (i / 40) % 4 {
                0 => x % 50,
                1 => x.wrapping_mul(*x),
                2 => 1000 + (x % 3),
                _ => x % 70_000,
            };
            out.extend_from_slice(&v.to_le_bytes()[..size]);
        }
        out
    }

    /// Every datatype a window filter treats as an integer of some width.
    pub(crate) const INT_TYPES: &[Datatype] = &[
        Datatype::Int8,
        Datatype::UInt8,
        Datatype::Int16,
        Datatype::UInt16,
        Datatype::Int32,
        Datatype::UInt32,
        Datatype::Int64,
        Datatype::UInt64,
        Datatype::DatetimeMs,
        Datatype::TimeNs,
        Datatype::Float32,
        Datatype::Float64,
        Datatype::Char,
        Datatype::Blob,
        Datatype::StringAscii,
    ];

    /// Feeds truncated, bit-flipped and length-inflated variants of an encoded chunk to the
    /// decoder; it must return (Ok or Err) without panicking, and leave prior bytes alone.
    pub(crate) fn assert_no_panic_on_corruption(
        codec: &dyn FilterCodec,
        ctx: &FilterContext,
        md: &[u8],
        data: &[u8],
    ) {
        let run = |m: &[u8], d: &[u8]| {
            let mut out = Decoded { metadata: vec![7], data: vec![9] };
            let res = codec.decode(ctx, m, d, &mut out);
            let _ = codec.decoded_len_hint(m, d);
            assert_eq!(out.metadata[0], 7);
            assert_eq!(out.data[0], 9);
            if res.is_err() {
                assert_eq!(out.metadata.len(), 1);
                assert_eq!(out.data.len(), 1);
            }
        };
        run(md, data);
        for cut in 0..md.len() {
            run(&md[..cut], data);
        }
        for cut in (0..data.len()).step_by(data.len() / 64 + 1) {
            run(md, &data[..cut]);
        }
        run(md, &data[..data.len().saturating_sub(1)]);
        let mut rng = lcg(99, md.len() * 8 + 64).into_iter();
        for bit in 0..md.len() * 8 {
            let mut m = md.to_vec();
            m[bit / 8] ^= 1 << (bit % 8);
            run(&m, data);
        }
        for _ in 0..32 {
            if data.is_empty() {
                break;
            }
            let mut d = data.to_vec();
            let at = rng.next().unwrap_or(0) as usize % d.len();
            d[at] ^= 0x5a;
            run(md, &d);
        }
        for at in 0..md.len().saturating_sub(3) {
            for v in [u32::MAX, 0x7fff_ffff, 0x8000_0000, data.len() as u32 + 1, 0, 1, 3] {
                let mut m = md.to_vec();
                m[at..at + 4].copy_from_slice(&v.to_le_bytes());
                run(&m, data);
            }
        }
        for at in 0..md.len().saturating_sub(7) {
            let mut m = md.to_vec();
            m[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
            run(&m, data);
        }
        let mut longer = data.to_vec();
        longer.extend_from_slice(&[1, 2, 3]);
        run(md, &longer);
        let mut more_md = md.to_vec();
        more_md.extend_from_slice(&[0xff; 5]);
        run(&more_md, data);
    }
}
