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
#[derive(Debug)]
pub struct Names {
    /// This table's own number, a copy's too ([`Names::identity`]).
    identity: u64,
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
    /// Numbered series (`<prefix>prp_0`, `<prefix>prp_1`, …): every name of a series' form is
    /// found by its number instead of in `table` ([`Names::series`]).
    series: Vec<Series>,
    /// The first bytes of the series' starts, one bit each: a name beginning otherwise is in
    /// none of them, found without comparing it to their starts.
    series_first: [u64; 4],
}

/// One numbered series of names: `start` followed by a number in plain decimal (no sign, no
/// leading zero) below [`SERIES_NUMBERS`].
///
/// The engine invents its temporaries and their statement ids this way, one after the other,
/// hundreds of thousands in a large document. Found through the hashed table, each cost a
/// probe of a table as large as every name of the document, a cache miss or two apiece (at
/// 64 MiB of input, 7% of the run's time); by number, the one looked up is next to the last.
#[derive(Clone, Debug)]
struct Series {
    start: Box<str>,
    /// Whether `start` holds what an attribute value must escape (its names then do).
    escapes: bool,
    /// By number: the name, or [`Name::EMPTY`] where none is interned.
    by_number: Vec<Name>,
}

/// Numbers of a series from this on are names like any other, in the hashed table: a
/// document's own names may have the form of a series with any number, which would otherwise
/// take memory in proportion to the number (here at most 4 MiB per series).
const SERIES_NUMBERS: usize = 1 << 20;

/// A series of names, as [`Names::series`] registered it in one table.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct SeriesId(u32);

/// The numbers tables are given, one each ([`Names::identity`]).
static IDENTITIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn new_identity() -> u64 {
    IDENTITIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Clone for Names {
    /// A copy is a table of its own: what it registers later is not the original's.
    fn clone(&self) -> Self {
        Names {
            identity: new_identity(),
            text: self.text.clone(),
            spans: self.spans.clone(),
            table: self.table.clone(),
            small: self.small.clone(),
            needs_escape: self.needs_escape.clone(),
            series: self.series.clone(),
            series_first: self.series_first,
        }
    }
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
            identity: new_identity(),
            text: String::with_capacity(bytes),
            spans: Vec::with_capacity(count),
            table: hashbrown::HashTable::with_capacity(count),
            small: Vec::new(),
            needs_escape: Vec::with_capacity(count),
            series: Vec::new(),
            series_first: [0; 4],
        };
        // Stored first, so that `intern("")` can answer without looking.
        let empty = names.intern_slow("");
        debug_assert_eq!(empty, Name::EMPTY);
        names
    }

    /// Room for `count` more names of `bytes` bytes in all, beside those the table holds.
    /// A copy ([`Clone`]) has room for what it holds and no more, so without this every name
    /// added to one grows its lists step by step. The hashed table is left to grow as names
    /// come: it holds only the names outside series, a sixth of them on a 16 MiB tangent
    /// (19,459 of 111,721), so room for all would be mostly never used.
    pub fn reserve(&mut self, count: usize, bytes: usize) {
        self.text.reserve(bytes);
        self.spans.reserve(count);
        self.needs_escape.reserve(count);
    }
}

fn hash(s: &str) -> u64 {
    FxBuildHasher.hash_one(s)
}

fn span_str<'t>(text: &'t str, spans: &[(u32, u32)], name: Name) -> &'t str {
    let (start, end) = spans[name.0 as usize];
    &text[start as usize..end as usize]
}

fn escape_needed(s: &str) -> bool {
    s.bytes().any(|b| matches!(b, b'&' | b'<' | b'>' | b'"' | b'\n' | b'\r' | b'\t'))
}

/// The number `digits` spells in plain decimal (no sign, no leading zero), if below
/// [`SERIES_NUMBERS`].
fn series_number(digits: &[u8]) -> Option<usize> {
    match digits {
        [] => None,
        [b'0'] => Some(0),
        [b'0', ..] => None,
        // Seven digits and more are past the numbers a series holds.
        _ if digits.len() > 7 || !digits.iter().all(u8::is_ascii_digit) => None,
        _ => {
            let n = digits.iter().fold(0, |n, &d| n * 10 + usize::from(d - b'0'));
            (n < SERIES_NUMBERS).then_some(n)
        }
    }
}

/// Which of `series` `s` belongs to, and its number there. The starts end in a character
/// other than a digit, so no name belongs to two: its start is all of it but the digits it
/// ends with, which only one series can have.
fn in_series(series: &[Series], first: &[u64; 4], s: &str) -> Option<(usize, usize)> {
    let bytes = s.as_bytes();
    let &lead = bytes.first()?;
    if first[usize::from(lead / 64)] & (1 << (lead % 64)) == 0 {
        return None;
    }
    let digits = bytes.iter().rev().take(8).take_while(|b| b.is_ascii_digit()).count();
    let (start, digits) = bytes.split_at(bytes.len() - digits);
    let number = series_number(digits)?;
    series.iter().position(|one| one.start.as_bytes() == start).map(|k| (k, number))
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
        if !self.series.is_empty()
            && let Some((series, number)) = in_series(&self.series, &self.series_first, s)
        {
            return self.numbered(SeriesId(series as u32), number).0;
        }
        let h = hash(s);
        let Names { text, spans, table, .. } = self;
        if let Some(&name) = table.find(h, |&n| crate::bytes::eq(span_str(text, spans, n).as_bytes(), s.as_bytes())) {
            return name;
        }
        let name = self.push(s);
        let Names { text, spans, table, .. } = self;
        table.insert_unique(h, name, |&n| hash(span_str(text, spans, n)));
        name
    }

    /// The series of names `start` followed by a number in plain decimal (below 2^20;
    /// larger numbers are names like any other), registered in this table the first time it
    /// is asked for: from then on every name of that form, interned before or after, is found
    /// by its number. `start` must end in a character other than a
    /// digit (none of its names could belong to another series).
    pub fn series(&mut self, start: &str) -> SeriesId {
        debug_assert!(start.bytes().last().is_some_and(|b| !b.is_ascii_digit()), "{start:?}");
        if let Some(k) = self.series.iter().position(|one| *one.start == *start) {
            return SeriesId(k as u32);
        }
        let id = SeriesId(self.series.len() as u32);
        let mut one = Series { start: start.into(), escapes: escape_needed(start), by_number: Vec::new() };
        // Names of its form interned before move out of the table.
        let Names { text, spans, table, .. } = self;
        for index in 1..spans.len() {
            let name = Name(index as u32);
            let s = span_str(text, spans, name);
            let Some(number) = s.as_bytes().strip_prefix(start.as_bytes()).and_then(series_number) else { continue };
            if let Ok(entry) = table.find_entry(hash(s), |&n| n == name) {
                entry.remove();
            }
            if one.by_number.len() <= number {
                one.by_number.resize(number + 1, Name::EMPTY);
            }
            one.by_number[number] = name;
        }
        if let Some(&lead) = start.as_bytes().first() {
            self.series_first[usize::from(lead / 64)] |= 1 << (lead % 64);
        }
        self.series.push(one);
        id
    }

    /// A number no other table has, a copy included: what a caller learnt of one table (the
    /// id of a series, say) holds for the table of the same number.
    pub fn identity(&self) -> u64 {
        self.identity
    }

    /// The name of `series` numbered `number`, interned now if it was not (then `true`). A
    /// number past what a series holds is interned as any name is.
    pub fn numbered(&mut self, series: SeriesId, number: usize) -> (Name, bool) {
        if number >= SERIES_NUMBERS {
            let start = &self.series[series.0 as usize].start;
            let mut spelled = String::with_capacity(start.len() + 20);
            spelled.push_str(start);
            spelled.push_str(itoa::Buffer::new().format(number));
            let known = self.len();
            let name = self.intern(&spelled);
            return (name, self.len() > known);
        }
        let Names { text, spans, needs_escape, series: all, .. } = self;
        let one = &mut all[series.0 as usize];
        if let Some(&name) = one.by_number.get(number).filter(|name| !name.is_empty()) {
            return (name, false);
        }
        let name = Name(spans.len() as u32);
        let start = text.len() as u32;
        text.push_str(&one.start);
        text.push_str(itoa::Buffer::new().format(number));
        spans.push((start, text.len() as u32));
        needs_escape.push(one.escapes);
        if one.by_number.len() <= number {
            // Numbers come one after the other: room for as many again.
            one.by_number.resize((number + 1).max(2 * one.by_number.len()), Name::EMPTY);
        }
        one.by_number[number] = name;
        (name, true)
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

    /// `s` as a new name, entered nowhere yet.
    #[inline]
    fn push(&mut self, s: &str) -> Name {
        let name = Name(self.spans.len() as u32);
        let start = self.text.len() as u32;
        self.text.push_str(s);
        self.spans.push((start, self.text.len() as u32));
        self.needs_escape.push(escape_needed(s));
        name
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
    /// that mirrors another's first `len` names (an adjoint worker's, `driver::stream::parallel`)
    /// takes in names of its own for one routine and then gives them back. Costs what the
    /// forgotten names do, not the table's size.
    pub fn truncate(&mut self, len: usize) {
        let len = len.max(1);
        if len >= self.spans.len() {
            return;
        }
        let Names { text, spans, table, small, needs_escape, series, series_first, .. } = self;
        for index in (len..spans.len()).rev() {
            let name = Name(index as u32);
            let s = span_str(text, spans, name);
            if let Some((k, number)) = in_series(series, series_first, s) {
                if let Some(slot) = series[k].by_number.get_mut(number) {
                    *slot = Name::EMPTY;
                }
            } else if let Ok(entry) = table.find_entry(hash(s), |&n| n == name) {
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
        if let Some((k, number)) = in_series(&self.series, &self.series_first, s) {
            return self.series[k].by_number.get(number).copied().filter(|name| !name.is_empty());
        }
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

    #[test]
    fn a_series_finds_its_names_before_and_after_it_was_registered() {
        let mut names = Names::default();
        let early = names.intern("T_7");
        let padded = names.intern("T_07");
        let other = names.intern("U_7");
        let series = names.series("T_");
        assert_eq!(names.series("T_"), series, "registered once");
        // Interned before: found by number, the same name whichever way it is asked for.
        assert_eq!(names.numbered(series, 7), (early, false));
        assert_eq!(names.intern("T_7"), early);
        assert_eq!(names.find("T_7"), Some(early));
        // Not of the series' form: as before, in the table.
        assert_eq!(names.intern("T_07"), padded);
        assert_eq!(names.intern("U_7"), other);
        assert_eq!(names.find("T_"), None);
        // New numbers, either way.
        let (eight, new) = names.numbered(series, 8);
        assert!(new);
        assert_eq!(names.get(eight), "T_8");
        assert_eq!(names.intern("T_8"), eight);
        let nine = names.intern("T_9");
        assert_eq!(names.numbered(series, 9), (nine, false));
        assert_eq!(names.find("T_10"), None);
        // Past the numbers a series holds: a name like any other, the same either way.
        let far = SERIES_NUMBERS + 3;
        let (big, new) = names.numbered(series, far);
        assert!(new);
        assert_eq!(names.get(big), format!("T_{far}"));
        assert_eq!(names.intern(&format!("T_{far}")), big);
        assert_eq!(names.numbered(series, far), (big, false));
        // Starts that need escaping make names that do.
        let quoted = names.series("a<b_");
        let (name, _) = names.numbered(quoted, 0);
        assert!(names.needs_escape(name));
        assert!(!names.needs_escape(eight));
    }

    #[test]
    fn truncating_forgets_names_of_series_too() {
        let mut names = Names::default();
        let series = names.series("T_");
        let len = names.len();
        let (zero, _) = names.numbered(series, 0);
        let x = names.intern("x");
        let one = names.intern("T_1");
        names.truncate(len);
        assert_eq!(names.find("T_0"), None);
        assert_eq!(names.find("T_1"), None);
        assert_eq!(names.find("x"), None);
        assert_eq!(names.numbered(series, 0), (zero, true));
        assert_eq!(names.intern("x"), x);
        assert_eq!(names.intern("T_1"), one);
    }

    #[test]
    fn room_reserved_in_a_copy_keeps_its_names_and_takes_the_new_ones_without_moving() {
        // (Names outside any series: each also goes into the hashed table, which grows.)
        let mut original = Names::default();
        let old: Vec<Name> = (0..500).map(|k| original.intern(&format!("name_{k}"))).collect();
        let mut copy = original.clone();
        copy.reserve(1000, 20_000);
        let (text, spans) = (copy.text.capacity(), copy.spans.capacity());
        // Every name is still found as itself.
        for (k, name) in old.iter().enumerate() {
            assert_eq!(copy.intern(&format!("name_{k}")), *name);
            assert_eq!(copy.find(&format!("name_{k}")), Some(*name));
        }
        let new: Vec<Name> = (0..1000).map(|k| copy.intern(&format!("added_{k:08}"))).collect();
        assert_eq!((copy.text.capacity(), copy.spans.capacity()), (text, spans));
        for (k, name) in new.iter().enumerate() {
            assert_eq!(copy.get(*name), format!("added_{k:08}"));
        }
        assert_eq!(copy.len(), original.len() + 1000);
    }

    #[test]
    fn a_copy_is_a_table_of_its_own() {
        let names = Names::default();
        let copy = names.clone();
        assert_ne!(names.identity(), copy.identity());
        assert_ne!(names.identity(), Names::default().identity());
    }

    /// One step of [`names_stay_one_per_text`].
    #[derive(Clone, Debug)]
    enum Step {
        Intern(String),
        Series(&'static str),
        Numbered(&'static str, usize),
        Truncate(usize),
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        const STARTS: [&str; 3] = ["T_", "_T_", "U1_"];
        let start = proptest::sample::select(&STARTS[..]);
        // Texts of a series' form and texts near it (leading zeros, other starts, no digits).
        let text = proptest::string::string_regex("(_?T_|U1_|U_|T)?(0|[1-9][0-9]{0,2}|0[0-9]|x)?").expect("a regex");
        prop_oneof![
            4 => text.prop_map(Step::Intern),
            1 => start.clone().prop_map(Step::Series),
            3 => (start, 0usize..40).prop_map(|(start, number)| Step::Numbered(start, number)),
            1 => (0usize..40).prop_map(Step::Truncate),
        ]
    }

    proptest::proptest! {
        /// Whatever is interned, registered and forgotten in whatever order, a text has one
        /// name, names are numbered in the order their texts first came, and each names its
        /// text: as a plain list of the texts would have it.
        #[test]
        fn names_stay_one_per_text(steps in proptest::collection::vec(step(), 0..60)) {
            let mut names = Names::default();
            let mut texts: Vec<String> = vec![String::new()];
            for step in steps {
                let (text, name, new) = match step {
                    Step::Intern(text) => {
                        let known = names.len();
                        let name = names.intern(&text);
                        (text, name, names.len() > known)
                    }
                    Step::Series(start) => {
                        names.series(start);
                        continue;
                    }
                    Step::Numbered(start, number) => {
                        let series = names.series(start);
                        let (name, new) = names.numbered(series, number);
                        (format!("{start}{number}"), name, new)
                    }
                    Step::Truncate(len) => {
                        names.truncate(len);
                        texts.truncate(len.max(1));
                        proptest::prop_assert_eq!(names.len(), texts.len());
                        continue;
                    }
                };
                let expected = texts.iter().position(|known| *known == text);
                proptest::prop_assert_eq!(new, expected.is_none(), "{:?}", text);
                if expected.is_none() {
                    texts.push(text.clone());
                }
                proptest::prop_assert_eq!(name.index(), expected.unwrap_or(texts.len() - 1), "{:?}", text);
                proptest::prop_assert_eq!(names.len(), texts.len());
            }
            for (index, text) in texts.iter().enumerate() {
                proptest::prop_assert_eq!(names.get(Name(index as u32)), text.as_str());
                let found = if text.is_empty() { Some(Name::EMPTY) } else { names.find(text) };
                proptest::prop_assert_eq!(found, Some(Name(index as u32)), "{:?}", text);
            }
        }
    }
}
