//! The reader's pull tokenizer. XAIF is start tags, end tags and blank text between them, and
//! those are recognized here, sixteen bytes at a time (see `tag_end`); anything else —
//! comments, processing instructions, CDATA, references, a DOCTYPE, text, markup that is not
//! closed — is handed to quick-xml, one event at a time, from where it begins.
//!
//! Why not quick-xml for everything: its tokenizer was the reader's largest cost. Per tag it
//! stops at every quote with a `memchr3` call and checks the tag's UTF-8 again (the reader has
//! checked the whole input once); on the corpus that was about 80 M of a tangent run's 310 M
//! instructions, where this tokenizer needs about 20 M. What quick-xml still does — the rare
//! constructs and every error message about malformed markup — it does as before, so the
//! reader accepts, refuses and words its findings as it did. The one check quick-xml kept
//! state for, that each end tag closes the element open, is made here, in its words.

use quick_xml::Reader;
use quick_xml::events::Event;

use super::words;

/// One piece of the document, as the reader needs it.
#[derive(Debug)]
pub(super) enum Token<'a> {
    /// A start tag: the text between `<` and `>` without an empty element's closing `/`, the
    /// length of its qualified name, whether it is empty (`/>`), and where its `<` is.
    Start { tag: &'a str, name_len: usize, empty: bool, offset: usize },
    /// An end tag, checked against the element it closes.
    End,
    /// Text that is not white space (the reader refuses it).
    Text,
    /// A general or character reference in content, by its name (without `&` and `;`).
    Reference(String),
    /// A CDATA section.
    CData,
    /// A comment or processing instruction.
    Ignorable,
    /// An XML declaration (`<?xml …?>`).
    Declaration,
    /// A document type declaration.
    DocType,
    /// The end of the input.
    Eof,
}

/// Tokens of a UTF-8 document, in order. After an error, [`Lexer::position`] is where the error
/// is best reported (as quick-xml's reader reports it).
pub(super) struct Lexer<'a> {
    text: &'a str,
    at: usize,
    /// Qualified names of the elements open at `at`, outermost first.
    open: Vec<&'a str>,
}

/// White space as XML (and quick-xml's trimming) knows it.
pub(super) fn is_blank(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

impl<'a> Lexer<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Lexer { text, at: 0, open: Vec::new() }
    }

    /// Byte offset in the input of what is read next.
    pub(super) fn position(&self) -> usize {
        self.at
    }

    /// The next token, white space between markup skipped. An error's message is quick-xml's.
    pub(super) fn next_token(&mut self) -> Result<Token<'a>, String> {
        let bytes = self.text.as_bytes();
        let at = self.at + first_non_blank(&bytes[self.at..]);
        if at == bytes.len() {
            self.at = at;
            return Ok(Token::Eof);
        }
        if bytes[at] == b'<' {
            match bytes.get(at + 1) {
                Some(b'!' | b'?') | None => {}
                Some(b'/') => {
                    if let Some(close) = tag_end(bytes, at + 2) {
                        return self.end_tag(at, close);
                    }
                }
                Some(_) => {
                    if let Some(close) = tag_end(bytes, at + 1) {
                        self.at = close + 1;
                        return Ok(self.start_tag(at, &self.text[at + 1..close]));
                    }
                }
            }
        }
        // Everything else from where it begins, white space included, as before.
        self.delegate()
    }

    fn start_tag(&mut self, offset: usize, content: &'a str) -> Token<'a> {
        let (tag, empty) = match content.strip_suffix('/') {
            Some(tag) => (tag, true),
            None => (content, false),
        };
        let name_len = first_blank(tag.as_bytes());
        if !empty {
            self.open.push(&tag[..name_len]);
        }
        Token::Start { tag, name_len, empty, offset }
    }

    /// The end tag from `<` at `offset` to `>` at `close`.
    fn end_tag(&mut self, offset: usize, close: usize) -> Result<Token<'a>, String> {
        self.at = close + 1;
        let name = self.text[offset + 2..close].trim_end_matches(|c: char| c.is_ascii() && is_blank(c as u8));
        match self.open.pop() {
            Some(expected) if crate::bytes::eq(expected.as_bytes(), name.as_bytes()) => Ok(Token::End),
            Some(expected) => Err(format!("ill-formed document: expected `</{expected}>`, but `</{name}>` was found")),
            None => Err(format!("ill-formed document: close tag `</{name}>` does not match any open tag")),
        }
    }

    /// One event read by quick-xml from the current position.
    fn delegate(&mut self) -> Result<Token<'a>, String> {
        let start = self.at;
        let rest = &self.text[start..];
        let mut reader = Reader::from_str(rest);
        let config = reader.config_mut();
        config.trim_text(true);
        config.expand_empty_elements = false;
        let event = reader.read_event();
        self.at = start + reader.buffer_position() as usize;
        let token = match event.map_err(|e| e.to_string())? {
            // Tags are delegated only where the loop above found no `>`, and quick-xml finds
            // none either: it reports the tag as not closed.
            Event::Start(_) | Event::Empty(_) | Event::End(_) => {
                return Err("syntax error: tag not closed: `>` not found before end of input".to_owned());
            }
            Event::Text(text) if text.trim_ascii().is_empty() && self.at > start => return self.next_token(),
            Event::Text(_) => Token::Text,
            Event::GeneralRef(reference) => Token::Reference((&*reference as &str).to_owned()),
            Event::CData(_) => Token::CData,
            Event::Comment(_) | Event::PI(_) => Token::Ignorable,
            Event::Decl(_) => Token::Declaration,
            Event::DocType(_) => Token::DocType,
            Event::Eof => Token::Eof,
        };
        Ok(token)
    }
}

/// Where the `>` that ends a tag is, scanning from `from` (quoted `>` skipped); `None` when the
/// input ends first.
pub(super) fn tag_end(bytes: &[u8], from: usize) -> Option<usize> {
    // Sixteen bytes at a time, as two words: the first `>` or `'` in them, and whether it is
    // inside a value from how many `"` come before it. A tag is 10 to 300 bytes; a byte at a
    // time, this was two thirds of the reader's tokenizing, and stopping at every quote
    // (quick-xml's way) more still. A `'` outside a value can hide `"`: such a tag is scanned
    // a byte at a time instead.
    let mut at = from;
    // Whether `at` is inside a `"` value.
    let mut inside = false;
    while let Some(chunk) = bytes.get(at..at + 16) {
        let (low, high) = (words::word(&chunk[..8]), words::word(&chunk[8..]));
        let stops_low = words::equal_first(low, b'>') | words::equal_first(low, b'\'');
        let stops_high = words::equal_first(high, b'>') | words::equal_first(high, b'\'');
        let (quotes_low, quotes_high) = (words::equal(low, b'"'), words::equal(high, b'"'));
        let odd = |quotes: u64| quotes.count_ones() % 2 == 1;
        if stops_low | stops_high == 0 {
            inside ^= odd(quotes_low ^ quotes_high);
            at += 16;
            continue;
        }
        let (stops, quotes, base) = if stops_low != 0 {
            (stops_low, quotes_low, at)
        } else {
            inside ^= odd(quotes_low);
            (stops_high, quotes_high, at + 8)
        };
        let bit = stops.trailing_zeros();
        let quoted = inside ^ odd(quotes & ((1 << bit) - 1));
        let stop = base + words::first_flagged(stops);
        match (bytes[stop], quoted) {
            (b'>', false) => return Some(stop),
            (_, false) => return tag_end_bytewise(bytes, from),
            // A `>` or `'` in a value: on after it.
            (_, true) => {
                inside = true;
                at = stop + 1;
            }
        }
    }
    let mut quote = if inside { b'"' } else { 0 };
    for (k, &byte) in bytes.iter().enumerate().skip(at) {
        if quote == 0 {
            if byte == b'>' {
                return Some(k);
            }
            if byte == b'\'' {
                return tag_end_bytewise(bytes, from);
            }
            if byte == b'"' {
                quote = byte;
            }
        } else if byte == quote {
            quote = 0;
        }
    }
    None
}

/// [`tag_end`] a byte at a time, for tags with either kind of quote.
fn tag_end_bytewise(bytes: &[u8], from: usize) -> Option<usize> {
    let mut quote = 0u8;
    for (k, &byte) in bytes.iter().enumerate().skip(from) {
        if quote == 0 {
            if byte == b'>' {
                return Some(k);
            }
            if byte == b'"' || byte == b'\'' {
                quote = byte;
            }
        } else if byte == quote {
            quote = 0;
        }
    }
    None
}

/// Where the first white space in `bytes` is, or its length.
pub(super) fn first_blank(bytes: &[u8]) -> usize {
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        // Control characters are flagged with white space, and passed over here.
        let low = words::at_most_space(words::word(chunk));
        if low == 0 {
            at += 8;
            continue;
        }
        at += words::first_flagged(low);
        if is_blank(bytes[at]) {
            return at;
        }
        at += 1;
    }
    bytes[at..].iter().position(|&b| is_blank(b)).map_or(bytes.len(), |k| at + k)
}

/// Where the first byte in `bytes` that is not white space is, or its length. Between tags
/// there is a line break and an indentation: runs of spaces go eight at a time.
pub(super) fn first_non_blank(bytes: &[u8]) -> usize {
    let mut at = 0;
    loop {
        if let Some(chunk) = bytes.get(at..at + 8) {
            let not_spaces = words::word(chunk) ^ words::SPACES;
            if not_spaces == 0 {
                at += 8;
                continue;
            }
            at += not_spaces.trailing_zeros() as usize / 8;
        }
        match bytes.get(at) {
            Some(&b) if is_blank(b) => at += 1,
            Some(_) => return at,
            None => return bytes.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        let mut lexer = Lexer::new(text);
        let mut out = Vec::new();
        loop {
            match lexer.next_token() {
                Ok(Token::Eof) => break,
                Ok(Token::Start { tag, name_len, empty, offset }) => {
                    out.push(format!("start {} {:?} empty={empty} at {offset}", &tag[..name_len], tag))
                }
                Ok(token) => out.push(format!("{token:?}")),
                Err(e) => {
                    out.push(format!("error at {}: {e}", lexer.position()));
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn tags_and_blank_text_take_the_fast_path() {
        let text = "<a x=\"1 > 2\" y='\"'>\n  <b/>\t<c z=\"3\" ></c >\n</a>";
        assert_eq!(
            tokens(text),
            [
                "start a \"a x=\\\"1 > 2\\\" y='\\\"'\" empty=false at 0",
                "start b \"b\" empty=true at 22",
                "start c \"c z=\\\"3\\\" \" empty=false at 27",
                "End",
                "End"
            ]
        );
    }

    #[test]
    fn the_rest_is_read_by_quick_xml() {
        let text = "<?xml version=\"1.0\"?><!-- c --><!DOCTYPE a><a><![CDATA[x]]><?pi?>text &amp;</a>";
        assert_eq!(
            tokens(text),
            [
                "Declaration",
                "Ignorable",
                "DocType",
                "start a \"a\" empty=false at 43",
                "CData",
                "Ignorable",
                "Text",
                "Reference(\"amp\")",
                "End"
            ]
        );
        assert_eq!(tokens("<a>  &lt;</a>"), ["start a \"a\" empty=false at 0", "Reference(\"lt\")", "End"]);
    }

    #[test]
    fn end_tags_must_close_the_open_element() {
        assert_eq!(
            tokens("<a><b></a>"),
            [
                "start a \"a\" empty=false at 0",
                "start b \"b\" empty=false at 3",
                "error at 10: ill-formed document: expected `</b>`, but `</a>` was found"
            ]
        );
        assert_eq!(tokens("</a>"), ["error at 4: ill-formed document: close tag `</a>` does not match any open tag"]);
    }

    #[test]
    fn unclosed_markup_is_reported_as_quick_xml_reports_it() {
        let quick = |text: &str| {
            let mut reader = Reader::from_str(text);
            reader.config_mut().trim_text(true);
            let mut last = String::new();
            loop {
                match reader.read_event() {
                    Ok(Event::Eof) => return last,
                    Ok(_) => {}
                    Err(e) => return format!("error at {}: {e}", reader.buffer_position()),
                }
                last = String::new();
            }
        };
        for text in ["<a x=\"1>", "<a><b", "<a></a", "<a><!-- x", "<a><![CDATA[", "<a><?p", "<a>&amp", "<a><"] {
            assert_eq!(tokens(text).last().cloned().unwrap_or_default(), quick(text), "{text}");
        }
    }

    proptest::proptest! {
        /// The word-wise scans agree with a byte at a time, quotes and `>` anywhere, across
        /// eight- and sixteen-byte boundaries, with control characters and the bytes next to
        /// the searched ones.
        #[test]
        fn word_scans_agree_with_bytewise(text in "[a \"'>/\n\t\r\x01\x0c\x1f!=?#]{0,80}") {
            let bytes = text.as_bytes();
            for from in [0, 1, 5, 17] {
                if from <= bytes.len() {
                    proptest::prop_assert_eq!(tag_end(bytes, from), tag_end_bytewise(bytes, from));
                }
            }
            let expected = |blank: bool| bytes.iter().position(|&b| is_blank(b) == blank).unwrap_or(bytes.len());
            proptest::prop_assert_eq!(first_blank(bytes), expected(true));
            proptest::prop_assert_eq!(first_non_blank(bytes), expected(false));
        }
    }
}
