//! A first look at a document's markup: its start and end tags, found by separating markup
//! from text and nothing more (no names checked, nothing decoded), with `memchr` and the
//! reader's vector scan of tags over the bytes — a few instructions per byte where a general
//! tokenizer spends twenty.
//!
//! For passes that need the shape of the whole document before it is parsed properly: the
//! streaming driver's survey (statement ids, routines with a body) and fragment-wise
//! validation's layout (where each routine begins and ends). Both parse what they were told
//! right after, with a real parser that refuses what is malformed, so this scan need only be
//! right on well-formed XML and harmless on the rest. Comments, CDATA sections, processing
//! instructions and declarations (a DOCTYPE with its internal subset) are skipped.

/// One piece of markup.
#[derive(Debug)]
pub(crate) enum Markup<'a> {
    /// A start tag: its qualified name, the text of its attributes, whether it is empty
    /// (`/>`), and where it lies (from its `<` to past its `>`).
    Start { name: &'a [u8], attributes: &'a [u8], empty: bool, start: usize, end: usize },
    /// An end tag, and where it ends (past its `>`).
    End { end: usize },
}

/// The start and end tags of a document, in order.
pub(crate) struct Tags<'a> {
    input: &'a [u8],
    at: usize,
}

impl<'a> Tags<'a> {
    pub(crate) fn new(input: &'a [u8]) -> Self {
        Tags { input, at: 0 }
    }

    /// The tags from offset `at` on (which should be where markup or text begins).
    pub(crate) fn from(input: &'a [u8], at: usize) -> Self {
        Tags { input, at }
    }
}

impl<'a> Iterator for Tags<'a> {
    type Item = Markup<'a>;

    /// The next tag; `None` at the end, or where markup is not closed.
    fn next(&mut self) -> Option<Markup<'a>> {
        let input = self.input;
        loop {
            // Between tags there is mostly indentation: skipped sixteen bytes at a time.
            let rest = input.get(self.at..)?;
            let text = super::lexer::first_non_blank(rest);
            let open = self.at
                + match rest.get(text) {
                    Some(b'<') => text,
                    _ => memchr::memchr(b'<', rest)?,
                };
            let rest = &input[open + 1..];
            let skip_to = |end: &[u8]| memchr::memmem::find(rest, end).map(|k| open + 1 + k + end.len());
            if rest.starts_with(b"!--") {
                self.at = skip_to(b"-->")?;
                continue;
            }
            if rest.starts_with(b"![CDATA[") {
                self.at = skip_to(b"]]>")?;
                continue;
            }
            if rest.starts_with(b"?") {
                self.at = skip_to(b"?>")?;
                continue;
            }
            if rest.starts_with(b"!") {
                self.at = open + 1 + declaration_end(rest)?;
                continue;
            }
            let markup = tag_at(input, open)?;
            self.at = match markup {
                Markup::Start { end, .. } | Markup::End { end } => end,
            };
            return Some(markup);
        }
    }
}

impl Tags<'_> {
    /// Goes on from offset `at` (where markup or text begins), past what lies between.
    pub(crate) fn resume_at(&mut self, at: usize) {
        self.at = at;
    }
}

/// The start or end tag whose `<` is at `open`; `None` where it is not closed.
fn tag_at(input: &[u8], open: usize) -> Option<Markup<'_>> {
    let rest = &input[open + 1..];
    let close = tag_end(rest)?;
    let end = open + 1 + close + 1;
    let tag = &rest[..close];
    if tag.starts_with(b"/") {
        return Some(Markup::End { end });
    }
    let (tag, empty) = match tag.strip_suffix(b"/") {
        Some(tag) => (tag, true),
        None => (tag, false),
    };
    let name_end = super::lexer::first_blank(tag);
    Some(Markup::Start { name: &tag[..name_end], attributes: &tag[name_end..], empty, start: open, end })
}

/// Where the end tag of the element `name` whose start tag ends at `from` begins, when its
/// body can be skimmed rather than scanned tag by tag: when it holds no comment, CDATA
/// section or processing instruction (`<!`, `<?`) and no element of the same name. Then, in
/// well-formed XML, every `<` in the body begins a tag (attribute values and text hold none)
/// and the first `</name>` closes the element. `None` where that is not plain, and the body
/// should be scanned as usual.
pub(crate) fn skimmable_body(input: &[u8], name: &[u8], from: usize) -> Option<usize> {
    let mut needle = Vec::with_capacity(name.len() + 2);
    needle.extend_from_slice(b"</");
    needle.extend_from_slice(name);
    let end = from + memchr::memmem::find(input.get(from..)?, &needle)?;
    let after = end + needle.len();
    let blanks = super::lexer::first_non_blank(&input[after..]);
    if input.get(after + blanks) != Some(&b'>') {
        return None;
    }
    let body = &input[from..end];
    needle.remove(1);
    // `!` and `?` are rare in XAIF, `<` is everywhere: the search is for the rare byte.
    let declaration = memchr::memchr2_iter(b'!', b'?', body).any(|k| k > 0 && body[k - 1] == b'<');
    let plain = !declaration && memchr::memmem::find(body, &needle).is_none();
    plain.then_some(end)
}

/// The tags of a skimmable body ([`skimmable_body`]) whose text holds `key`, in order, each
/// once: for scans that need only those (the tags they look at hold an attribute named
/// `key`), found with a fast search for `key` instead of a walk over every tag. Each
/// occurrence of `key` lies in a tag or in text; the last `<` before it begins that tag, or
/// the tag before that text.
pub(crate) struct TagsHolding<'a> {
    input: &'a [u8],
    /// Where the search goes on.
    at: usize,
    /// The end of the body.
    end: usize,
    key: memchr::memmem::Finder<'a>,
    /// Where the search for the `<` before an occurrence stops: past the previous occurrence
    /// or tag, which nothing before can begin a new tag for.
    floor: usize,
}

impl<'a> TagsHolding<'a> {
    /// The tags holding `key` in `input[from..end]`, a skimmable body.
    pub(crate) fn new(input: &'a [u8], from: usize, end: usize, key: &'a [u8]) -> Self {
        TagsHolding { input, at: from, end, key: memchr::memmem::Finder::new(key), floor: from }
    }
}

impl<'a> Iterator for TagsHolding<'a> {
    type Item = Markup<'a>;

    fn next(&mut self) -> Option<Markup<'a>> {
        loop {
            let found = self.at + self.key.find(&self.input[self.at..self.end])?;
            self.at = found + 1;
            if found < self.floor {
                // Inside the tag given last.
                continue;
            }
            let Some(open) = memchr::memrchr(b'<', &self.input[self.floor..found]).map(|k| self.floor + k) else {
                // In the same text or tag as the previous occurrence.
                self.floor = found + 1;
                continue;
            };
            match tag_at(self.input, open) {
                Some(markup @ Markup::Start { end, .. }) if end > found => {
                    self.floor = end;
                    return Some(markup);
                }
                // In the text after a tag, or in an end tag.
                _ => self.floor = found + 1,
            }
        }
    }
}

/// What the streaming driver must know of the whole document before it transforms the first
/// routine: every statement id (the ids the engine invents avoid them, including those of
/// routines not read yet) and which routines have a body (TypeChange waits for a callee read
/// later only if it has one). Found by the driver's own scan ([`Survey::of`]), or handed over
/// by validation running alongside, whose first scan walks the same tags anyway
/// ([`crate::xaif::validate::Progress::take_survey`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Survey {
    /// Every `statement_id` of the document.
    pub statement_ids: crate::ir::build::ReservedIds,
    /// `(symbol_id, scope_id)` of every `ControlFlowGraph`.
    pub bodies: rustc_hash::FxHashSet<(Box<str>, Box<str>)>,
}

impl Survey {
    /// Scans `input`. Malformed XML is left to the reader, which reports it located: the
    /// survey then holds what was found so far. `Err` names why the document must be read
    /// whole rather than routine by routine.
    pub fn of(input: &[u8]) -> Result<Survey, &'static str> {
        let mut surveyor = Surveyor::default();
        let mut depth = 0usize;
        for markup in Tags::new(input) {
            let Markup::Start { name, attributes, empty, .. } = markup else {
                depth = depth.saturating_sub(1);
                continue;
            };
            surveyor.start_tag(depth, local_name(name), attributes)?;
            if !empty {
                depth += 1;
            }
        }
        Ok(surveyor.finish())
    }
}

/// Builds a [`Survey`] from the start tags of a document, in order, for scans that walk them
/// for their own ends as well.
#[derive(Debug, Default)]
pub(crate) struct Surveyor<'a> {
    survey: Survey,
    /// The statement ids of the routine being scanned, as they stand in the input.
    in_routine: rustc_hash::FxHashSet<&'a [u8]>,
}

impl<'a> Surveyor<'a> {
    /// One start tag: `local` its local name, `depth` the number of elements open around it.
    /// `Err` as [`Survey::of`] gives it, at the first tag that calls for the whole document.
    pub(crate) fn start_tag(&mut self, depth: usize, local: &[u8], attributes: &'a [u8]) -> Result<(), &'static str> {
        if depth == 1 && matches!(local, b"ControlFlowGraph" | b"ReplacementList") {
            self.in_routine.clear();
            if local == b"ControlFlowGraph"
                && let (Some(symbol), Some(scope)) =
                    (id_attribute(attributes, b"symbol_id")?, id_attribute(attributes, b"scope_id")?)
            {
                self.survey.bodies.insert((symbol.into(), scope.into()));
            }
        }
        if matches!(
            local,
            b"Assignment" | b"SubroutineCall" | b"Marker" | b"InlinableSubroutineCall" | b"Initialization" | b"Update"
        ) && let Some(id) = id_attribute(attributes, b"statement_id")?
        {
            self.survey.statement_ids.insert(id);
            if !self.in_routine.insert(id.as_bytes()) {
                // The lenient reader renames the repeats, which only a whole read can do alike.
                return Err("a statement id repeats in a routine");
            }
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> Survey {
        self.survey
    }

    /// Takes in the survey of the rest of the document, begun at a routine's start tag.
    pub(crate) fn append(&mut self, rest: Surveyor<'a>) {
        self.survey.statement_ids.extend(rest.survey.statement_ids);
        self.survey.bodies.extend(rest.survey.bodies);
        self.in_routine = rest.in_routine;
    }
}

/// An id attribute's raw value; values the reader would decode or normalize call for the
/// whole document, and ids that are not text are the reader's to report.
fn id_attribute<'a>(attributes: &'a [u8], key: &[u8]) -> Result<Option<&'a str>, &'static str> {
    let Some(value) = attribute(attributes, key) else { return Ok(None) };
    if needs_decoding(value) {
        return Err("an id needs decoding");
    }
    Ok(std::str::from_utf8(value).ok())
}

/// A qualified name's local part.
pub(crate) fn local_name(name: &[u8]) -> &[u8] {
    match memchr::memchr(b':', name) {
        Some(colon) => &name[colon + 1..],
        None => name,
    }
}

/// The raw value of the first attribute named `key` in a start tag's attribute text (`None`
/// where there is none, or the text stops being `name="value"` pairs before it).
pub(crate) fn attribute<'a>(attributes: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut rest = attributes;
    while let Some((name, value, after)) = next_attribute(rest) {
        if name == key {
            return Some(value);
        }
        rest = after;
    }
    None
}

/// Whether an attribute value holds what the XML parser would decode or normalize (references,
/// white space other than blanks): such a value is not its own text.
pub(crate) fn needs_decoding(value: &[u8]) -> bool {
    value.iter().any(|b| matches!(b, b'&' | b'\t' | b'\n' | b'\r'))
}

/// The first `name="value"` (or `'value'`) of a start tag's attribute text and what follows
/// it; `None` at the end or where the text is not well-formed.
fn next_attribute(text: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let text = text.trim_ascii_start();
    let equals = memchr::memchr(b'=', text)?;
    let name = text[..equals].trim_ascii_end();
    let value = text[equals + 1..].trim_ascii_start();
    let quote = *value.first().filter(|q| matches!(q, b'"' | b'\''))?;
    let end = memchr::memchr(quote, &value[1..])?;
    Some((name, &value[1..1 + end], &value[end + 2..]))
}

/// Where a tag's closing `>` is (attribute values may hold `>`): the reader's vector scan.
fn tag_end(tag: &[u8]) -> Option<usize> {
    super::lexer::tag_end(tag, 0)
}

/// Where a `<!…>` declaration (a DOCTYPE with its internal subset) ends, past its `>`.
fn declaration_end(text: &[u8]) -> Option<usize> {
    let (mut depth, mut quote) = (0usize, None);
    for (k, &b) in text.iter().enumerate() {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'[') => depth += 1,
            (None, b']') => depth = depth.saturating_sub(1),
            (None, b'>') if depth == 0 => return Some(k + 1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_skip_what_is_not_markup_and_say_where_they_are() {
        let input = br#"<?xml version="1.0"?>
<!DOCTYPE x [ <!ENTITY e "a>b"> ]>
<r a='x > y'><!-- <c/> --><![CDATA[ <d/> ]]><e k = "v" j="w"/></r>"#;
        let tags: Vec<Markup> = Tags::new(input).collect();
        assert_eq!(tags.len(), 3, "{tags:?}");
        let Markup::Start { name, empty: false, start, end, .. } = tags[0] else { panic!("{tags:?}") };
        assert_eq!((name, &input[start..end]), (&b"r"[..], &br#"<r a='x > y'>"#[..]));
        let Markup::Start { name, attributes, empty: true, .. } = tags[1] else { panic!("{tags:?}") };
        assert_eq!(name, b"e");
        assert_eq!(attribute(attributes, b"j"), Some(&b"w"[..]));
        assert_eq!(attribute(attributes, b"k"), Some(&b"v"[..]));
        assert!(matches!(tags[2], Markup::End { end } if end == input.len()));
    }

    #[test]
    fn unclosed_markup_ends_the_scan() {
        assert_eq!(Tags::new(b"<r><!-- never closed").count(), 1);
        assert_eq!(Tags::new(b"<r a=\"x>").count(), 0);
    }
}
