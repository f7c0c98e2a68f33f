//! Located findings: every complaint about an input names the file, the line and column of
//! the offending element, the element, and what is wrong.

use std::fmt;

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Severity {
    Error,
    Warning,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Diagnostic {
    pub severity: Severity,
    pub file: String,
    pub line: usize,
    pub column: usize,
    /// Local name of the element the finding is about (`Symbol`, `ControlFlowEdge`, …).
    pub element: String,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "",
            Severity::Warning => "warning: ",
        };
        write!(f, "{}:{}:{}: {}{}: {}", self.file, self.line, self.column, severity, self.element, self.message)
    }
}

/// Maps byte offsets of one input to 1-based line and column (columns count characters).
pub struct LineIndex<'a> {
    input: &'a [u8],
    line_starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub fn new(input: &'a [u8]) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(memchr::memchr_iter(b'\n', input).map(|i| i + 1));
        LineIndex { input, line_starts }
    }

    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.input.len());
        let line = self.line_starts.partition_point(|&start| start <= offset);
        let start = self.line_starts[line - 1];
        let column = String::from_utf8_lossy(&self.input[start..offset]).chars().count() + 1;
        (line, column)
    }
}

/// Line and column of one offset, without building an index (for the single error of a read).
pub fn line_column(input: &[u8], offset: usize) -> (usize, usize) {
    let offset = offset.min(input.len());
    let before = &input[..offset];
    let line = memchr::memchr_iter(b'\n', before).count() + 1;
    let start = memchr::memrchr(b'\n', before).map_or(0, |p| p + 1);
    let column = String::from_utf8_lossy(&input[start..offset]).chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_to_lines_and_columns() {
        let text = b"ab\ncd\n\xc3\xa9f";
        let index = LineIndex::new(text);
        assert_eq!(index.line_column(0), (1, 1));
        assert_eq!(index.line_column(4), (2, 2));
        assert_eq!(index.line_column(8), (3, 2));
        assert_eq!(line_column(text, 8), (3, 2));
        assert_eq!(line_column(text, 3), (2, 1));
    }
}
