//! The element stream the reader walks: errors located at an element, the next child of an
//! element, leaves, and content skipped unread.

use super::{Elem, Lower, ReadError, Result, XAIF_NAMESPACE};
use crate::ir::*;
use crate::xaif::check::{MAX_NESTING, Problem};
use crate::xaif::diagnostic::{Diagnostic, Severity, line_column};
use crate::xaif::lexer::Token;

impl<'a> Lower<'a> {
    // ---------------------------------------------------------------- errors and positions

    pub(super) fn error(&self, offset: usize, element: &str, message: impl Into<String>) -> ReadError {
        let (line, column) = line_column(self.input, offset);
        let file = self.file.to_owned();
        let (element, message) = (element.to_owned(), message.into());
        ReadError::one(Diagnostic { severity: Severity::Error, file, line, column, element, message })
    }

    /// A finding that is an error when strict and a warning otherwise.
    pub(super) fn lenient(&mut self, offset: usize, element: &str, message: String) -> Result<()> {
        if self.strict {
            return Err(self.error(offset, element, message));
        }
        let element = element.to_owned();
        self.problems.push(Problem { offset, element, severity: Severity::Warning, message });
        Ok(())
    }

    /// Edge ids are never referenced, so a repeated one loses nothing; older front ends wrote
    /// them (the reference engine accepts them too).
    pub(super) fn duplicate_edge(&mut self, offset: usize, element: &str, id: Name, parent: &str) -> Result<()> {
        let message = format!("duplicate edge_id '{}' in {parent}", self.cg.names.get(id));
        self.lenient(offset, element, message)
    }

    pub(super) fn position(&self) -> usize {
        self.lexer.position()
    }

    // ---------------------------------------------------------------- event plumbing

    /// Next child element of `parent`, or `None` at the parent's end tag.
    fn next_child(&mut self, parent: &str, parent_offset: usize) -> Result<Option<Elem<'a>>> {
        loop {
            let before = self.position();
            let token = match self.lexer.next_token() {
                Ok(token) => token,
                Err(e) => {
                    let at = self.position().max(before);
                    return Err(self.error(at, parent, format!("malformed XML: {e}")));
                }
            };
            match token {
                Token::Start { tag, name_len, empty, offset } => {
                    let elem = self.elem(tag, name_len, empty, offset)?;
                    self.depth += usize::from(!empty);
                    self.check_depth(&elem)?;
                    return Ok(Some(elem));
                }
                Token::End => {
                    self.depth -= 1;
                    return Ok(None);
                }
                Token::Text => return Err(self.error(before, parent, "unexpected text content")),
                Token::CData => return Err(self.error(before, parent, "unexpected CDATA content")),
                Token::Reference(name) => {
                    return Err(self.error(
                        before,
                        parent,
                        format!("unexpected entity reference '&{name};' in content"),
                    ));
                }
                Token::Ignorable | Token::Declaration => {}
                Token::DocType => {
                    return Err(self.error(before, parent, "DOCTYPE declarations are refused (no entity expansion)"));
                }
                Token::Eof => {
                    return Err(self.error(
                        self.input.len(),
                        parent,
                        format!(
                            "unexpected end of file: element opened at {} is not closed",
                            self.describe_offset(parent_offset)
                        ),
                    ));
                }
            }
        }
    }

    /// Refuses elements nested deeper than [`MAX_NESTING`]: every level costs the reader (and
    /// the passes after it) stack.
    fn check_depth(&self, elem: &Elem<'a>) -> Result<()> {
        let depth = self.depth + usize::from(elem.empty);
        if depth > MAX_NESTING {
            return Err(self.error(elem.offset, elem.name, format!("elements nest deeper than {MAX_NESTING} levels")));
        }
        Ok(())
    }

    fn describe_offset(&self, offset: usize) -> String {
        let (line, column) = line_column(self.input, offset);
        format!("{line}:{column}")
    }

    pub(super) fn elem(&self, raw: &'a str, name_len: usize, empty: bool, offset: usize) -> Result<Elem<'a>> {
        let qname: &'a str = &raw[..name_len];
        let local = if self.prefix.is_empty() {
            (!qname.contains(':')).then_some(qname)
        } else {
            // The prefix is ASCII (it was matched as bytes against the root's name).
            crate::bytes::starts_with(qname.as_bytes(), &self.prefix).then(|| &qname[self.prefix.len()..])
        };
        let Some(name) = local else {
            return Err(self.error(offset, qname, format!("element is not in the XAIF namespace {XAIF_NAMESPACE}")));
        };
        Ok(Elem { raw, name_len, empty, offset, name })
    }

    /// Consumes the rest of an element that may not have children.
    pub(super) fn leaf(&mut self, elem: &Elem<'a>) -> Result<()> {
        if elem.empty {
            return Ok(());
        }
        if let Some(child) = self.next_child(elem.name, elem.offset)? {
            return Err(self.unexpected(&child, elem.name));
        }
        Ok(())
    }

    pub(super) fn unexpected(&self, child: &Elem<'a>, parent: &str) -> ReadError {
        self.error(child.offset, child.name, format!("unexpected element in {parent}"))
    }

    /// The next child of an element already opened, `None` after its last.
    pub(super) fn children(&mut self, elem: &Elem<'a>) -> Result<Option<Elem<'a>>> {
        if elem.empty { Ok(None) } else { self.next_child(elem.name, elem.offset) }
    }

    /// Consumes everything in an element already opened, up to its end tag, without lowering
    /// it: the markup errors a full read finds there are found (and the same), what the
    /// elements mean is not looked at.
    pub(super) fn skip_content(&mut self, elem: &Elem<'a>) -> Result<()> {
        if elem.empty {
            return Ok(());
        }
        let mut open = std::mem::take(&mut self.skipping);
        open.clear();
        open.push((elem.name, elem.offset));
        while let Some(&(name, offset)) = open.last() {
            match self.next_child(name, offset)? {
                Some(child) if !child.empty => open.push((child.name, child.offset)),
                Some(_) => {}
                None => {
                    open.pop();
                }
            }
        }
        self.skipping = open;
        Ok(())
    }
}
