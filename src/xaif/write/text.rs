//! Bytes into the output: short pieces appended at once, attribute values escaped, and the
//! sort key of names.

/// The first 16 bytes of `name` as a big-endian number, zeros past its end: where two names
/// differ in it, it orders them as their texts (a name shorter than 16 bytes that is a prefix
/// of another gets zeros where the other has bytes); where it is equal, the texts decide.
pub(super) fn order_prefix(name: &[u8]) -> u128 {
    let mut bytes = [0u8; 16];
    let len = name.len().min(16);
    bytes[..len].copy_from_slice(&name[..len]);
    u128::from_be_bytes(bytes)
}

/// The most bytes [`append`] copies with copies of fixed sizes. Fewer would leave more of the
/// writer's appends (an indentation, its `<xaif:` and a name) to `extend_from_slice`; more
/// would cost more zeros for every append.
pub(super) const SHORT: usize = 48;

/// Appends `parts`. The writer appends millions of short pieces (keys, ids, names), each of
/// which `extend_from_slice` would check for room and, where its length is not a constant,
/// copy through a call to `memcpy`. Where they fit in [`SHORT`] bytes (nearly always), the
/// output grows by [`SHORT`] zeros at once (stores of a constant length), the parts are copied
/// over them, each as two copies of a fixed size, and the output is cut back to their end.
/// The corpus's round trips take within 3% of the time that copying into reserved room
/// without checks took; `extend_from_slice` of each part, or of fixed-size copies with a cut
/// after each, took 12 to 15% more.
#[inline(always)]
pub(super) fn append<const N: usize>(out: &mut Vec<u8>, parts: [&[u8]; N]) {
    let total: usize = parts.iter().map(|part| part.len()).sum();
    if total > SHORT {
        out.reserve(total);
        for part in parts {
            out.extend_from_slice(part);
        }
        return;
    }
    let start = out.len();
    out.extend_from_slice(&[0; SHORT]);
    let room: &mut [u8; SHORT] = (&mut out[start..]).try_into().expect("SHORT bytes");
    let mut at = 0;
    for part in parts {
        copy_short(part, &mut room[at..at + part.len()]);
        at += part.len();
    }
    out.truncate(start + total);
}

/// Copies `part` (at most [`SHORT`] bytes) into `into`, of its length, as two copies of the
/// widest fixed size that fits, overlapping in the middle (1 to 3 bytes: the first, the middle
/// and the last).
#[inline(always)]
pub(super) fn copy_short(part: &[u8], into: &mut [u8]) {
    let len = part.len();
    if len >= 32 {
        overlapping::<32>(part, into);
    } else if len >= 16 {
        overlapping::<16>(part, into);
    } else if len >= 8 {
        overlapping::<8>(part, into);
    } else if len >= 4 {
        overlapping::<4>(part, into);
    } else if len > 0 {
        into[0] = part[0];
        into[len / 2] = part[len / 2];
        into[len - 1] = part[len - 1];
    }
}

/// [`copy_short`] of a part of `W` to `2 * W` bytes.
#[inline(always)]
pub(super) fn overlapping<const W: usize>(part: &[u8], into: &mut [u8]) {
    let len = part.len();
    into[..W].copy_from_slice(&part[..W]);
    into[len - W..].copy_from_slice(&part[len - W..]);
}

/// Bytes an attribute value cannot hold literally.
pub(super) static NEEDS_ESCAPE: [bool; 256] = {
    let mut set = [false; 256];
    let special = b"&<>\"\n\r\t";
    let mut i = 0;
    while i < special.len() {
        set[special[i] as usize] = true;
        i += 1;
    }
    set
};

pub(super) fn escape_into(out: &mut Vec<u8>, value: &str) {
    let bytes = value.as_bytes();
    // Almost no value needs escaping (values are short: a table lookup per byte beats SIMD
    // searches).
    if !bytes.iter().any(|&b| NEEDS_ESCAPE[b as usize]) {
        out.extend_from_slice(bytes);
        return;
    }
    let mut last = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let Some(replacement) = escape_of(b) else { continue };
        out.extend_from_slice(&bytes[last..i]);
        out.extend_from_slice(replacement);
        last = i + 1;
    }
    out.extend_from_slice(&bytes[last..]);
}

/// What [`escape_into`] writes in place of `b`, where it is not written as it is.
pub(super) fn escape_of(b: u8) -> Option<&'static [u8]> {
    Some(match b {
        b'&' => b"&amp;",
        b'<' => b"&lt;",
        b'>' => b"&gt;",
        b'"' => b"&quot;",
        b'\n' => b"&#10;",
        b'\r' => b"&#13;",
        b'\t' => b"&#9;",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Names;

    /// Symbol tables are sorted by a number made of each name's first bytes, then the name:
    /// the same order as the names' texts, whatever their lengths and shared prefixes.
    #[test]
    fn order_prefix_orders_as_the_texts() {
        let words = [
            "",
            "a",
            "a\u{0}",
            "ab",
            "abcdefghijklmnop",
            "abcdefghijklmnopq",
            "abcdefghijklmnoq",
            "b",
            "OpenAD_lin_1",
            "OpenAD_lin_10",
            "OpenAD_lin_1000000000",
            "OpenAD_lin_2",
            "OpenAD_prp_0",
            "\u{e9}",
            "\u{e8}z",
            "zz",
        ];
        for a in words {
            for b in words {
                let by_prefix = order_prefix(a.as_bytes()).cmp(&order_prefix(b.as_bytes())).then_with(|| a.cmp(b));
                assert_eq!(by_prefix, a.cmp(b), "{a:?} against {b:?}");
            }
        }
    }

    /// `append` copies short pieces with overlapping loads and stores: every length on each
    /// side of the 4-, 8-, 16- and 32-byte tiers, in totals on each side of `SHORT`, into
    /// buffers whose room is exact or ample.
    #[test]
    fn append_writes_exactly_its_pieces() {
        let source: Vec<u8> = (0..80u8).map(|b| b.wrapping_mul(37).wrapping_add(1)).collect();
        for first in 0..=40 {
            for second in [0, 1, 3, 7, 15, 31, 33, 70] {
                for room in [0, 1, 64, 4096] {
                    let mut out = Vec::with_capacity(room);
                    out.extend_from_slice(b"ab");
                    let a = &source[..first];
                    let b = &source[80 - second..];
                    append(&mut out, [a, b, b"\""]);
                    let expected: Vec<u8> = [&b"ab"[..], a, b, b"\""].concat();
                    assert_eq!(out, expected, "{first} + {second} bytes, room {room}");
                }
            }
        }
    }

    /// Names decide once whether they need escaping; they must agree with the writer on
    /// every byte, or a name would be written unescaped.
    #[test]
    fn names_escape_what_the_writer_escapes() {
        let mut names = Names::default();
        for byte in 1..=127u8 {
            let text = format!("a{}b", byte as char);
            let name = names.intern(&text);
            assert_eq!(names.needs_escape(name), NEEDS_ESCAPE[byte as usize], "byte {byte}");
        }
    }
}
