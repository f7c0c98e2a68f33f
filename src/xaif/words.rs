//! Byte searches eight bytes at a time, in a `u64`, for the scans that find where tags, names
//! and white space end (the lexer's and the validator's). SIMD intrinsics would take sixteen at
//! a time, but they need `unsafe`; these need nothing, and with two words per step the tag scan
//! is as fast as the intrinsics were.
//!
//! A search answers with flags: bit 7 of byte `k` of the result stands for byte `k` of the
//! word (the first byte of the input is the word's lowest), every other bit clear.
//! [`first_flagged`] turns the lowest flag back into an index.

/// Each byte `0x01`.
const ONES: u64 = u64::from_le_bytes([0x01; 8]);
/// Each byte `0x7F`: all but the flag bit.
const LOW_SEVEN: u64 = u64::from_le_bytes([0x7F; 8]);
/// Each byte `0x80`: the flag bits.
const FLAGS: u64 = u64::from_le_bytes([0x80; 8]);

/// Each byte a space.
pub(super) const SPACES: u64 = u64::from_le_bytes([b' '; 8]);

/// The eight bytes `bytes` holds, the first lowest.
#[inline(always)]
pub(super) fn word(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().expect("eight bytes"))
}

/// Flags on the bytes of `word` that are `byte`, every one of them and no other.
#[inline(always)]
pub(super) fn equal(word: u64, byte: u8) -> u64 {
    zero_bytes(word ^ (ONES * u64::from(byte)))
}

/// Flags on the bytes of `word` that are `byte`, for finding the first: the lowest flag is the
/// first such byte, but a byte after a match may be flagged too (one less operation than
/// [`equal`]; the borrow of a matching byte can carry into the next).
#[inline(always)]
pub(super) fn equal_first(word: u64, byte: u8) -> u64 {
    let x = word ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & FLAGS
}

/// Flags on the bytes of `word` that are at most a space: white space, and the control
/// characters, which no tag or name holds.
#[inline(always)]
pub(super) fn at_most_space(word: u64) -> u64 {
    // Adding 0x5F to the low seven bits reaches the flag bit from 0x21 on; bytes from 0x80 on
    // have it already. No byte carries into the next (0x7F + 0x5F < 0x100).
    !((word & LOW_SEVEN).wrapping_add(ONES * 0x5F) | word) & FLAGS
}

/// Flags on the bytes of `x` that are zero, every one of them and no other.
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    // The low seven bits plus 0x7F reach the flag bit unless they are all clear; the byte's
    // own flag bit then tells 0x00 from 0x80. No byte carries into the next.
    !((x & LOW_SEVEN).wrapping_add(LOW_SEVEN) | x) & FLAGS
}

/// The index of the byte the lowest flag of `flags` stands for (`flags` is not zero).
#[inline(always)]
pub(super) fn first_flagged(flags: u64) -> usize {
    flags.trailing_zeros() as usize / 8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags a search should give, computed a byte at a time.
    fn flags_of(bytes: [u8; 8], hit: impl Fn(u8) -> bool) -> u64 {
        bytes.iter().enumerate().fold(0, |flags, (k, &b)| if hit(b) { flags | 0x80 << (8 * k) } else { flags })
    }

    proptest::proptest! {
        /// The exact searches flag what a byte at a time finds; the first-only search agrees on
        /// the first byte it flags. Bytes next to the searched ones, and the extremes, are
        /// likelier than chance, as that is where borrows and carries would go wrong.
        #[test]
        fn searches_agree_with_a_byte_at_a_time(
            bytes in proptest::array::uniform8(proptest::prop_oneof![
                proptest::sample::select(vec![0x00, 0x01, 0x1F, 0x20, 0x21, b'"', b'#', b'>', b'?', b'=', 0x7F, 0x80, 0xA0, 0xFF]),
                proptest::num::u8::ANY,
            ]),
            byte in proptest::sample::select(vec![b'"', b'>', b'\'', b'/', 0x00, 0x80, 0xFF]),
        ) {
            let w = u64::from_le_bytes(bytes);
            proptest::prop_assert_eq!(equal(w, byte), flags_of(bytes, |b| b == byte));
            proptest::prop_assert_eq!(at_most_space(w), flags_of(bytes, |b| b <= b' '));
            let first = bytes.iter().position(|&b| b == byte);
            let found = Some(equal_first(w, byte)).filter(|&f| f != 0).map(first_flagged);
            proptest::prop_assert_eq!(found, first);
        }
    }

    #[test]
    fn words_hold_the_first_byte_lowest() {
        assert_eq!(word(b"abcdefgh"), u64::from_le_bytes(*b"abcdefgh"));
        assert_eq!(first_flagged(equal(word(b"abc>efgh"), b'>')), 3);
    }
}
