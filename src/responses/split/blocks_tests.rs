//! Unit and property tests for [`super`]: stage 1's masks, the SSE2 code against the portable code and both against
//! a byte-by-byte reference, and the strings and escapes found block by block against a sequential reading.

use super::*;
use proptest::prelude::*;

/// Byte-by-byte definitions of the masks.
fn reference_masks(block: &[u8; 64]) -> (ByteMasks, TokenMasks) {
    let mut b = ByteMasks::default();
    let mut t = TokenMasks::default();
    for (i, &c) in block.iter().enumerate() {
        let bit = 1u64 << i;
        let set = |mask: &mut u64, yes: bool| {
            if yes {
                *mask |= bit
            }
        };
        set(&mut b.quote, c == b'"');
        set(&mut b.backslash, c == b'\\');
        set(&mut b.control, c < 0x20);
        b.non_ascii |= c >= 0x80;
        set(&mut t.op, b"{}[],:".contains(&c));
        set(&mut t.whitespace, b" \t\n\r".contains(&c));
    }
    (b, t)
}

/// Bytes that matter to the masks, and their neighbours that must not match.
fn mask_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        any::<u8>(),
        prop::sample::select(
            b"\"\\{}[],: \t\n\r\x00\x1f\x20\x7f\x80\xff\x5b\x5d\x7b\x7d\x3b\x2d\x09\x0b\x0c"
                .to_vec()
        ),
    ]
}

proptest! {
    #[test]
    fn sse2_and_portable_masks_agree(
        bytes in prop::array::uniform32(mask_byte()),
        more in prop::array::uniform32(mask_byte()),
    ) {
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&bytes);
        block[32..].copy_from_slice(&more);
        let (bytes_ref, tokens_ref) = reference_masks(&block);
        let mut brackets_ref = Brackets::default();
        for (i, c) in block.iter().enumerate() {
            brackets_ref.open |= u64::from(matches!(c, b'{' | b'[')) << i;
            brackets_ref.close |= u64::from(matches!(c, b'}' | b']')) << i;
        }
        prop_assert_eq!(portable::byte_masks(&block), bytes_ref);
        prop_assert_eq!(portable::token_masks(&block), tokens_ref);
        prop_assert_eq!(portable::brackets(&block), brackets_ref);
        let mut chunk = [0u8; 16];
        chunk.copy_from_slice(&block[..16]);
        let stops_ref = (bytes_ref.quote | bytes_ref.backslash) & 0xffff;
        prop_assert_eq!(portable::string_stops(&chunk), stops_ref);
        #[cfg(target_arch = "x86_64")]
        prop_assert_eq!(sse2::string_stops(&chunk), stops_ref);
        #[cfg(target_arch = "x86_64")]
        {
            prop_assert_eq!(sse2::byte_masks(&block), bytes_ref);
            prop_assert_eq!(sse2::token_masks(&block), tokens_ref);
            prop_assert_eq!(sse2::brackets(&block), brackets_ref);
        }
    }

    /// Escapes and strings found block by block with carries, against reading the bytes one at a time (stage 1
    /// lets a backslash escape the next byte wherever it stands; outside strings stage 2 refuses it anyway).
    #[test]
    fn escapes_and_strings_match_a_sequential_reading(
        text in prop::collection::vec(prop::sample::select(b"\\\\\\\"\"an{".to_vec()), 0..400)
    ) {
        let mut scanner = Scanner::default();
        let (mut in_string, mut to_check) = (Vec::new(), Vec::new());
        for chunk in text.chunks(64) {
            let mut block = [b' '; 64];
            block[..chunk.len()].copy_from_slice(chunk);
            let classified = scanner.classify(&block);
            in_string.extend((0..chunk.len()).map(|i| classified.in_string >> i & 1 == 1));
            to_check.extend((0..chunk.len()).map(|i| classified.escapes_to_check >> i & 1 == 1));
        }
        let (mut inside, mut escaped) = (false, false);
        for (i, &c) in text.iter().enumerate() {
            let was_escaped = escaped;
            escaped = !was_escaped && c == b'\\';
            // The mask counts an opening quote in and a closing quote out.
            let opening = !was_escaped && c == b'"' && !inside;
            let closing = !was_escaped && c == b'"' && inside;
            let expected = (inside || opening) && !closing;
            inside = expected;
            let what = String::from_utf8_lossy(&text);
            prop_assert_eq!(in_string[i], expected, "in string: byte {} of {:?}", i, what);
            let check = was_escaped && inside && c != b'"' && c != b'\\';
            prop_assert_eq!(to_check[i], check, "escape to check: byte {} of {:?}", i, what);
        }
    }
}

#[test]
fn prefix_xor_is_a_running_parity() {
    for x in [0u64, 1, 0b1001, 1 << 63, u64::MAX, 0x8000_0000_0000_0001] {
        let mut parity = 0;
        for i in 0..64 {
            parity ^= x >> i & 1;
            assert_eq!(prefix_xor(x) >> i & 1, parity, "{x:#x} bit {i}");
        }
    }
}
