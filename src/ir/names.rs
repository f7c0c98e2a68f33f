//! String interning for every name-like attribute of XAIF.
//!
//! XAIF repeats the same short strings (vertex ids `"1"`, `"2"`, symbol names, scope ids,
//! empty annotations) tens of thousands of times. Interning them once makes every IR node
//! `Copy`-friendly and keeps the reader from allocating per attribute.

use rustc_hash::FxHashMap;

/// An interned string; compare and hash in O(1). Resolve with [`Names::get`].
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Name(u32);

impl Name {
    /// The empty string, interned at index 0 in every [`Names`] table.
    pub const EMPTY: Name = Name(0);

    pub fn is_empty(self) -> bool {
        self == Name::EMPTY
    }
}

/// The interner. Owned by the [`crate::ir::CallGraph`] whose names it holds.
#[derive(Clone, Debug)]
pub struct Names {
    lookup: FxHashMap<Box<str>, Name>,
    strings: Vec<Box<str>>,
    /// `small[n]` is the name of the decimal string `n` (for n < 100), once interned.
    small: Vec<Name>,
}

impl Default for Names {
    fn default() -> Self {
        let mut names = Names { lookup: FxHashMap::default(), strings: Vec::new(), small: Vec::new() };
        let empty = names.intern("");
        debug_assert_eq!(empty, Name::EMPTY);
        names
    }
}

impl Names {
    pub fn intern(&mut self, s: &str) -> Name {
        // Small decimal ids ("1", "2", …) are most of what XAIF spells; they skip the hash.
        let small = match s.as_bytes() {
            [d @ b'0'..=b'9'] => Some((d - b'0') as usize),
            [b'1'..=b'9', b'0'..=b'9'] => s.parse::<usize>().ok(),
            _ => None,
        };
        if let Some(n) = small {
            if let Some(&name) = self.small.get(n).filter(|name| **name != Name::EMPTY) {
                return name;
            }
            let name = self.intern_slow(s);
            if self.small.len() <= n {
                self.small.resize(n + 1, Name::EMPTY);
            }
            self.small[n] = name;
            return name;
        }
        self.intern_slow(s)
    }

    fn intern_slow(&mut self, s: &str) -> Name {
        if let Some(&name) = self.lookup.get(s) {
            return name;
        }
        let name = Name(self.strings.len() as u32);
        self.strings.push(s.into());
        self.lookup.insert(s.into(), name);
        name
    }

    /// Looks a string up without interning it.
    pub fn find(&self, s: &str) -> Option<Name> {
        self.lookup.get(s).copied()
    }

    pub fn get(&self, name: Name) -> &str {
        &self.strings[name.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.len() <= 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_idempotent_and_empty_is_zero() {
        let mut names = Names::default();
        let a = names.intern("x");
        let b = names.intern("y");
        assert_ne!(a, b);
        assert_eq!(names.intern("x"), a);
        assert_eq!(names.intern(""), Name::EMPTY);
        assert_eq!(names.get(b), "y");
        assert_eq!(names.find("z"), None);
        let one = names.intern("1");
        assert_eq!(names.intern("1"), one);
        assert_eq!(names.find("1"), Some(one));
        let forty_two = names.intern("42");
        assert_eq!(names.get(forty_two), "42");
        assert_ne!(names.intern("01"), names.intern("1"));
    }
}
