//! Attributes: the scanner that collects a start tag's values, the conversions of values to
//! the IR's types, and the references to what the head declared (scopes, symbols, map keys).

use std::borrow::Cow;

use super::{Elem, Lower, MapKeys, ReadError, Result};
use crate::bytes::same_length_eq;
use crate::ir::*;
use crate::xaif::crowded::{Crowded, MAX_ATTRIBUTES, attribute_count};

/// Bytes that end an attribute name: `=` or white space.
static KEY_STOP: [bool; 256] = byte_set(b"= \t\r\n");

/// Whether `bytes` begins with the attribute name `key`, whole (a byte that ends a name follows).
#[inline]
fn key_at(bytes: &[u8], key: &[u8]) -> bool {
    bytes
        .get(..=key.len())
        .is_some_and(|window| same_length_eq(&window[..key.len()], key) && KEY_STOP[window[key.len()] as usize])
}

/// Bytes the attribute value scanner stops at: quotes (the closing one ends the value) and
/// what needs decoding (references, and white space other than blanks, which XML normalizes).
static VALUE_STOP: [bool; 256] = byte_set(b"\"'&<\t\r\n");

const fn byte_set(members: &[u8]) -> [bool; 256] {
    let mut set = [false; 256];
    let mut i = 0;
    while i < members.len() {
        set[members[i] as usize] = true;
        i += 1;
    }
    set
}

impl<'a> Lower<'a> {
    // ---------------------------------------------------------------- attributes

    /// Collects the attributes named in `known`; anything else is reported (leniently).
    pub(super) fn attrs<const N: usize>(
        &mut self,
        elem: &Elem<'a>,
        known: [&str; N],
    ) -> Result<[Option<Cow<'a, str>>; N]> {
        let mut values: [Option<Cow<'a, str>>; N] = std::array::from_fn(|_| None);
        // A hand-written scanner: XAIF tags are attribute-heavy, and this is the reader's
        // hottest loop (quick-xml's general attribute iterator costs twice as much).
        let text = &elem.raw[elem.name_len..];
        let bytes = text.as_bytes();
        let mut at = 0;
        let mut expected = 0;
        let mut count = 0;
        let malformed =
            |this: &Self, what: &str| this.error(elem.offset, elem.name, format!("malformed attribute: {what}"));
        loop {
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            if at == bytes.len() {
                break;
            }
            count += 1;
            if count > MAX_ATTRIBUTES {
                // Past the bound the checks refuse too; counted, not compared pairwise.
                let crowded = Crowded { offset: elem.offset, element: elem.name, count: attribute_count(bytes) };
                return Err(self.error(elem.offset, elem.name, crowded.message()));
            }
            let key_start = at;
            // Front ends write the attributes in the order `known` lists them: the key
            // expected next is compared whole first, instead of scanning and then looking
            // it up among all known keys.
            let expected_here = known.get(expected).is_some_and(|k| key_at(&bytes[at..], k.as_bytes()));
            if expected_here {
                at += known[expected].len();
            } else {
                while at < bytes.len() && !KEY_STOP[bytes[at] as usize] {
                    at += 1;
                }
            }
            let key = &text[key_start..at];
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            if key.is_empty() || bytes.get(at) != Some(&b'=') {
                return Err(malformed(self, "expected name=\"value\""));
            }
            at += 1;
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            let quote = match bytes.get(at) {
                Some(&q @ (b'"' | b'\'')) => q,
                _ => return Err(malformed(self, "the value must be quoted")),
            };
            let value_start = at + 1;
            // One pass finds the closing quote and notices characters that need decoding.
            let mut end = value_start;
            let mut plain = true;
            loop {
                while end < bytes.len() && !VALUE_STOP[bytes[end] as usize] {
                    end += 1;
                }
                match bytes.get(end) {
                    None => return Err(malformed(self, "the value is not closed")),
                    Some(&b) if b == quote => break,
                    // The other quote character is plain text here.
                    Some(b'"' | b'\'') => {}
                    Some(_) => plain = false,
                }
                end += 1;
            }
            let raw = &text[value_start..end];
            at = end + 1;
            let found = if expected_here {
                Some(expected)
            } else {
                known.iter().position(|k| crate::bytes::eq(k.as_bytes(), key.as_bytes()))
            };
            let Some(slot) = found else {
                if key.starts_with("xmlns") || key.starts_with("xsi:") {
                    continue;
                }
                let dropped = if self.strict { "" } else { " (dropped)" };
                self.lenient(elem.offset, elem.name, format!("unknown attribute '{key}'{dropped}"))?;
                continue;
            };
            if values[slot].is_some() {
                return Err(self.error(elem.offset, elem.name, format!("duplicate attribute '{key}'")));
            }
            let value = if plain {
                Cow::Borrowed(raw)
            } else {
                Cow::Owned(
                    decode_attribute(raw)
                        .map_err(|e| self.error(elem.offset, elem.name, format!("attribute '{key}': {e}")))?,
                )
            };
            values[slot] = Some(value);
            expected = slot + 1;
        }
        Ok(values)
    }

    pub(super) fn required<'v>(&self, elem: &Elem<'a>, name: &str, value: &'v Option<Cow<'a, str>>) -> Result<&'v str> {
        value
            .as_deref()
            .ok_or_else(|| self.error(elem.offset, elem.name, format!("missing required attribute '{name}'")))
    }

    pub(super) fn intern(&mut self, value: &Option<Cow<'a, str>>) -> Name {
        match value {
            Some(v) => self.cg.names.intern(v),
            None => Name::EMPTY,
        }
    }

    pub(super) fn intern_required(
        &mut self,
        elem: &Elem<'a>,
        name: &str,
        value: &Option<Cow<'a, str>>,
    ) -> Result<Name> {
        let v = self.required(elem, name, value)?;
        Ok(self.cg.names.intern(v))
    }

    fn bad_value(&self, elem: &Elem<'a>, name: &str, value: &str, expected: &str) -> ReadError {
        self.error(elem.offset, elem.name, format!("attribute '{name}' has value '{value}', expected {expected}"))
    }

    pub(super) fn boolean(
        &self,
        elem: &Elem<'a>,
        name: &str,
        value: &Option<Cow<'a, str>>,
        default: bool,
    ) -> Result<bool> {
        match value.as_deref() {
            None => Ok(default),
            Some("true" | "1") => Ok(true),
            Some("false" | "0") => Ok(false),
            Some(v) => Err(self.bad_value(elem, name, v, "a boolean (true, false, 1, 0)")),
        }
    }

    pub(super) fn integer(&self, elem: &Elem<'a>, name: &str, value: &str) -> Result<i64> {
        value.trim().parse::<i64>().map_err(|_| self.bad_value(elem, name, value, "an integer"))
    }

    pub(super) fn non_negative(&self, elem: &Elem<'a>, name: &str, value: &str) -> Result<u64> {
        value.trim().parse::<u64>().map_err(|_| self.bad_value(elem, name, value, "a non-negative integer"))
    }

    pub(super) fn positive(&self, elem: &Elem<'a>, name: &str, value: &str) -> Result<u64> {
        match value.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(self.bad_value(elem, name, value, "a positive integer")),
        }
    }

    /// An argument position, which the IR keeps in 32 bits.
    pub(super) fn argument_position(&self, elem: &Elem<'a>, name: &str, value: &str) -> Result<u32> {
        let wide = self.positive(elem, name, value)?;
        u32::try_from(wide).map_err(|_| self.bad_value(elem, name, value, "a positive integer below 2^32"))
    }

    /// A count the IR keeps in 32 bits.
    pub(super) fn count(&self, elem: &Elem<'a>, name: &str, value: &str) -> Result<u32> {
        let wide = self.non_negative(elem, name, value)?;
        u32::try_from(wide).map_err(|_| self.bad_value(elem, name, value, "a non-negative integer below 2^32"))
    }

    pub(super) fn opt_non_negative(&self, elem: &Elem<'a>, name: &str, value: &Option<Cow<'a, str>>) -> Result<u64> {
        value.as_deref().map_or(Ok(0), |v| self.non_negative(elem, name, v))
    }

    pub(super) fn enumerated<T: Copy>(
        &self,
        elem: &Elem<'a>,
        name: &str,
        value: &Option<Cow<'a, str>>,
        default: T,
        table: &[(&str, T)],
    ) -> Result<T> {
        let Some(v) = value.as_deref() else { return Ok(default) };
        table.iter().find(|(k, _)| *k == v).map(|(_, t)| *t).ok_or_else(|| {
            let allowed: Vec<&str> = table.iter().map(|(k, _)| *k).collect();
            self.bad_value(elem, name, v, &format!("one of {}", allowed.join(", ")))
        })
    }

    // ---------------------------------------------------------------- references

    pub(super) fn scope_ref(&mut self, elem: &Elem<'a>, name: &str, value: &Option<Cow<'a, str>>) -> Result<ScopeId> {
        let v = self.required(elem, name, value)?;
        self.positive(elem, name, v)?;
        let key = self.cg.names.intern(v);
        self.scope_ids
            .get(&key)
            .copied()
            .ok_or_else(|| self.error(elem.offset, elem.name, format!("{name} '{v}' names no scope")))
    }

    /// Resolves `symbol_id` in the scope named by `scope_id`.
    pub(super) fn symbol_ref(
        &mut self,
        elem: &Elem<'a>,
        symbol: &Option<Cow<'a, str>>,
        scope: &Option<Cow<'a, str>>,
    ) -> Result<SymbolId> {
        let scope_id = self.scope_ref(elem, "scope_id", scope)?;
        let name_str = self.required(elem, "symbol_id", symbol)?;
        let name = self.cg.names.intern(name_str);
        self.cg.lookup_symbol(scope_id, name).ok_or_else(|| {
            let scope_name = self.cg.names.get(self.cg.scopes[scope_id].id);
            self.error(elem.offset, elem.name, format!("symbol '{name_str}' is not declared in scope {scope_name}"))
        })
    }

    /// The set a key attribute (`alias`, `du_ud`, `do_chain`) names in its map, `None` without
    /// the attribute. Key 0, the map's dummy key, names its set if the map has one.
    pub(super) fn set_ref<Id: Copy>(
        &self,
        elem: &Elem<'a>,
        value: &Option<Cow<'a, str>>,
        keys: &MapKeys<Id>,
    ) -> Result<Option<Id>> {
        let Some(v) = value.as_deref() else { return Ok(None) };
        let key = self.integer(elem, keys.attribute, v)?;
        if key == 0 {
            return Ok(keys.sets.get(&0).copied());
        }
        u64::try_from(key).ok().and_then(|k| keys.sets.get(&k).copied()).map(Some).ok_or_else(|| {
            self.error(elem.offset, elem.name, format!("{} key {v} is not in the {}", keys.attribute, keys.map))
        })
    }
}

/// An attribute value with its references replaced and white space normalized, as XML 1.0
/// prescribes for attribute values (tab, newline and carriage return become spaces).
fn decode_attribute(raw: &str) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(i) = rest.find(['&', '<', '\t', '\n', '\r']) {
        out.push_str(&rest[..i]);
        let c = rest.as_bytes()[i];
        match c {
            b'<' => return Err("'<' is not allowed in an attribute value".into()),
            b'\t' | b'\n' | b'\r' => {
                // `\r\n` counts as one line break.
                out.push(' ');
                let skip = if c == b'\r' && rest.as_bytes().get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                rest = &rest[i + skip..];
            }
            _ => {
                let end = rest[i..].find(';').ok_or("an entity reference is not closed by ';'")? + i;
                let name = &rest[i + 1..end];
                let decoded = match name {
                    "lt" => '<',
                    "gt" => '>',
                    "amp" => '&',
                    "quot" => '"',
                    "apos" => '\'',
                    _ => {
                        let code = if let Some(hex) = name.strip_prefix("#x") {
                            u32::from_str_radix(hex, 16).ok()
                        } else if let Some(decimal) = name.strip_prefix('#') {
                            decimal.parse::<u32>().ok()
                        } else {
                            return Err(format!("unknown entity '&{name};' (only the predefined ones are allowed)"));
                        };
                        code.and_then(char::from_u32).ok_or_else(|| format!("bad character reference '&{name};'"))?
                    }
                };
                out.push(decoded);
                rest = &rest[end + 1..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name is found only whole.
    #[test]
    fn attribute_names_are_found_whole() {
        assert!(key_at(b"scope_id=\"1\"", b"scope_id"));
        assert!(key_at(b"scope_id =\"1\"", b"scope_id"));
        assert!(!key_at(b"scope_ids=\"1\"", b"scope_id"));
        assert!(!key_at(b"scope_i", b"scope_id"));
        assert!(!key_at(b"scope_id", b"scope_id"), "a name at the very end is not followed by its value");
    }

    #[test]
    fn attribute_values_are_decoded_and_normalized() {
        assert_eq!(decode_attribute("a&amp;b&lt;&#65;&#x42;").as_deref(), Ok("a&b<AB"));
        assert_eq!(decode_attribute("x\ty\r\nz").as_deref(), Ok("x y z"));
        assert!(decode_attribute("&nbsp;").is_err());
        assert!(decode_attribute("a<b").is_err());
        assert!(decode_attribute("&amp").is_err());
    }
}
