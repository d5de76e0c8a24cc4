//! Stage 1 alone: where a string or a container ends, without the grammar.
//!
//! `expand::skim` reads a few members of the upstream's JSON answers and relays the rest unchanged, so it only has
//! to find where each skipped value ends. The same block masks that make the body split's cost independent of
//! escapes find that too: a string's end 16 bytes at a time, a container's by counting the brackets outside
//! strings 64 bytes at a time. Nothing else is checked (no grammar, no bracket kinds matched).

use super::blocks::{self, Scanner};
use super::blocks_of;

/// Where the object or array whose bracket is at `at` ends (the byte after its close), found with stage 1 alone:
/// strings found with the block masks, and the brackets outside them counted; nothing else is checked (no
/// grammar, no kinds matched). For `expand::skim`, which reads a few members of upstream JSON it relays unchanged
/// and must only find where each skipped value ends. `None` when the container does not close.
pub fn container_end(b: &[u8], at: usize) -> Option<usize> {
    let rest = b.get(at..)?;
    let close = match rest.first() {
        Some(b'{') => b'}',
        Some(b'[') => b']',
        _ => return None,
    };
    // An empty container (`[]`, `{ }`: an answer's `logprobs` and `annotations`) ends at its first byte that is
    // not whitespace, without classifying a block of bytes.
    if let Some(i) = rest
        .iter()
        .skip(1)
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        && rest.get(i + 1) == Some(&close)
    {
        return Some(at + i + 2);
    }
    let mut scanner = Scanner::default();
    let mut depth = 0u32;
    let mut padded = [b' '; 64];
    for (block, base) in blocks_of(rest, &mut padded) {
        let outside = !scanner.strings(block);
        let brackets = blocks::simd::brackets(block);
        let (open, close) = (brackets.open & outside, brackets.close & outside);
        if close == 0 {
            depth += open.count_ones();
            continue;
        }
        let mut each = open | close;
        while each != 0 {
            let i = each.trailing_zeros();
            each &= each - 1;
            if open >> i & 1 == 1 {
                depth += 1;
            } else {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + base + i as usize + 1);
                }
            }
        }
    }
    None
}

/// Where the string whose opening quote is at `at` ends (the byte after its closing quote), 16 bytes at a time;
/// escapes are skipped, not checked. For `expand::skim`, like [`container_end`]. `None` when it does not close.
pub fn string_end(b: &[u8], at: usize) -> Option<usize> {
    string_end_escaped(b, at).map(|(end, _)| end)
}

/// [`string_end`], and whether the string holds a backslash: a member's key found without one is its own decoded
/// form, so it is compared as it stands (the scan has looked at those bytes already).
#[inline]
pub fn string_end_escaped(b: &[u8], at: usize) -> Option<(usize, bool)> {
    let mut escaped = false;
    let mut i = at + 1;
    loop {
        let stop = match b.get(i..i + 16).and_then(|c| <&[u8; 16]>::try_from(c).ok()) {
            Some(chunk) => match blocks::simd::string_stops(chunk) {
                0 => {
                    i += 16;
                    continue;
                }
                stops => i + stops.trailing_zeros() as usize,
            },
            None => i + b.get(i..)?.iter().position(|c| matches!(c, b'"' | b'\\'))?,
        };
        match b.get(stop)? {
            b'"' => return Some((stop + 1, escaped)),
            // A backslash escapes the byte after it (a `\uXXXX` escape's digits hold no quote or backslash).
            _ => {
                escaped = true;
                i = stop + 2;
            }
        }
    }
}
