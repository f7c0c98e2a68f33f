//! The tree the checks walk: elements with their namespaces and attributes, text, and
//! placeholders for comments and processing instructions, in document order.
//!
//! Why our own tree: parsing with roxmltree was most of what validation cost on a small file
//! (1.0 M of 1.57 M instructions on a median corpus file, validation itself half of a run).
//! XAIF is start tags, end tags, comments and blank text, and [`scan`] builds the tree from
//! those with the reader's tag scan (`lexer::tag_end`) in a fraction of that. It accepts only
//! what roxmltree would accept *and* build the same tree from: the moment it meets anything
//! else — an entity or character reference, CDATA, a DOCTYPE, a processing instruction,
//! text that is not blank, a name or value outside plain ASCII, white space in a value
//! (roxmltree normalizes it), a namespace declaration out of the ordinary, malformed markup —
//! it gives up, and [`parse`] lets roxmltree parse the document and converts its tree. So
//! what the checks see, and every message about malformed XML, is as it was with roxmltree
//! alone (a test holds the two to each other on the corpus and on mutated documents).
//!
//! The scan leaves out blank text and comments, which no check looks at (the checks skip
//! what is not an element, and report text only when it is not blank).

use std::borrow::Cow;
use std::ops::Range;

use super::super::crowded::{Crowded, MAX_ATTRIBUTES, first_crowded_element};
use super::super::lexer::{first_non_blank, is_blank, tag_end};

const NONE: u32 = u32::MAX;

/// The namespaces XML reserves, which declarations must not bind (the scan leaves such
/// declarations to roxmltree, which refuses them).
const XML_NAMESPACE: &str = "http://www.w3.org/XML/1998/namespace";
const XMLNS_NAMESPACE: &str = "http://www.w3.org/2000/xmlns/";

/// A parsed document.
pub(super) struct Tree<'i> {
    nodes: Vec<NodeData<'i>>,
    attributes: Vec<AttributeData<'i>>,
    /// Namespace URIs, each once (few: XAIF declares two).
    namespaces: Vec<Cow<'i, str>>,
    texts: Vec<Cow<'i, str>>,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Kind {
    /// The document, parent of the root element.
    Root,
    Element,
    Text,
    /// A comment or processing instruction (converted trees only).
    Other,
}

#[derive(Clone)]
struct NodeData<'i> {
    kind: Kind,
    /// An element's local name.
    name: &'i str,
    /// An element's namespace, an index into `Tree::namespaces`, or `NONE`.
    namespace: u32,
    /// An element's attributes, a range of `Tree::attributes`; a text node's text, an index
    /// into `Tree::texts` (in `start`).
    start: u32,
    end: u32,
    parent: u32,
    first_child: u32,
    last_child: u32,
    next_sibling: u32,
    /// After the last node of its subtree: nodes are in document order.
    subtree_end: u32,
    range: Range<usize>,
}

struct AttributeData<'i> {
    name: &'i str,
    namespace: u32,
    value: Cow<'i, str>,
}

/// Why a text has no tree.
#[derive(Debug)]
pub(super) enum ParseError<'i> {
    /// roxmltree refused it.
    Xml(roxmltree::Error),
    /// An element has more attributes than any XAIF element may (roxmltree's time would grow
    /// with the square of their number).
    Crowded(Crowded<'i>),
}

/// `text`'s tree: by the scan where it can, else roxmltree's, converted. The scan takes no
/// element with more than `MAX_ATTRIBUTES` attributes, and neither does roxmltree here.
pub(super) fn parse(text: &str) -> Result<Tree<'_>, ParseError<'_>> {
    if let Some(tree) = scan(text) {
        return Ok(tree);
    }
    if let Some(crowded) = first_crowded_element(text) {
        return Err(ParseError::Crowded(crowded));
    }
    let doc = roxmltree::Document::parse_with_options(text, roxmltree_options()).map_err(ParseError::Xml)?;
    Ok(Tree::from_document(&doc))
}

/// roxmltree's options: no DTD, so no entity expansion.
fn roxmltree_options<'i>() -> roxmltree::ParsingOptions<'i> {
    roxmltree::ParsingOptions { allow_dtd: false, ..roxmltree::ParsingOptions::default() }
}

impl<'i> Tree<'i> {
    fn new() -> Self {
        let root = NodeData {
            kind: Kind::Root,
            name: "",
            namespace: NONE,
            start: 0,
            end: 0,
            parent: NONE,
            first_child: NONE,
            last_child: NONE,
            next_sibling: NONE,
            subtree_end: NONE,
            range: 0..0,
        };
        Tree { nodes: vec![root], attributes: Vec::new(), namespaces: Vec::new(), texts: Vec::new() }
    }

    /// Appends a node as the last child of `parent`.
    fn append(&mut self, kind: Kind, parent: u32, start: usize) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(NodeData {
            kind,
            name: "",
            namespace: NONE,
            start: 0,
            end: 0,
            parent,
            first_child: NONE,
            last_child: NONE,
            next_sibling: NONE,
            subtree_end: NONE,
            range: start..start,
        });
        let parent = &mut self.nodes[parent as usize];
        let previous = std::mem::replace(&mut parent.last_child, id);
        if previous == NONE {
            parent.first_child = id;
        } else {
            self.nodes[previous as usize].next_sibling = id;
        }
        id
    }

    fn namespace_index(&mut self, uri: Cow<'i, str>) -> u32 {
        match self.namespaces.iter().position(|known| *known == uri) {
            Some(index) => index as u32,
            None => {
                self.namespaces.push(uri);
                (self.namespaces.len() - 1) as u32
            }
        }
    }

    /// Sets each node's `subtree_end`, once the tree is complete: a node's subtree ends where
    /// its next sibling begins, or where its parent's ends.
    fn finish(mut self, length: usize) -> Self {
        self.nodes[0].range = 0..length;
        self.nodes[0].subtree_end = self.nodes.len() as u32;
        for id in 1..self.nodes.len() {
            let node = &self.nodes[id];
            let end = match node.next_sibling {
                NONE => self.nodes[node.parent as usize].subtree_end,
                sibling => sibling,
            };
            self.nodes[id].subtree_end = end;
        }
        self
    }

    /// roxmltree's tree of a document, as ours.
    fn from_document(doc: &roxmltree::Document<'i>) -> Self {
        let mut tree = Tree::new();
        // Our id of each of roxmltree's nodes, by its id.
        let mut ours = vec![NONE; doc.descendants().map(|n| n.id().get_usize() + 1).max().unwrap_or(0)];
        ours[doc.root().id().get_usize()] = 0;
        let storage = |storage: &roxmltree::StringStorage<'i>| match storage {
            roxmltree::StringStorage::Borrowed(text) => Cow::Borrowed(*text),
            roxmltree::StringStorage::Owned(text) => Cow::Owned(text.to_string()),
        };
        for node in doc.root().descendants().skip(1) {
            let parent = node.parent().map_or(0, |p| ours[p.id().get_usize()]);
            let kind = match node.node_type() {
                roxmltree::NodeType::Element => Kind::Element,
                roxmltree::NodeType::Text => Kind::Text,
                _ => Kind::Other,
            };
            let id = tree.append(kind, parent, node.range().start);
            ours[node.id().get_usize()] = id;
            let mut data = tree.nodes[id as usize].clone();
            data.range = node.range();
            match kind {
                Kind::Element => {
                    data.name = node.tag_name().name();
                    data.namespace = match node.tag_name().namespace() {
                        Some(uri) => tree.namespace_index(Cow::Owned(uri.to_owned())),
                        None => NONE,
                    };
                    data.start = tree.attributes.len() as u32;
                    for attribute in node.attributes() {
                        let namespace = match attribute.namespace() {
                            Some(uri) => tree.namespace_index(Cow::Owned(uri.to_owned())),
                            None => NONE,
                        };
                        let value = storage(attribute.value_storage());
                        tree.attributes.push(AttributeData { name: attribute.name(), namespace, value });
                    }
                    data.end = tree.attributes.len() as u32;
                }
                Kind::Text => {
                    data.start = tree.texts.len() as u32;
                    tree.texts.push(node.text_storage().map_or(Cow::Borrowed(""), storage));
                }
                Kind::Root | Kind::Other => {}
            }
            tree.nodes[id as usize] = data;
        }
        tree.finish(doc.input_text().len())
    }

    fn node(&self, id: u32) -> Node<'_, 'i> {
        Node { tree: self, id }
    }

    /// The document node.
    pub(super) fn root(&self) -> Node<'_, 'i> {
        self.node(0)
    }

    /// The root element (every tree has one: a document without fails to parse).
    pub(super) fn root_element(&self) -> Node<'_, 'i> {
        self.root().children().find(|n| n.is_element()).unwrap_or_else(|| self.root())
    }

    /// Every node, the document's first, in document order.
    pub(super) fn descendants(&self) -> impl Iterator<Item = Node<'_, 'i>> {
        self.root().descendants()
    }
}

/// A node of a [`Tree`].
#[derive(Copy, Clone)]
pub(super) struct Node<'a, 'i> {
    tree: &'a Tree<'i>,
    id: u32,
}

impl PartialEq for Node<'_, '_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.tree, other.tree) && self.id == other.id
    }
}

impl std::fmt::Debug for Node<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {} at {:?}", self.data().kind, self.data().name, self.data().range)
    }
}

/// An element's name: its namespace URI, if any, and local name.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct ExpandedName<'a, 'i> {
    namespace: Option<&'a str>,
    name: &'i str,
}

impl<'a, 'i> ExpandedName<'a, 'i> {
    pub(super) fn namespace(&self) -> Option<&'a str> {
        self.namespace
    }

    pub(super) fn name(&self) -> &'i str {
        self.name
    }
}

/// An attribute of an element (namespace declarations are not attributes).
#[derive(Copy, Clone)]
pub(super) struct Attribute<'a, 'i> {
    tree: &'a Tree<'i>,
    data: &'a AttributeData<'i>,
}

impl<'a, 'i> Attribute<'a, 'i> {
    pub(super) fn name(&self) -> &'i str {
        self.data.name
    }

    pub(super) fn namespace(&self) -> Option<&'a str> {
        self.tree.namespace(self.data.namespace)
    }

    pub(super) fn value(&self) -> &'a str {
        &self.data.value
    }
}

impl<'i> Tree<'i> {
    fn namespace(&self, index: u32) -> Option<&str> {
        (index != NONE).then(|| &*self.namespaces[index as usize])
    }
}

impl<'a, 'i> Node<'a, 'i> {
    fn data(&self) -> &'a NodeData<'i> {
        &self.tree.nodes[self.id as usize]
    }

    fn at(&self, id: u32) -> Option<Node<'a, 'i>> {
        (id != NONE).then_some(Node { tree: self.tree, id })
    }

    pub(super) fn is_element(&self) -> bool {
        self.data().kind == Kind::Element
    }

    pub(super) fn is_text(&self) -> bool {
        self.data().kind == Kind::Text
    }

    /// A text node's text (`None` for other nodes).
    pub(super) fn text(&self) -> Option<&'a str> {
        let data = self.data();
        (data.kind == Kind::Text).then(|| &*self.tree.texts[data.start as usize])
    }

    /// An element's name; empty, without namespace, for other nodes.
    pub(super) fn tag_name(&self) -> ExpandedName<'a, 'i> {
        let data = self.data();
        ExpandedName { namespace: self.tree.namespace(data.namespace), name: data.name }
    }

    pub(super) fn has_tag_name(&self, (namespace, name): (&str, &str)) -> bool {
        let data = self.data();
        data.kind == Kind::Element && data.name == name && self.tree.namespace(data.namespace) == Some(namespace)
    }

    /// The value of the attribute `name` without namespace.
    pub(super) fn attribute(&self, name: &str) -> Option<&'a str> {
        let same = |a: &AttributeData| crate::bytes::eq(a.name.as_bytes(), name.as_bytes());
        self.attribute_data().iter().find(|a| a.namespace == NONE && same(a)).map(|a| &*a.value)
    }

    fn attribute_data(&self) -> &'a [AttributeData<'i>] {
        let data = self.data();
        match data.kind {
            Kind::Element => &self.tree.attributes[data.start as usize..data.end as usize],
            _ => &[],
        }
    }

    pub(super) fn attributes(&self) -> impl Iterator<Item = Attribute<'a, 'i>> + use<'a, 'i> {
        let tree = self.tree;
        self.attribute_data().iter().map(move |data| Attribute { tree, data })
    }

    /// Where the node is in the parsed text: an element from its `<` to after its end tag.
    pub(super) fn range(&self) -> Range<usize> {
        self.data().range.clone()
    }

    pub(super) fn parent(&self) -> Option<Node<'a, 'i>> {
        self.at(self.data().parent)
    }

    pub(super) fn first_child(&self) -> Option<Node<'a, 'i>> {
        self.at(self.data().first_child)
    }

    pub(super) fn children(&self) -> impl Iterator<Item = Node<'a, 'i>> + use<'a, 'i> {
        let tree = self.tree;
        let mut next = self.data().first_child;
        std::iter::from_fn(move || {
            let id = next;
            (id != NONE).then(|| {
                next = tree.nodes[id as usize].next_sibling;
                Node { tree, id }
            })
        })
    }

    /// The node and every node below it, in document order.
    pub(super) fn descendants(&self) -> impl Iterator<Item = Node<'a, 'i>> + use<'a, 'i> {
        let tree = self.tree;
        (self.id..self.data().subtree_end).map(move |id| Node { tree, id })
    }
}

/// The tree of `text` if the scan is sure roxmltree builds the same (else `None`).
pub(super) fn scan(text: &str) -> Option<Tree<'_>> {
    if u32::try_from(text.len()).is_err() {
        return None;
    }
    // Room for as many nodes as there are `<` and attributes as there are `=` (bounds, found
    // at memory speed), so that neither moves: pages reserved and not used cost no memory.
    let mut tree = Tree::new();
    tree.nodes.reserve(memchr::memchr_iter(b'<', text.as_bytes()).count());
    tree.attributes.reserve(memchr::memchr_iter(b'=', text.as_bytes()).count());
    let mut scan = Scan {
        text,
        bytes: text.as_bytes(),
        at: 0,
        tree,
        open: Vec::new(),
        bindings: Vec::new(),
        declarations: 0,
        pending: Vec::new(),
    };
    scan.document()?;
    Some(scan.tree.finish(text.len()))
}

/// The most namespace declarations the scan takes (XAIF has two); more go to roxmltree, whose
/// limits on them the scan does not count.
const MAX_DECLARATIONS: usize = 64;

struct Scan<'i> {
    text: &'i str,
    bytes: &'i [u8],
    at: usize,
    tree: Tree<'i>,
    /// Open elements: id, qualified name, and how many namespace bindings were in scope
    /// before its start tag.
    open: Vec<(u32, &'i str, usize)>,
    /// Namespace bindings in scope, innermost last: prefix (empty for the default namespace)
    /// and namespace index.
    bindings: Vec<(&'i str, u32)>,
    declarations: usize,
    /// The attributes of the start tag being read: prefix, local name, value.
    pending: Vec<(&'i str, &'i str, &'i str)>,
}

/// The length of the qualified name `bytes` begins with (ASCII letters, digits, `_`, `-`,
/// `.`, at most one `:` inside, a letter or `_` first) and where its `:` is; `None` when
/// there is none or it is not of that plain form.
fn qualified_name(bytes: &[u8]) -> Option<(usize, Option<usize>)> {
    let first = *bytes.first()?;
    if CLASS[first as usize] != NAME_START {
        return None;
    }
    let mut colon = None;
    let mut length = 1;
    loop {
        // The name's characters, then at most one `:` inside it.
        length += bytes[length..].iter().take_while(|&&b| CLASS[b as usize] & NAMEISH != 0).count();
        match bytes.get(length) {
            Some(b':') if colon.is_none() => {
                colon = Some(length);
                length += 1;
            }
            _ => break,
        }
    }
    match colon {
        // The local part must begin like a name, and a second `:` ends the name above, where
        // the caller finds no blank or `=` after it.
        Some(at) => (bytes.get(at + 1).map(|b| CLASS[*b as usize]) == Some(NAME_START)).then_some((length, colon)),
        None => Some((length, None)),
    }
}

/// A qualified name's prefix (empty when none) and local name, given where its `:` is.
fn split_name(name: &str, colon: Option<usize>) -> (&str, &str) {
    match colon {
        Some(at) => (&name[..at], &name[at + 1..]),
        None => ("", name),
    }
}

/// What a byte can be in a plain name (`NAMEISH`: either of the first two).
const OTHER: u8 = 0;
const NAME_START: u8 = 1;
const NAME: u8 = 2;
const COLON: u8 = 4;
const NAMEISH: u8 = NAME_START | NAME;

const CLASS: [u8; 256] = {
    let mut class = [OTHER; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        class[byte] = if b.is_ascii_alphabetic() || b == b'_' {
            NAME_START
        } else if b.is_ascii_digit() || b == b'-' || b == b'.' {
            NAME
        } else if b == b':' {
            COLON
        } else {
            OTHER
        };
        byte += 1;
    }
    class
};

/// The length of the attribute value `bytes` begins with, up to its closing `quote`, if
/// roxmltree takes it as it stands ([`plain_value`]); `None` if not, or if it does not end.
/// One pass finds the end and checks the bytes (values are short: two passes, one to find
/// the quote and one to check, cost more in their set-up than in their loops).
fn plain_value_until(bytes: &[u8], quote: u8) -> Option<usize> {
    for (at, &b) in bytes.iter().enumerate() {
        if b == quote {
            return Some(at);
        }
        if !plain_value_byte(b) {
            return None;
        }
    }
    None
}

/// Whether roxmltree takes `value` (between quotes) as it stands: every byte
/// [`plain_value_byte`].
fn plain_value(value: &[u8]) -> bool {
    value.iter().all(|&b| plain_value_byte(b))
}

/// A byte roxmltree keeps as it stands in a value: printable ASCII, not the start of markup
/// or of a reference, no white space it would normalize.
#[inline(always)]
fn plain_value_byte(b: u8) -> bool {
    b.wrapping_sub(0x20) < 0x5f && b != b'<' && b != b'&'
}

/// Whether roxmltree takes `body` as a comment's: printable ASCII and white space, no `--`,
/// not ending in `-`.
fn plain_comment(body: &[u8]) -> bool {
    let mut previous_dash = false;
    let mut bad = false;
    for &b in body {
        let dash = b == b'-';
        bad |= (b.wrapping_sub(0x20) >= 0x5f && !is_blank(b)) | (dash & previous_dash);
        previous_dash = dash;
    }
    !bad && !previous_dash
}

impl<'i> Scan<'i> {
    fn skip_blanks(&mut self) {
        self.at += first_non_blank(&self.bytes[self.at..]);
    }

    fn starts_with(&self, prefix: &[u8]) -> bool {
        self.bytes[self.at..].starts_with(prefix)
    }

    fn document(&mut self) -> Option<()> {
        if self.starts_with(b"<?xml ") {
            self.declaration()?;
        }
        self.misc()?;
        if !self.starts_with(b"<") || self.bytes.get(self.at + 1).is_none_or(|b| matches!(b, b'!' | b'?' | b'/')) {
            return None;
        }
        self.element_content()?;
        self.misc()?;
        (self.at == self.bytes.len()).then_some(())
    }

    /// `<?xml version=… encoding=… standalone=…?>` in that order (the last two optional),
    /// with plain values.
    fn declaration(&mut self) -> Option<()> {
        self.at += "<?xml".len();
        let end = self.at + memchr::memmem::find(&self.bytes[self.at..], b"?>")?;
        let content = &self.text[self.at..end];
        self.at = end + 2;
        let mut rest = content;
        let mut names = ["version", "encoding", "standalone"].iter().peekable();
        loop {
            let blanks = first_non_blank(rest.as_bytes());
            rest = &rest[blanks..];
            if rest.is_empty() {
                // `version` is required.
                return (names.len() < 3).then_some(());
            }
            if blanks == 0 {
                return None;
            }
            let name = loop {
                let name = names.next()?;
                if rest.starts_with(name) {
                    break name;
                }
                if *name == "version" {
                    return None;
                }
            };
            rest = rest[name.len()..].trim_start_matches([' ', '\t', '\r', '\n']);
            rest = rest.strip_prefix('=')?.trim_start_matches([' ', '\t', '\r', '\n']);
            let quote = rest.chars().next().filter(|q| matches!(q, '"' | '\''))?;
            let (value, after) = rest[1..].split_once(quote)?;
            if value.is_empty() || !plain_value(value.as_bytes()) {
                return None;
            }
            rest = after;
        }
    }

    /// Comments and white space; `None` at anything else but an element or the end.
    fn misc(&mut self) -> Option<()> {
        loop {
            self.skip_blanks();
            if self.starts_with(b"<!--") {
                self.comment()?;
            } else {
                return Some(());
            }
        }
    }

    /// A comment of printable ASCII and white space, without `--`, not ending in `-`.
    fn comment(&mut self) -> Option<()> {
        let start = self.at + 4;
        // Its end: the first `-->`.
        let mut end = start;
        loop {
            end += memchr::memchr(b'-', &self.bytes[end..])?;
            if self.bytes[end..].starts_with(b"-->") {
                break;
            }
            end += 1;
        }
        if !plain_comment(&self.bytes[start..end]) {
            return None;
        }
        self.at = end + 3;
        Some(())
    }

    /// The element at `self.at` and everything in it, up to its end tag.
    fn element_content(&mut self) -> Option<()> {
        loop {
            if self.starts_with(b"</") {
                self.end_tag()?;
            } else if self.starts_with(b"<!--") {
                self.comment()?;
            } else if self.starts_with(b"<!") || self.starts_with(b"<?") {
                return None;
            } else {
                self.start_tag()?;
            }
            if self.open.is_empty() {
                return Some(());
            }
            // Only blank text between markup.
            let next = self.at + memchr::memchr(b'<', &self.bytes[self.at..])?;
            if !self.bytes[self.at..next].iter().all(|&b| is_blank(b)) {
                return None;
            }
            self.at = next;
        }
    }

    fn end_tag(&mut self) -> Option<()> {
        let close = tag_end(self.bytes, self.at + 2)?;
        let name = &self.bytes[self.at + 2..close];
        let name = &name[..name.len() - name.iter().rev().take_while(|&&b| is_blank(b)).count()];
        let (id, open_name, scope) = self.open.pop()?;
        if !crate::bytes::eq(name, open_name.as_bytes()) {
            return None;
        }
        self.at = close + 1;
        self.bindings.truncate(scope);
        self.tree.nodes[id as usize].range.end = self.at;
        Some(())
    }

    fn start_tag(&mut self) -> Option<()> {
        let start = self.at;
        let close = tag_end(self.bytes, start + 1)?;
        let content = &self.bytes[start + 1..close];
        let (bytes, empty) = match content.strip_suffix(b"/") {
            Some(tag) => (tag, true),
            None => (content, false),
        };
        let (name_length, name_colon) = qualified_name(bytes)?;
        if name_length < bytes.len() && !is_blank(bytes[name_length]) {
            return None;
        }
        // The tag as text, which names and values are cut from. Where the scan cuts it, it has
        // checked the bytes are plain ASCII, so every cut is at a character boundary; checking
        // that again costs the validation no measurable time (the corpus's within a percent).
        let text: &'i str = self.text.get(start + 1..start + 1 + bytes.len())?;
        let qualified = text.get(..name_length)?;
        let scope = self.bindings.len();
        self.pending.clear();
        let mut at = name_length;
        // The usual layout, one blank before each attribute and none around `=`, is taken
        // without a call to the blank scans.
        let blanks_at = |at: usize| match bytes.get(at) {
            Some(b) if is_blank(*b) => first_non_blank(&bytes[at..]),
            _ => 0,
        };
        loop {
            let blanks = match bytes.get(at..at + 2) {
                Some([b' ', next]) if !is_blank(*next) => 1,
                _ => blanks_at(at),
            };
            at += blanks;
            if at == bytes.len() {
                break;
            }
            // Past the bound (namespace declarations counted), `parse` refuses the element.
            if blanks == 0 || self.bindings.len() - scope + self.pending.len() >= MAX_ATTRIBUTES {
                return None;
            }
            let (length, colon) = qualified_name(&bytes[at..])?;
            let name = text.get(at..at + length)?;
            at += length;
            at += blanks_at(at);
            if bytes.get(at) != Some(&b'=') {
                return None;
            }
            at += 1;
            at += blanks_at(at);
            let quote = *bytes.get(at).filter(|q| matches!(q, b'"' | b'\''))?;
            let value_length = plain_value_until(&bytes[at + 1..], quote)?;
            let value = text.get(at + 1..at + 1 + value_length)?;
            at += value_length + 2;
            let (prefix, local) = split_name(name, colon);
            let xmlns = |s: &str| crate::bytes::eq(s.as_bytes(), b"xmlns");
            if xmlns(prefix) || (prefix.is_empty() && xmlns(local)) {
                self.declare(if prefix.is_empty() { "" } else { local }, value, scope)?;
            } else {
                self.pending.push((prefix, local, value));
            }
        }
        // The element and its attributes, named in the scope its own declarations open.
        let (prefix, local) = split_name(qualified, name_colon);
        if prefix == "xmlns" || prefix == "xml" {
            return None;
        }
        let namespace = self.resolve(prefix)?;
        let parent = self.open.last().map_or(0, |(id, _, _)| *id);
        let id = self.tree.append(Kind::Element, parent, start);
        let first = self.tree.attributes.len();
        for index in 0..self.pending.len() {
            let (prefix, name, value) = self.pending[index];
            let namespace = match prefix {
                "" => NONE,
                "xml" => return None,
                prefix => self.resolve(prefix)?,
            };
            let duplicate = self.tree.attributes[first..]
                .iter()
                .any(|a| crate::bytes::eq(a.name.as_bytes(), name.as_bytes()) && a.namespace == namespace);
            if duplicate {
                return None;
            }
            self.tree.attributes.push(AttributeData { name, namespace, value: Cow::Borrowed(value) });
        }
        let node = &mut self.tree.nodes[id as usize];
        node.name = local;
        node.namespace = namespace;
        node.start = first as u32;
        node.end = self.tree.attributes.len() as u32;
        self.at = close + 1;
        if empty {
            node.range.end = self.at;
            self.bindings.truncate(scope);
        } else {
            self.open.push((id, qualified, scope));
        }
        Some(())
    }

    /// A namespace declaration of `prefix` (empty: the default namespace) on the start tag
    /// whose bindings begin at `scope`.
    fn declare(&mut self, prefix: &'i str, uri: &'i str, scope: usize) -> Option<()> {
        self.declarations += 1;
        let reserved = matches!(prefix, "xml" | "xmlns") || matches!(uri, XML_NAMESPACE | XMLNS_NAMESPACE);
        let repeated = self.bindings[scope..].iter().any(|(p, _)| *p == prefix);
        if self.declarations > MAX_DECLARATIONS || uri.is_empty() || reserved || repeated {
            return None;
        }
        let index = self.tree.namespace_index(Cow::Borrowed(uri));
        self.bindings.push((prefix, index));
        Some(())
    }

    /// The namespace `prefix` is bound to (`NONE` for no prefix and no default namespace);
    /// `None` when a prefix is not bound.
    fn resolve(&self, prefix: &str) -> Option<u32> {
        match self.bindings.iter().rev().find(|(p, _)| crate::bytes::eq(p.as_bytes(), prefix.as_bytes())) {
            Some((_, index)) => Some(*index),
            None if prefix.is_empty() => Some(NONE),
            None => None,
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// What the checks can see of a tree: elements (parent, name, namespace, attributes,
    /// range) and text that is not blank, in document order.
    pub(crate) fn dump(tree: &Tree) -> Vec<String> {
        let mut index = rustc_hash::FxHashMap::default();
        let mut lines = Vec::new();
        for node in tree.descendants() {
            let parent = node.parent().map_or(usize::MAX, |p| index.get(&p.id).copied().unwrap_or(usize::MAX));
            if node.is_element() {
                index.insert(node.id, lines.len());
                let attributes: Vec<String> =
                    node.attributes().map(|a| format!("{:?}:{}={:?}", a.namespace(), a.name(), a.value())).collect();
                let name = node.tag_name();
                lines.push(format!(
                    "{parent} {:?}:{} [{}] {:?} {}",
                    name.namespace(),
                    name.name(),
                    attributes.join(" "),
                    node.range(),
                    node.descendants().filter(|d| d.is_element()).count()
                ));
            } else if let Some(text) = node.text().filter(|t| !t.trim_matches([' ', '\t', '\r', '\n']).is_empty()) {
                lines.push(format!("{parent} text {text:?} {:?}", node.range()));
            }
        }
        lines
    }

    /// The scan's tree of `text` is roxmltree's, or the scan gave up; and it gives up on
    /// whatever roxmltree refuses.
    pub(crate) fn agrees(text: &str) -> Result<bool, String> {
        let reference = roxmltree::Document::parse_with_options(text, roxmltree_options());
        match (scan(text), reference) {
            (None, _) => Ok(false),
            (Some(_), Err(e)) => Err(format!("the scan took a document roxmltree refuses ({e})")),
            (Some(tree), Ok(doc)) => {
                let (ours, theirs) = (dump(&tree), dump(&Tree::from_document(&doc)));
                if ours == theirs {
                    Ok(true)
                } else {
                    let at = ours.iter().zip(&theirs).position(|(a, b)| a != b).unwrap_or(ours.len().min(theirs.len()));
                    Err(format!("trees differ at line {at}: {:?} against {:?}", ours.get(at), theirs.get(at)))
                }
            }
        }
    }

    const SAMPLE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment -->
<xaif:CallGraph xmlns:xaif="http://www.mcs.anl.gov/XAIF" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="x y" program_name="p">
  <xaif:ScopeHierarchy>
    <xaif:Scope vertex_id='1'><xaif:SymbolTable/></xaif:Scope>
  </xaif:ScopeHierarchy >
  <!-- another -->
  <other xmlns="urn:o" a = "1"><inner/></other>
</xaif:CallGraph>
"#;

    #[test]
    fn the_scan_builds_roxmltrees_tree() {
        assert_eq!(agrees(SAMPLE), Ok(true));
        let tree = scan(SAMPLE).expect("scanned");
        let root = tree.root_element();
        assert!(root.has_tag_name(("http://www.mcs.anl.gov/XAIF", "CallGraph")));
        assert_eq!(root.attribute("program_name"), Some("p"));
        assert_eq!(root.attributes().filter(|a| a.namespace().is_some()).count(), 1);
        let other = root.children().filter(|c| c.is_element()).nth(1).expect("second child");
        assert_eq!(other.tag_name().namespace(), Some("urn:o"));
        assert_eq!(other.first_child().map(|c| c.tag_name().namespace()), Some(Some("urn:o")));
        assert_eq!(&SAMPLE[other.range()], r#"<other xmlns="urn:o" a = "1"><inner/></other>"#);
        assert_eq!(root.descendants().filter(|d| d.is_element()).count(), 6);
    }

    #[test]
    fn the_scan_leaves_the_unusual_to_roxmltree() {
        let unusual = [
            "<a x='&amp;'/>",
            "<a x='a\tb'/>",
            "<a>text</a>",
            "<a><![CDATA[x]]></a>",
            "<?pi x?><a/>",
            "<!DOCTYPE a><a/>",
            "<a x='1' x='2'/>",
            "<p:a/>",
            "<a xmlns:p='u' xmlns:p='v'/>",
            "<a xmlns:p=''/>",
            "<a x='é'/>",
            "<a><!-- a -- b --></a>",
            "<a x='1'y='2'/>",
            "<a></b>",
            "<a>",
            "<a/><b/>",
            "<?xml version='1.0'?><?xml version='1.0'?><a/>",
            "<?xml encoding='UTF-8'?><a/>",
        ];
        for text in unusual {
            assert!(scan(text).is_none(), "{text}");
            assert!(parse(text).is_ok() || roxmltree::Document::parse(text).is_err(), "{text}");
        }
        // Converted, roxmltree's tree holds what the scan leaves out.
        let tree = parse("<a x='a\tb'>t<!-- c --></a>").expect("parses");
        let a = tree.root_element();
        assert_eq!(a.attribute("x"), Some("a b"));
        assert_eq!(a.children().count(), 2);
        assert_eq!(a.first_child().and_then(|t| t.text()), Some("t"));
    }

    #[test]
    fn the_scan_agrees_on_shared_test_data() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
        let mut scanned = 0;
        for entry in walk(std::path::Path::new(dir)) {
            let Ok(text) = std::fs::read_to_string(&entry) else { continue };
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            match agrees(text) {
                Ok(true) => scanned += 1,
                Ok(false) => {}
                Err(e) => panic!("{}: {e}", entry.display()),
            }
        }
        assert!(scanned > 50, "the scan took only {scanned} test documents");
    }

    /// Every XAIF document of the shared material (corpus inputs and references, examples,
    /// stage outputs): the scan agrees with roxmltree, and takes nearly all of them.
    #[test]
    fn the_scan_agrees_on_the_shared_documents() {
        let (mut scanned, mut total) = (0, 0);
        for entry in walk(&shared_dir()) {
            let Ok(text) = std::fs::read_to_string(&entry) else { continue };
            total += 1;
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            match agrees(text) {
                Ok(true) => scanned += 1,
                Ok(false) => {}
                Err(e) => panic!("{}: {e}", entry.display()),
            }
        }
        assert!(total > 1000 && scanned * 100 >= total * 95, "the scan took {scanned} of {total} documents");
    }

    /// The shared material (`XAIF_SHARED`, default `../shared`); a test that needs it fails
    /// when it is missing.
    pub(crate) fn shared_dir() -> std::path::PathBuf {
        let shared = std::env::var_os("XAIF_SHARED")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared")));
        assert!(
            shared.join("corpus").is_dir(),
            "reference material not found at {} (set XAIF_SHARED to the shared directory)",
            shared.display()
        );
        shared
    }

    /// The XAIF and XML files under `dir`, sorted.
    pub(in super::super) fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "xaif" || e == "xml") {
                    files.push(path);
                }
            }
        }
        files.sort();
        files
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(30000))]
        /// One to three bytes of the sample replaced by markup characters, quotes, blanks,
        /// letters, bytes outside ASCII, attributes or namespace declarations: the scan agrees
        /// with roxmltree or gives up.
        #[test]
        fn mutated_documents_agree(
            edits in proptest::collection::vec((0usize..400, proptest::sample::select(vec![
                "<", ">", "/", "\"", "'", "=", " ", "\t", "\n", ":", "-", "!", "?", "&", "x", "é", "", "--", "xmlns", "<a/>", "</a>",
                " a='2' ", " xmlns:p='u' ", "p:", " xmlns='urn:d' "
            ])), 1..4)
        ) {
            let mut text = SAMPLE.to_owned();
            for (at, insert) in edits {
                let mut at = at % text.len();
                while !text.is_char_boundary(at) { at -= 1; }
                let mut end = (at + 1).min(text.len());
                while !text.is_char_boundary(end) { end += 1; }
                text.replace_range(at..end, insert);
            }
            if let Err(e) = agrees(&text) {
                proptest::prop_assert!(false, "{e}\n{text}");
            }
        }
    }
}
