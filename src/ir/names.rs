//! String interning for every name-like attribute of XAIF.
//!
//! XAIF repeats the same short strings (vertex ids `"1"`, `"2"`, symbol names, scope ids,
//! empty annotations) tens of thousands of times. Interning them once makes every IR node
//! `Copy`-friendly and keeps the reader from allocating per attribute.

use std::hash::BuildHasher;

use rustc_hash::FxBuildHasher;

/// An interned string: equal names are equal ids, so comparing and hashing names is free.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Name(u32);

impl Name {
    pub const EMPTY: Name = Name(0);

    pub fn is_empty(self) -> bool {
        self == Name::EMPTY
    }

    /// Where the name stands in its table: names are numbered in the order they were first
    /// interned.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The texts of names interned one after the other in some table, for another table to intern
/// in the same order ([`Names::batch_since`], [`Names::intern_batch`]).
#[derive(Clone, Debug, Default)]
pub struct NameBatch {
    text: String,
    ends: Vec<u32>,
}

impl NameBatch {
    /// The names, in the order they were interned.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let s = &self.text[start..end as usize];
            start = end as usize;
            s
        })
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// A set of names as one bit per name id. Names are numbered densely from 0, so a set of
/// them needs no hashing: the statement ids the engine hands out are tested and added once
/// per temporary, which in a hashed set of every id handed out cost a hash and a probe each
/// (the ids tested are the newest, whose bits share a few words).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameSet {
    words: Vec<u64>,
}

impl NameSet {
    /// Adds `name`; true if it was not in the set.
    pub fn insert(&mut self, name: Name) -> bool {
        let (word, bit) = (name.index() / 64, 1u64 << (name.index() % 64));
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        let fresh = self.words[word] & bit == 0;
        self.words[word] |= bit;
        fresh
    }

    pub fn contains(&self, name: Name) -> bool {
        self.words.get(name.index() / 64).is_some_and(|word| word & (1u64 << (name.index() % 64)) != 0)
    }
}

impl Extend<Name> for NameSet {
    fn extend<I: IntoIterator<Item = Name>>(&mut self, names: I) {
        for name in names {
            self.insert(name);
        }
    }
}

/// The interner. All strings live in one buffer (one allocation per growth, not two per
/// name); the table holds only ids and finds a string's id by hashing it and comparing
/// against the buffer.
#[derive(Clone, Debug)]
pub struct Names {
    text: String,
    /// `(start, end)` of each name in `text`, by id.
    spans: Vec<(u32, u32)>,
    table: hashbrown::HashTable<Name>,
    /// Ids of the decimal numbers below 100 (ids and positions), found without hashing.
    small: Vec<Name>,
    /// By id: whether the name holds a character an XML attribute value cannot hold
    /// literally. Known once per name, the writer need not scan the text of every attribute
    /// it writes (names are written many times each).
    needs_escape: Vec<bool>,
}

impl Default for Names {
    fn default() -> Self {
        Names::with_capacity(0, 0)
    }
}

impl Names {
    /// Room for `count` names of `bytes` bytes in all, so that reading a document does not
    /// grow (and rehash) the table step by step.
    pub fn with_capacity(count: usize, bytes: usize) -> Names {
        let mut names = Names {
            text: String::with_capacity(bytes),
            spans: Vec::with_capacity(count),
            table: hashbrown::HashTable::with_capacity(count),
            small: Vec::new(),
            needs_escape: Vec::with_capacity(count),
        };
        // Stored first, so that `intern("")` can answer without looking.
        let empty = names.intern_slow("");
        debug_assert_eq!(empty, Name::EMPTY);
        names
    }
}

fn hash(s: &str) -> u64 {
    FxBuildHasher.hash_one(s)
}

fn span_str<'t>(text: &'t str, spans: &[(u32, u32)], name: Name) -> &'t str {
    let (start, end) = spans[name.0 as usize];
    &text[start as usize..end as usize]
}

impl Names {
    pub fn intern(&mut self, s: &str) -> Name {
        if s.is_empty() {
            return Name::EMPTY;
        }
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

    /// The decimal form of a count or position (ids of new vertices and edges, placeholder
    /// numbers): the passes mint many, and formatting each into a fresh `String` first cost
    /// an allocation per id.
    pub fn intern_index(&mut self, n: usize) -> Name {
        if let Some(&name) = self.small.get(n).filter(|name| **name != Name::EMPTY) {
            return name;
        }
        self.intern(itoa::Buffer::new().format(n))
    }

    /// The decimal form of an integer (constants), as [`Self::intern_index`].
    pub fn intern_integer(&mut self, n: i64) -> Name {
        match usize::try_from(n) {
            Ok(n) => self.intern_index(n),
            Err(_) => self.intern(itoa::Buffer::new().format(n)),
        }
    }

    fn intern_slow(&mut self, s: &str) -> Name {
        let Names { text, spans, table, needs_escape, .. } = self;
        let h = hash(s);
        if let Some(&name) = table.find(h, |&n| crate::bytes::eq(span_str(text, spans, n).as_bytes(), s.as_bytes())) {
            return name;
        }
        let name = Name(spans.len() as u32);
        let start = text.len() as u32;
        text.push_str(s);
        spans.push((start, text.len() as u32));
        needs_escape.push(s.bytes().any(|b| matches!(b, b'&' | b'<' | b'>' | b'"' | b'\n' | b'\r' | b'\t')));
        table.insert_unique(h, name, |&n| hash(span_str(text, spans, n)));
        name
    }

    /// The names interned from the `first`-th (by [`Name::index`]) on.
    pub fn batch_since(&self, first: usize) -> NameBatch {
        let mut batch = NameBatch::default();
        for &(start, end) in self.spans.get(first..).unwrap_or(&[]) {
            batch.text.push_str(&self.text[start as usize..end as usize]);
            batch.ends.push(batch.text.len() as u32);
        }
        batch
    }

    /// Interns the names of `batch` in order, appending what each became to `ids`.
    pub fn intern_batch(&mut self, batch: &NameBatch, ids: &mut Vec<Name>) {
        let mut start = 0;
        for &end in &batch.ends {
            ids.push(self.intern(&batch.text[start..end as usize]));
            start = end as usize;
        }
    }

    /// Forgets the names interned from the `len`-th on, as if they never were: a table
    /// that mirrors another's first `len` names (a parallel worker's, [`crate::streaming`])
    /// takes in names of its own for one routine and then gives them back. Costs what the
    /// forgotten names do, not the table's size.
    pub fn truncate(&mut self, len: usize) {
        let len = len.max(1);
        if len >= self.spans.len() {
            return;
        }
        let Names { text, spans, table, small, needs_escape } = self;
        for index in (len..spans.len()).rev() {
            let name = Name(index as u32);
            let s = span_str(text, spans, name);
            if let Ok(entry) = table.find_entry(hash(s), |&n| n == name) {
                entry.remove();
            }
        }
        text.truncate(spans[len].0 as usize);
        spans.truncate(len);
        needs_escape.truncate(len);
        for slot in small.iter_mut() {
            if slot.index() >= len {
                *slot = Name::EMPTY;
            }
        }
    }

    pub fn find(&self, s: &str) -> Option<Name> {
        self.table.find(hash(s), |&n| self.get(n) == s).copied()
    }

    pub fn get(&self, name: Name) -> &str {
        span_str(&self.text, &self.spans, name)
    }

    /// The text of `name` as bytes: what the writer copies, without the checks that a `str`
    /// slice makes that both ends fall on character boundaries (every name is written, many
    /// several times).
    pub fn bytes(&self, name: Name) -> &[u8] {
        let (start, end) = self.spans[name.0 as usize];
        &self.text.as_bytes()[start as usize..end as usize]
    }

    /// Whether the name holds `&`, `<`, `>`, `"` or white space other than blanks, which an
    /// XML attribute value must escape.
    pub fn needs_escape(&self, name: Name) -> bool {
        self.needs_escape[name.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.len() <= 1
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
        assert!(!names.needs_escape(one));
        assert_eq!(names.intern_index(1), one);
        assert_eq!(names.intern_index(42), forty_two);
        let big = names.intern_index(1234);
        assert_eq!(names.get(big), "1234");
        assert_eq!(names.intern_integer(-7), names.intern("-7"));
        assert_eq!(names.intern_integer(i64::MIN), names.intern(&i64::MIN.to_string()));
        assert_eq!(names.intern_integer(0), names.intern("0"));
        let quoted = names.intern("a<\"b\"");
        assert!(names.needs_escape(quoted));
        let tab = names.intern("x\ty");
        assert!(names.needs_escape(tab));
    }

    #[test]
    fn a_name_set_holds_what_was_inserted_and_nothing_else() {
        let mut names = Names::default();
        let ids: Vec<Name> = (0..200).map(|i| names.intern(&format!("n{i}"))).collect();
        let mut set = NameSet::default();
        assert!(!set.contains(Name::EMPTY));
        for (i, &id) in ids.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
            assert!(set.insert(id), "{i} is new");
            assert!(!set.insert(id), "{i} is there already");
        }
        for (i, &id) in ids.iter().enumerate() {
            assert_eq!(set.contains(id), i % 3 == 0, "{i}");
        }
        assert!(!set.contains(Name(100_000)));
    }

    #[test]
    fn truncating_forgets_exactly_the_later_names() {
        let mut names = Names::default();
        let x = names.intern("x");
        let seven = names.intern("7");
        let len = names.len();
        let y = names.intern("y");
        let twelve = names.intern("12");
        names.intern("x<");
        names.truncate(len);
        assert_eq!(names.len(), len);
        assert_eq!(names.find("y"), None);
        assert_eq!(names.find("x<"), None);
        assert_eq!(names.intern("x"), x);
        assert_eq!(names.intern("7"), seven);
        // Interned again, the forgotten names take the same ids in the same order.
        assert_eq!(names.intern("y"), y);
        assert_eq!(names.intern_index(12), twelve);
        assert_eq!(names.get(twelve), "12");
        names.truncate(0);
        assert_eq!(names.len(), 1);
        assert_eq!(names.intern(""), Name::EMPTY);
        assert_eq!(names.intern("q"), x);
    }
}
