//! Stage 1 of the split: what each 64-byte block of the body holds, as bitmasks (bit `i` is the block's byte `i`).
//!
//! The bytes are classified 16 at a time (SSE2 on x86_64, where it is part of the baseline; eight at a time in
//! a `u64` elsewhere, which computes the same masks). From the masks, with three carries from block to block:
//! which bytes a backslash escapes (a backslash run of odd length escapes the byte after it), which bytes lie
//! inside a string (prefix XOR of the unescaped quotes), and the bytes stage 2 must look at — the unescaped
//! quotes, `{ } [ ] , :` outside strings, and the first byte of each number or literal. Nothing here depends on
//! how many escapes a string holds: a block costs the same whatever it contains.

/// What the bytes of a block are, before strings are known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct ByteMasks {
    pub quote: u64,
    pub backslash: u64,
    /// Bytes below 0x20 (never allowed raw inside a string).
    pub control: u64,
    /// Whether any byte is 0x80 or above (part of a multi-byte UTF-8 sequence, or invalid).
    pub non_ascii: bool,
}

/// The bytes that delimit tokens outside strings; computed only for blocks that are not all string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct TokenMasks {
    /// `{ } [ ] , :`
    pub op: u64,
    /// The four bytes JSON allows between tokens: space, tab, line feed, carriage return.
    pub whitespace: u64,
}

/// What stage 2 needs from one block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Block {
    /// Unescaped quotes, `{ } [ ] , :` outside strings, and the first byte of each run of other bytes outside
    /// strings (a number or literal, or an error).
    pub structurals: u64,
    /// Bytes inside strings, opening quotes included, closing quotes not.
    pub in_string: u64,
    /// Control bytes inside strings: each one an error.
    pub control_in_string: u64,
    /// Escaped bytes inside strings other than `"` and `\` (always valid): stage 2 checks each one.
    pub escapes_to_check: u64,
    pub non_ascii: bool,
}

/// What a block's backslashes and quotes make of it.
struct Strings {
    escaped: u64,
    quotes: u64,
    in_string: u64,
}

/// The state carried from one block to the next.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Scanner {
    /// 1 when the previous block ended in a backslash that escapes this block's first byte.
    escaped: u64,
    /// All ones when the previous block ended inside a string.
    in_string: u64,
    /// 1 when the previous block ended in a byte of a number or literal (outside strings).
    other: u64,
}

impl Scanner {
    #[inline(always)]
    pub fn classify(&mut self, block: &[u8; 64]) -> Block {
        let bytes = simd::byte_masks(block);
        let Strings {
            escaped,
            quotes,
            in_string,
        } = self.strings_of(&bytes);
        let outside = !in_string;
        let mut structurals = quotes;
        if outside == 0 {
            self.other = 0;
        } else {
            let tokens = simd::token_masks(block);
            let other = !(tokens.op | tokens.whitespace | bytes.quote) & outside;
            structurals |= (tokens.op & outside) | (other & !((other << 1) | self.other));
            self.other = other >> 63;
        }
        Block {
            structurals,
            in_string,
            control_in_string: bytes.control & in_string,
            escapes_to_check: escaped & in_string & !(bytes.quote | bytes.backslash),
            non_ascii: bytes.non_ascii,
        }
    }

    /// Only which bytes of the block lie inside strings (opening quotes included, closing quotes not), carrying
    /// into the next block as [`Scanner::classify`] does: all a caller that only counts brackets needs.
    #[inline(always)]
    pub fn strings(&mut self, block: &[u8; 64]) -> u64 {
        self.strings_of(&simd::byte_masks(block)).in_string
    }

    /// The escaped bytes, the unescaped quotes and the bytes inside strings, with the carries updated.
    #[inline(always)]
    fn strings_of(&mut self, bytes: &ByteMasks) -> Strings {
        let escaped = self.escaped_bytes(bytes.backslash);
        let quotes = bytes.quote & !escaped;
        // Inside a long string most blocks have no unescaped quote.
        let in_string = match quotes {
            0 => self.in_string,
            _ => prefix_xor(quotes) ^ self.in_string,
        };
        self.in_string = 0u64.wrapping_sub(in_string >> 63);
        Strings {
            escaped,
            quotes,
            in_string,
        }
    }

    /// The bytes of this block that a backslash escapes, carrying a backslash run into the next block (simdjson's
    /// escape scanner: subtracting the run starts from the odd bit positions leaves a 1 where each odd run ends).
    fn escaped_bytes(&mut self, backslash: u64) -> u64 {
        const ODD_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;
        if backslash == 0 {
            return std::mem::take(&mut self.escaped);
        }
        // A backslash the previous block escaped does not escape anything.
        let potential = backslash & !self.escaped;
        let escapes_and_ends = (((potential << 1) | ODD_BITS).wrapping_sub(potential)) ^ ODD_BITS;
        let escaped = escapes_and_ends ^ (backslash | self.escaped);
        self.escaped = (escapes_and_ends & backslash) >> 63;
        escaped
    }
}

/// Bit `i` of the result is the XOR of bits `0..=i` of `x`.
pub(super) fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Where a block's brackets are, inside strings or not.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Brackets {
    /// `{` and `[`
    pub open: u64,
    /// `}` and `]`
    pub close: u64,
}

#[cfg(target_arch = "x86_64")]
pub(super) use sse2 as simd;

#[cfg(not(target_arch = "x86_64"))]
pub(super) use portable as simd;

/// The masks 16 bytes at a time. SSE2 is in every x86_64 CPU; `safe_arch` wraps its intrinsics (those of
/// `core::arch::x86_64`, inlined) as safe functions for a build that has the feature, which every x86_64 build
/// does: calling `core::arch` directly would need `unsafe` (rustc asks for `#[target_feature]` on the caller even
/// when the build enables the feature), which this crate forbids.
#[cfg(target_arch = "x86_64")]
pub(super) mod sse2 {
    use super::{Brackets, ByteMasks, TokenMasks};
    use safe_arch::{
        bitor_m128i as or, cmp_eq_mask_i8_m128i, load_unaligned_m128i, m128i, min_u8_m128i,
        move_mask_i8_m128i, set_splat_i8_m128i,
    };

    fn splat(byte: u8) -> m128i {
        set_splat_i8_m128i(byte as i8)
    }

    /// The top bit of each byte lane, as 16 bits.
    fn bits(v: m128i) -> u64 {
        u64::from(move_mask_i8_m128i(v) as u16)
    }

    fn eq(v: m128i, byte: u8) -> m128i {
        cmp_eq_mask_i8_m128i(v, splat(byte))
    }

    /// min(v, 0x1f) == v exactly where v <= 0x1f (unsigned).
    fn control(v: m128i) -> m128i {
        cmp_eq_mask_i8_m128i(min_u8_m128i(v, splat(0x1f)), v)
    }

    /// The block's four 16-byte lanes.
    fn load(block: &[u8; 64]) -> [m128i; 4] {
        let mut lanes = [splat(0); 4];
        for (lane, chunk) in lanes.iter_mut().zip(block.chunks_exact(16)) {
            if let Ok(chunk) = <&[u8; 16]>::try_from(chunk) {
                *lane = load_unaligned_m128i(chunk);
            }
        }
        lanes
    }

    #[inline]
    pub fn byte_masks(block: &[u8; 64]) -> ByteMasks {
        let mut m = ByteMasks::default();
        let v = load(block);
        for (i, v) in v.into_iter().enumerate() {
            m.quote |= bits(eq(v, b'"')) << (16 * i);
            m.backslash |= bits(eq(v, b'\\')) << (16 * i);
        }
        // Control and non-ASCII bytes are rare: one test for the whole block (its smallest byte, and the top
        // bits of all its bytes), the exact mask only when needed.
        let [a, b, c, d] = v;
        m.non_ascii = bits(or(or(a, b), or(c, d))) != 0;
        if bits(control(min_u8_m128i(
            min_u8_m128i(a, b),
            min_u8_m128i(c, d),
        ))) != 0
        {
            for (i, v) in v.into_iter().enumerate() {
                m.control |= bits(control(v)) << (16 * i);
            }
        }
        m
    }

    #[inline]
    pub fn token_masks(block: &[u8; 64]) -> TokenMasks {
        let mut m = TokenMasks::default();
        for (i, v) in load(block).into_iter().enumerate() {
            let at = 16 * i;
            // `[` and `]` are `{` and `}` without the 0x20 bit.
            let folded = or(v, splat(0x20));
            let op = or(
                or(eq(folded, b'{'), eq(folded, b'}')),
                or(eq(v, b','), eq(v, b':')),
            );
            let whitespace = or(
                or(eq(v, b' '), eq(v, b'\t')),
                or(eq(v, b'\n'), eq(v, b'\r')),
            );
            m.op |= bits(op) << at;
            m.whitespace |= bits(whitespace) << at;
        }
        m
    }

    /// The quotes and backslashes of 16 bytes: where a string may end.
    #[inline]
    pub fn string_stops(chunk: &[u8; 16]) -> u64 {
        let v = load_unaligned_m128i(chunk);
        bits(or(eq(v, b'"'), eq(v, b'\\')))
    }

    #[inline]
    pub fn brackets(block: &[u8; 64]) -> Brackets {
        let mut m = Brackets::default();
        for (i, v) in load(block).into_iter().enumerate() {
            let folded = or(v, splat(0x20));
            m.open |= bits(eq(folded, b'{')) << (16 * i);
            m.close |= bits(eq(folded, b'}')) << (16 * i);
        }
        m
    }
}

/// The same masks eight bytes at a time in a `u64`, for targets without SSE2 (and, on x86_64, for the test that
/// both agree).
#[cfg(any(test, not(target_arch = "x86_64")))]
pub(super) mod portable {
    use super::{Brackets, ByteMasks, TokenMasks};

    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;

    /// The top bit of each byte that is zero (exact: the low seven bits are added without carrying across bytes).
    fn zero(x: u64) -> u64 {
        !(((x & !HIGH) + !HIGH) | x) & HIGH
    }

    fn eq(x: u64, byte: u8) -> u64 {
        zero(x ^ (ONES * u64::from(byte)))
    }

    /// The top bit of each byte below 0x20.
    fn control(x: u64) -> u64 {
        !(((x & !HIGH) + ONES * 0x60) | x) & HIGH
    }

    /// The top bits of the eight bytes gathered into bits 0..8 (byte `k` to bit `k`).
    fn gather(top_bits: u64) -> u64 {
        ((top_bits >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
    }

    fn words(block: &[u8; 64]) -> impl Iterator<Item = (usize, u64)> + '_ {
        block
            .chunks_exact(8)
            .enumerate()
            .map(|(i, w)| (8 * i, u64::from_le_bytes(w.try_into().unwrap_or([0; 8]))))
    }

    pub fn byte_masks(block: &[u8; 64]) -> ByteMasks {
        let mut m = ByteMasks::default();
        for (at, w) in words(block) {
            m.quote |= gather(eq(w, b'"')) << at;
            m.backslash |= gather(eq(w, b'\\')) << at;
            m.control |= gather(control(w)) << at;
            m.non_ascii |= w & HIGH != 0;
        }
        m
    }

    pub fn token_masks(block: &[u8; 64]) -> TokenMasks {
        let mut m = TokenMasks::default();
        for (at, w) in words(block) {
            let folded = w | (ONES * 0x20);
            let op = eq(folded, b'{') | eq(folded, b'}') | eq(w, b',') | eq(w, b':');
            let whitespace = eq(w, b' ') | eq(w, b'\t') | eq(w, b'\n') | eq(w, b'\r');
            m.op |= gather(op) << at;
            m.whitespace |= gather(whitespace) << at;
        }
        m
    }

    pub fn string_stops(chunk: &[u8; 16]) -> u64 {
        chunk.chunks_exact(8).enumerate().fold(0, |m, (i, w)| {
            let w = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
            m | gather(eq(w, b'"') | eq(w, b'\\')) << (8 * i)
        })
    }

    pub fn brackets(block: &[u8; 64]) -> Brackets {
        let mut m = Brackets::default();
        for (at, w) in words(block) {
            let folded = w | (ONES * 0x20);
            m.open |= gather(eq(folded, b'{')) << at;
            m.close |= gather(eq(folded, b'}')) << at;
        }
        m
    }
}

#[cfg(test)]
#[path = "blocks_tests.rs"]
mod tests;
