//! A bound on the attributes of one element, checked before any code whose cost grows with
//! the square of that number runs.
//!
//! roxmltree, which parses what our own scan declines and every catalogue, compares each
//! attribute of a start tag with all the ones before it: 60,000 attributes on one element
//! took seconds, 100,000 minutes. No XAIF or catalogue element has more than a dozen (the
//! schema's attributes, namespace declarations and `xsi:` ones), so an element with more than
//! [`MAX_ATTRIBUTES`] is refused, located, by a scan that costs one pass over the text.

/// The most attributes one element may have, namespace declarations included: several times
/// what any element of the XAIF schemas or the catalogues' takes.
pub const MAX_ATTRIBUTES: usize = 64;

/// A start tag with more than [`MAX_ATTRIBUTES`] attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crowded<'i> {
    /// Byte offset of the tag's `<`.
    pub offset: usize,
    /// The element's local name (after any prefix).
    pub element: &'i str,
    /// How many attributes it has.
    pub count: usize,
}

impl Crowded<'_> {
    /// What is wrong, for a diagnostic that names the element already.
    pub fn message(&self) -> String {
        format!("{} attributes, more than the {MAX_ATTRIBUTES} any XAIF or catalogue element may have", self.count)
    }
}

/// The first start tag of `text` with more than [`MAX_ATTRIBUTES`] attributes. Comments,
/// CDATA sections and processing instructions are skipped; at a DOCTYPE the scan stops (the
/// parsers refuse DTDs before they read any element). On malformed text the answer is only
/// a guess, but the scan always ends, in one pass.
pub fn first_crowded_element(text: &str) -> Option<Crowded<'_>> {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(found) = memchr::memchr(b'<', &bytes[at..]) {
        let start = at + found;
        let rest = &bytes[start + 1..];
        let skip_past = |end: &[u8]| memchr::memmem::find(&bytes[start + 1..], end).map(|n| start + 1 + n + end.len());
        at = if rest.starts_with(b"!--") {
            skip_past(b"-->")?
        } else if rest.starts_with(b"![CDATA[") {
            skip_past(b"]]>")?
        } else if rest.starts_with(b"?") {
            skip_past(b"?>")?
        } else if rest.starts_with(b"!") {
            return None;
        } else if rest.starts_with(b"/") {
            skip_past(b">")?
        } else {
            let (end, count) = start_tag(bytes, start + 1);
            if count > MAX_ATTRIBUTES {
                let name_end = bytes[start + 1..]
                    .iter()
                    .position(|b| b.is_ascii_whitespace() || matches!(b, b'/' | b'>'))
                    .map_or(bytes.len(), |n| start + 1 + n);
                let qualified = text.get(start + 1..name_end).unwrap_or("");
                let element = qualified.rsplit(':').next().unwrap_or(qualified);
                return Some(Crowded { offset: start, element, count });
            }
            end
        };
    }
    None
}

/// How many attributes a start tag's text (between `<` and `>`) has.
pub fn attribute_count(tag: &[u8]) -> usize {
    start_tag(tag, 0).1
}

/// Where the start tag whose name begins at `from` ends (after its `>`, or the text's end)
/// and how many attributes it has: the `=` outside quoted values.
fn start_tag(bytes: &[u8], from: usize) -> (usize, usize) {
    let mut count = 0;
    let mut at = from;
    while at < bytes.len() {
        match bytes[at] {
            b'>' => return (at + 1, count),
            b'=' => count += 1,
            quote @ (b'"' | b'\'') => match memchr::memchr(quote, &bytes[at + 1..]) {
                Some(n) => at += n + 1,
                None => return (bytes.len(), count),
            },
            _ => {}
        }
        at += 1;
    }
    (bytes.len(), count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(name: &str, n: usize) -> String {
        let attributes: String = (0..n).map(|i| format!(" a{i}=\"x>{i}\"")).collect();
        format!("<{name}{attributes}/>")
    }

    #[test]
    fn an_element_at_the_bound_passes_and_one_past_it_is_found_where_it_starts() {
        let at_bound = format!("<r>{}</r>", tag("x:A", MAX_ATTRIBUTES));
        assert_eq!(first_crowded_element(&at_bound), None);
        let past = format!("<r>\n{}{}</r>", tag("x:A", 2), tag("x:B", MAX_ATTRIBUTES + 1));
        let found = first_crowded_element(&past).expect("found");
        assert_eq!(found.element, "B");
        assert_eq!(found.count, MAX_ATTRIBUTES + 1);
        assert_eq!(&past[found.offset..found.offset + 4], "<x:B");
    }

    #[test]
    fn comments_cdata_and_instructions_are_not_tags() {
        let many = tag("A", MAX_ATTRIBUTES + 1);
        for wrapped in [format!("<!--{many}-->"), format!("<![CDATA[{many}]]>"), format!("<?pi {many}?>")] {
            let text = format!("<r>{wrapped}</r>");
            assert_eq!(first_crowded_element(&text), None, "{text}");
        }
    }

    #[test]
    fn unclosed_text_ends_the_scan() {
        for text in ["<a b=\"", "<!-- x", "<a", "<", "<r><![CDATA[", "<?x"] {
            assert_eq!(first_crowded_element(text), None, "{text}");
        }
    }
}
