//! Comparing short byte strings inline.
//!
//! The standard library compares slices through `memcmp`. Names in XAIF are mostly a dozen
//! bytes or fewer, and on those the call and its set-up cost more than the comparing: the
//! reader compares every tag's prefix, every end tag's name and every interned name this way.

/// `a == b` for slices of the same length (the caller knows they are): a few word comparisons
/// for up to 16 bytes, the library's comparison above.
#[inline(always)]
pub(crate) fn same_length_eq(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap_or_default());
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap_or_default());
    match n {
        17.. => a == b,
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        _ => a.iter().zip(b).all(|(x, y)| x == y),
    }
}

/// `a == b`, as [`same_length_eq`] once the lengths agree.
#[inline(always)]
pub(crate) fn eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && same_length_eq(a, b)
}

/// `bytes.starts_with(prefix)`, as [`same_length_eq`].
#[inline(always)]
pub(crate) fn starts_with(bytes: &[u8], prefix: &[u8]) -> bool {
    bytes.get(..prefix.len()).is_some_and(|head| same_length_eq(head, prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-wise comparisons agree with the library's on every length up to 24 and a
    /// difference at every position.
    #[test]
    fn comparisons_agree_with_the_librarys() {
        let text: Vec<u8> = (0..24u8).map(|i| b'a' + i).collect();
        for n in 0..=24 {
            let a = &text[..n];
            assert!(same_length_eq(a, a) && eq(a, a) && starts_with(&text, a), "length {n}");
            for at in 0..n {
                let mut b = a.to_vec();
                b[at] ^= 0x20;
                assert!(!same_length_eq(a, &b) && !eq(a, &b), "length {n}, difference at {at}");
                assert!(!starts_with(&text, &b), "length {n}, difference at {at}");
            }
            assert!(!eq(a, &text[..n.saturating_sub(1)]) || n == 0, "length {n} against one shorter");
            assert_eq!(starts_with(a, &text), n == 24, "a prefix longer than the bytes");
        }
    }
}
