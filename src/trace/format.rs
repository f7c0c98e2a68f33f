//! Reading and writing traces, streaming.
//!
//! The [`Writer`] writes one element per line, as `OAD_trace` does, and keeps the trace well
//! formed: a program that jumps out of a traced construct (a `goto` out of a branch, an `exit`
//! out of a loop) never reaches that construct's end call, so the writer closes what is still
//! open inside an element when that element closes, and everything at the end of the trace.
//! Both an original and its traced version leave the same constructs open, so they still
//! give equal traces.
//!
//! The [`Reader`] is a small XML tokenizer of its own for this one format (the crate's XML
//! libraries stay in `xaif`): it holds one tag and the stack of open elements, never the
//! trace, and every error it reports is located `file:line:column`.

use std::io::{self, Read, Write};

use super::{Event, Kind, Open};

/// The deepest nesting a trace may have: far beyond any program's, and it keeps the reader's
/// stack (the only memory it grows) bounded.
pub const MAX_DEPTH: usize = 100_000;

/// The longest attribute value (a routine or variable name) the reader takes.
const MAX_VALUE: usize = 1 << 16;

/// Text escaped for an attribute value.
pub(crate) struct Escaped<'a>(pub &'a str);

impl std::fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in self.0.chars() {
            match c {
                '&' => f.write_str("&amp;")?,
                '<' => f.write_str("&lt;")?,
                '>' => f.write_str("&gt;")?,
                '"' => f.write_str("&quot;")?,
                c => write!(f, "{c}")?,
            }
        }
        Ok(())
    }
}

/// Why a trace could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot write the trace: {0}")]
    Io(#[from] io::Error),
    /// An end event without its start: the traced program's calls do not pair up.
    #[error("{0}")]
    Unpaired(String),
}

/// Writes a trace event by event.
pub struct Writer<W: Write> {
    out: W,
    open: Vec<Kind>,
    events: u64,
}

impl<W: Write> Writer<W> {
    /// Starts trace number `number` (the runtime counts the traces it opens from 1).
    pub fn new(mut out: W, number: u32) -> io::Result<Writer<W>> {
        writeln!(out, "<Trace number=\"{number}\">")?;
        Ok(Writer { out, open: Vec::new(), events: 0 })
    }

    /// Writes one event. An end closes the innermost open element of its kind, and whatever
    /// was left open inside it first; an end with no open element of its kind is an error.
    pub fn event(&mut self, event: &Event) -> Result<(), WriteError> {
        match event {
            Event::Open(open) => self.open.push(open.kind),
            Event::Close(kind) => {
                let Some(at) = self.open.iter().rposition(|k| k == kind) else {
                    return Err(WriteError::Unpaired(format!(
                        "the trace's end of {} has no {} open",
                        kind.element(),
                        kind.element()
                    )));
                };
                while self.open.len() > at + 1 {
                    let inner = self.open.pop().expect("deeper than at");
                    writeln!(self.out, "{}", Event::Close(inner))?;
                    self.events += 1;
                }
                self.open.pop();
            }
            Event::Index(_) | Event::Cfval(_) | Event::Tan(_) => {}
        }
        writeln!(self.out, "{event}")?;
        self.events += 1;
        Ok(())
    }

    /// How many elements are open.
    pub fn depth(&self) -> usize {
        self.open.len()
    }

    /// Closes the elements open at `depth` and deeper (a routine returned without reaching
    /// their ends).
    pub fn close_to(&mut self, depth: usize) -> io::Result<()> {
        while self.open.len() > depth {
            let kind = self.open.pop().expect("deeper than depth");
            writeln!(self.out, "{}", Event::Close(kind))?;
            self.events += 1;
        }
        Ok(())
    }

    /// Events written so far (implicit ends included).
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Closes what is open, ends the trace and hands back the destination, flushed.
    pub fn finish(mut self) -> io::Result<W> {
        self.close_to(0)?;
        writeln!(self.out, "</Trace>")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A malformed or truncated trace, located.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {element}: {message}")]
pub struct TraceError {
    pub file: String,
    pub line: u64,
    pub column: u64,
    /// The element at fault (`Trace` for the document itself).
    pub element: String,
    pub message: String,
}

/// An event and where its tag starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    pub event: Event,
    pub line: u64,
    pub column: u64,
}

/// Reads a trace event by event.
pub struct Reader<R: Read> {
    input: R,
    file: String,
    buf: Box<[u8]>,
    pos: usize,
    len: usize,
    line: u64,
    column: u64,
    /// Open elements with where they start.
    open: Vec<(Kind, u64, u64)>,
    started: bool,
    ended: bool,
    /// The end of an element written empty (`<Call …/>`), handed out next.
    pending: Option<Located>,
    max_depth: usize,
}

/// A tag as read.
struct Tag {
    name: String,
    end: bool,
    empty: bool,
    attributes: Vec<(String, String)>,
    line: u64,
    column: u64,
}

impl<R: Read> Reader<R> {
    pub fn new(input: R, file: &str) -> Reader<R> {
        Reader {
            input,
            file: file.to_owned(),
            buf: vec![0; 64 << 10].into_boxed_slice(),
            pos: 0,
            len: 0,
            line: 1,
            column: 1,
            open: Vec::new(),
            started: false,
            ended: false,
            pending: None,
            max_depth: 0,
        }
    }

    /// The file name errors are located in.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// How many elements are open after the last event.
    pub fn depth(&self) -> usize {
        self.open.len()
    }

    /// The deepest the reader's stack has been: what its memory grew with.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Where the reader is.
    pub fn position(&self) -> (u64, u64) {
        (self.line, self.column)
    }

    fn error_at(&self, line: u64, column: u64, element: &str, message: impl Into<String>) -> TraceError {
        TraceError { file: self.file.clone(), line, column, element: element.to_owned(), message: message.into() }
    }

    fn error_here(&self, element: &str, message: impl Into<String>) -> TraceError {
        self.error_at(self.line, self.column, element, message)
    }

    #[inline]
    fn peek(&mut self) -> Result<Option<u8>, TraceError> {
        if self.pos < self.len {
            return Ok(Some(self.buf[self.pos]));
        }
        self.refill()
    }

    /// Reads the next chunk of the input; its first byte, or `None` at the end.
    fn refill(&mut self) -> Result<Option<u8>, TraceError> {
        self.pos = 0;
        self.len = loop {
            match self.input.read(&mut self.buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.error_here("Trace", format!("cannot read: {e}"))),
            }
        };
        Ok(if self.len == 0 { None } else { Some(self.buf[0]) })
    }

    #[inline]
    fn bump(&mut self) -> Result<Option<u8>, TraceError> {
        let b = self.peek()?;
        if let Some(b) = b {
            self.pos += 1;
            if b == b'\n' {
                self.line += 1;
                self.column = 1;
            } else if b & 0xC0 != 0x80 {
                // Columns count characters, not UTF-8 continuation bytes.
                self.column += 1;
            }
        }
        Ok(b)
    }

    /// The next event, `None` after `</Trace>` and the end of the input.
    pub fn next_event(&mut self) -> Result<Option<Located>, TraceError> {
        if let Some(end) = self.pending.take() {
            return Ok(Some(end));
        }
        loop {
            let Some(tag) = self.next_tag()? else {
                return Ok(None);
            };
            if let Some(event) = self.event_of(tag)? {
                return Ok(Some(event));
            }
        }
    }

    /// The next tag, past blank text, comments and the XML declaration; `None` at the end of
    /// a complete trace.
    fn next_tag(&mut self) -> Result<Option<Tag>, TraceError> {
        loop {
            let (line, column) = (self.line, self.column);
            match self.bump()? {
                None => {
                    return if self.ended {
                        Ok(None)
                    } else if let Some(&(kind, l, c)) = self.open.last() {
                        Err(self.error_at(
                            line,
                            column,
                            kind.element(),
                            format!("the trace ends inside the {} opened at {l}:{c}: it is truncated", kind.element()),
                        ))
                    } else if self.started {
                        Err(self.error_at(line, column, "Trace", "the trace ends without </Trace>: it is truncated"))
                    } else {
                        Err(self.error_at(line, column, "Trace", "no <Trace> element: not a trace"))
                    };
                }
                Some(b' ' | b'\t' | b'\r' | b'\n') => continue,
                Some(b'<') => {}
                Some(_) => {
                    let element = self.open.last().map_or("Trace", |(k, _, _)| k.element());
                    return Err(self.error_at(line, column, element, "text in a trace, where only elements may be"));
                }
            }
            match self.peek()? {
                Some(b'?') => {
                    self.skip_until(b"?>", line, column, "declaration")?;
                    continue;
                }
                Some(b'!') => {
                    self.bump()?;
                    for expected in [b'-', b'-'] {
                        if self.bump()? != Some(expected) {
                            return Err(self.error_at(line, column, "Trace", "markup other than a comment"));
                        }
                    }
                    self.skip_until(b"-->", line, column, "comment")?;
                    continue;
                }
                _ => {}
            }
            if self.ended {
                return Err(self.error_at(line, column, "Trace", "an element after </Trace>"));
            }
            return self.tag(line, column).map(Some);
        }
    }

    fn skip_until(&mut self, end: &[u8], line: u64, column: u64, what: &str) -> Result<(), TraceError> {
        let mut matched = 0;
        while matched < end.len() {
            match self.bump()? {
                None => return Err(self.error_at(line, column, "Trace", format!("the trace ends inside a {what}"))),
                Some(b) if b == end[matched] => matched += 1,
                Some(b) => matched = usize::from(b == end[0]),
            }
        }
        Ok(())
    }

    fn name(&mut self) -> Result<String, TraceError> {
        let mut name = String::new();
        while let Some(b) = self.peek()? {
            if b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'-' | b'.') {
                name.push(b as char);
                self.bump()?;
                if name.len() > 256 {
                    return Err(self.error_here("Trace", "a name longer than 256 characters"));
                }
            } else {
                break;
            }
        }
        Ok(name)
    }

    fn blanks(&mut self) -> Result<bool, TraceError> {
        let mut any = false;
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek()? {
            self.bump()?;
            any = true;
        }
        Ok(any)
    }

    /// A tag after its `<`.
    fn tag(&mut self, line: u64, column: u64) -> Result<Tag, TraceError> {
        let end = self.peek()? == Some(b'/');
        if end {
            self.bump()?;
        }
        let name = self.name()?;
        if name.is_empty() {
            return Err(self.error_at(line, column, "Trace", "a '<' that starts no tag"));
        }
        let mut tag = Tag { name, end, empty: false, attributes: Vec::new(), line, column };
        loop {
            let blank = self.blanks()?;
            match self.peek()? {
                None => {
                    return Err(self.error_here(&tag.name, "the trace ends inside a tag: it is truncated"));
                }
                Some(b'>') => {
                    self.bump()?;
                    return Ok(tag);
                }
                Some(b'/') if !tag.end => {
                    self.bump()?;
                    if self.bump()? != Some(b'>') {
                        return Err(self.error_here(&tag.name, "'/' not followed by '>'"));
                    }
                    tag.empty = true;
                    return Ok(tag);
                }
                Some(_) if blank && !tag.end => {
                    let attribute = self.attribute(&tag.name)?;
                    if tag.attributes.iter().any(|(n, _)| *n == attribute.0) {
                        return Err(self.error_here(&tag.name, format!("attribute {} given twice", attribute.0)));
                    }
                    tag.attributes.push(attribute);
                }
                Some(b) => {
                    return Err(self.error_here(&tag.name, format!("unexpected '{}' in a tag", b.escape_ascii())));
                }
            }
        }
    }

    fn attribute(&mut self, element: &str) -> Result<(String, String), TraceError> {
        let name = self.name()?;
        if name.is_empty() {
            return Err(self.error_here(element, "an attribute without a name"));
        }
        self.blanks()?;
        if self.bump()? != Some(b'=') {
            return Err(self.error_here(element, format!("attribute {name} without '='")));
        }
        self.blanks()?;
        let quote = match self.bump()? {
            Some(q @ (b'"' | b'\'')) => q,
            _ => return Err(self.error_here(element, format!("the value of {name} is not quoted"))),
        };
        let mut bytes = Vec::new();
        loop {
            match self.bump()? {
                None => {
                    return Err(self.error_here(element, "the trace ends inside an attribute value: it is truncated"));
                }
                Some(b) if b == quote => break,
                Some(b'<') => return Err(self.error_here(element, format!("'<' in the value of {name}"))),
                Some(b'&') => {
                    let mut entity = String::new();
                    loop {
                        match self.bump()? {
                            Some(b';') => break,
                            Some(b) if entity.len() < 10 && (b.is_ascii_alphanumeric() || b == b'#') => {
                                entity.push(b as char)
                            }
                            _ => return Err(self.error_here(element, format!("a bad entity in the value of {name}"))),
                        }
                    }
                    let c = match entity.as_str() {
                        "amp" => Some('&'),
                        "lt" => Some('<'),
                        "gt" => Some('>'),
                        "quot" => Some('"'),
                        "apos" => Some('\''),
                        _ => entity
                            .strip_prefix("#x")
                            .map(|hex| u32::from_str_radix(hex, 16))
                            .or_else(|| entity.strip_prefix('#').map(str::parse::<u32>))
                            .and_then(Result::ok)
                            .and_then(char::from_u32),
                    };
                    let Some(c) = c else {
                        return Err(
                            self.error_here(element, format!("unknown entity &{entity}; in the value of {name}"))
                        );
                    };
                    bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                Some(b) => bytes.push(b),
            }
            if bytes.len() > MAX_VALUE {
                return Err(self.error_here(element, format!("the value of {name} is longer than {MAX_VALUE} bytes")));
            }
        }
        match String::from_utf8(bytes) {
            Ok(value) => Ok((name, value)),
            Err(_) => Err(self.error_here(element, format!("the value of {name} is not UTF-8"))),
        }
    }

    /// The event a tag stands for (`None` for `<Trace>`).
    fn event_of(&mut self, tag: Tag) -> Result<Option<Located>, TraceError> {
        let Tag { name, end, empty, attributes, line, column } = tag;
        let at = |event| Located { event, line, column };
        let bad = |me: &Self, message: String| me.error_at(line, column, &name, message);
        if name == "Trace" {
            if end {
                if let Some(&(kind, l, c)) = self.open.last() {
                    return Err(bad(self, format!("</Trace> while the {} opened at {l}:{c} is open", kind.element())));
                }
                if !self.started {
                    return Err(bad(self, "</Trace> without <Trace>".into()));
                }
                self.ended = true;
                return Ok(None);
            }
            if self.started {
                return Err(bad(self, "a Trace inside a trace".into()));
            }
            if let Some((other, _)) = attributes.iter().find(|(n, _)| n != "number") {
                return Err(bad(self, format!("unexpected attribute {other}")));
            }
            self.started = true;
            if empty {
                self.ended = true;
            }
            return Ok(None);
        }
        if !self.started {
            return Err(bad(self, format!("<{name}> before <Trace>")));
        }
        let integer = |me: &Self, attribute: &str| -> Result<i64, TraceError> {
            let Some((_, value)) = attributes.iter().find(|(n, _)| n == attribute) else {
                return Err(bad(me, format!("missing attribute {attribute}")));
            };
            value.trim().parse::<i64>().map_err(|_| bad(me, format!("{attribute}=\"{value}\" is not an integer")))
        };
        let only = |me: &Self, allowed: &[&str]| match attributes.iter().find(|(n, _)| !allowed.contains(&n.as_str())) {
            Some((other, _)) => Err(bad(me, format!("unexpected attribute {other}"))),
            None => Ok(()),
        };
        if let Some(kind) = Kind::from_element(&name) {
            if end {
                return match self.open.pop() {
                    Some((open, _, _)) if open == kind => Ok(Some(at(Event::Close(kind)))),
                    Some((open, l, c)) => {
                        Err(bad(self, format!("</{name}> closes the {} opened at {l}:{c}", open.element())))
                    }
                    None => Err(bad(self, format!("</{name}> without <{name}>"))),
                };
            }
            let open = match kind {
                Kind::Call => {
                    only(self, &["name", "line"])?;
                    let Some((_, callee)) = attributes.iter().find(|(n, _)| n == "name") else {
                        return Err(bad(self, "missing attribute name".into()));
                    };
                    Open::call(callee, integer(self, "line")?)
                }
                Kind::Arg => {
                    only(self, &["name"])?;
                    let Some((_, arg)) = attributes.iter().find(|(n, _)| n == "name") else {
                        return Err(bad(self, "missing attribute name".into()));
                    };
                    Open::arg(arg)
                }
                Kind::Loop | Kind::Branch => {
                    only(self, &["line"])?;
                    Open::with_line(kind, integer(self, "line")?)
                }
                Kind::Initialization | Kind::Condition | Kind::Update => {
                    only(self, &[])?;
                    Open::bare(kind)
                }
            };
            if empty {
                self.pending = Some(at(Event::Close(kind)));
            } else {
                if self.open.len() >= MAX_DEPTH {
                    return Err(bad(self, format!("elements nest deeper than {MAX_DEPTH}")));
                }
                self.open.push((kind, line, column));
                self.max_depth = self.max_depth.max(self.open.len());
            }
            return Ok(Some(at(Event::Open(open))));
        }
        let (attribute, make): (&str, fn(i64) -> Event) = match name.as_str() {
            "Index" => ("val", Event::Index),
            "Cfval" => ("val", Event::Cfval),
            "Tan" => ("sd", Event::Tan),
            _ => return Err(bad(self, format!("unknown element <{name}>"))),
        };
        if end || !empty {
            return Err(bad(self, format!("{name} must be an empty element (<{name} {attribute}=\"…\"/>)")));
        }
        only(self, &[attribute])?;
        Ok(Some(at(make(integer(self, attribute)?))))
    }
}

/// Reads a whole trace into its events (for tests and small traces).
pub fn read_all(input: impl Read, file: &str) -> Result<Vec<Event>, TraceError> {
    let mut reader = Reader::new(input, file);
    let mut events = Vec::new();
    while let Some(located) = reader.next_event()? {
        events.push(located.event);
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_as_the_runtime_and_reads_back() {
        let events = vec![
            Event::Open(Open::call("foo & <bar>", 12)),
            Event::Open(Open::arg("x")),
            Event::Index(-3),
            Event::Close(Kind::Arg),
            Event::Open(Open::with_line(Kind::Loop, 4)),
            Event::Cfval(10),
            Event::Close(Kind::Loop),
            Event::Tan(1),
            Event::Close(Kind::Call),
        ];
        let mut writer = Writer::new(Vec::new(), 1).unwrap();
        for e in &events {
            writer.event(e).unwrap();
        }
        let bytes = writer.finish().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with(
            "<Trace number=\"1\">\n<Call name=\"foo &amp; &lt;bar&gt;\" line=\"12\">\n<Arg name=\"x\">\n"
        ));
        assert!(text.ends_with("</Call>\n</Trace>\n"));
        assert_eq!(read_all(&bytes[..], "t.xml").unwrap(), events);
    }

    #[test]
    fn an_end_closes_what_a_jump_left_open() {
        let mut writer = Writer::new(Vec::new(), 1).unwrap();
        writer.event(&Event::Open(Open::with_line(Kind::Loop, 1))).unwrap();
        writer.event(&Event::Open(Open::with_line(Kind::Branch, 2))).unwrap();
        writer.event(&Event::Close(Kind::Loop)).unwrap();
        assert!(matches!(writer.event(&Event::Close(Kind::Call)), Err(WriteError::Unpaired(_))));
        writer.event(&Event::Open(Open::with_line(Kind::Branch, 3))).unwrap();
        let text = String::from_utf8(writer.finish().unwrap()).unwrap();
        assert_eq!(
            text,
            "<Trace number=\"1\">\n<Loop line=\"1\">\n<Branch line=\"2\">\n</Branch>\n</Loop>\n<Branch line=\"3\">\n</Branch>\n</Trace>\n"
        );
    }

    #[test]
    fn malformed_traces_are_located() {
        let cases: &[(&str, (u64, u64), &str)] = &[
            ("<Trace number=\"1\">\n<Loop line=\"3\">\n", (3, 1), "truncated"),
            ("<Trace>\n<Loop line=\"x\">\n</Loop></Trace>", (2, 1), "not an integer"),
            ("<Trace>\n  <Loop line=\"1\">\n</Branch>\n", (3, 1), "closes the Loop opened at 2:3"),
            ("<Trace>\n<Frob/>\n</Trace>", (2, 1), "unknown element"),
            ("<Trace>\nhello</Trace>", (2, 1), "text"),
            ("<Trace>\n<Call name=\"a\" line=\"1\"", (2, 24), "truncated"),
            ("", (1, 1), "not a trace"),
            ("<Trace>\n<Cfval val=\"1\">", (2, 1), "empty element"),
            ("<Trace></Trace>\n<Loop line=\"1\"/>", (2, 1), "after </Trace>"),
        ];
        for (text, (line, column), what) in cases {
            let error = read_all(text.as_bytes(), "t.xml").unwrap_err();
            assert_eq!((error.line, error.column), (*line, *column), "{text:?}: {error}");
            assert!(error.message.contains(what), "{text:?}: {error}");
            assert!(error.to_string().starts_with(&format!("t.xml:{line}:{column}: ")), "{error}");
        }
    }
}
