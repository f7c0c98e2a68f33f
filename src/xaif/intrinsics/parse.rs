//! The catalogue reader: XML of the two catalogue formats to [`IntrinsicDefinition`]s, every
//! defect reported at its element (file:line:column).

use rustc_hash::{FxHashMap, FxHashSet};

use super::{
    CatalogueError, ConstantKind, FunctionDefinition, IntrinsicDefinition, JacobianEntry, Partial, PartialExpr,
    PartialKind, ShapeChange,
};
use crate::xaif::diagnostic::{Diagnostic, Severity};

const INLINABLE_NAMESPACE: &str = "http://www.mcs.anl.gov/XAIFInlinableIntrinsics";
const NONINLINABLE_NAMESPACE: &str = "http://www.mcs.anl.gov/XAIFNonInlinableIntrinsics";
const XAIF_NAMESPACE: &str = "http://www.mcs.anl.gov/XAIF";

const LANGUAGES: [&str; 5] = ["C", "CPP", "F77", "F90", "F95"];
const SYMBOL_TYPES: [&str; 8] = ["void", "integer", "real", "complex", "bool", "char", "string", "opaque"];

type Node<'a, 'input> = roxmltree::Node<'a, 'input>;

/// The most arguments an intrinsic may take (`nr_arguments`), and so the largest argument a
/// `partial_id`, an `ArgumentReference` or an ExplicitJacobian's `dep` and `indep` may name.
/// A catalogue is input like any other, and its numbers size allocations (one partial per
/// argument): without a bound, `nr_arguments="100000000"` exhausted memory and the largest
/// integer overflowed a capacity. The built-in and the reference catalogues take one or two
/// arguments; Fortran's intrinsics at most a handful (`max` and `min` are the only variadic
/// ones, and nobody writes 255 operands). 255 is generous by two orders of magnitude.
pub(crate) const MAX_ARGUMENTS: usize = 255;

/// The most nodes the tree of one expression (a `Function` or `Partial`) may have, counted
/// after shared vertices are duplicated: a graph whose vertices each use the one before twice
/// doubles per vertex, so a few dozen vertices would otherwise expand to more trees than fit
/// in memory. The built-in catalogue's largest expression has a dozen or so nodes.
pub(crate) const MAX_EXPRESSION_NODES: usize = 1024;

/// The deepest an expression's tree may be: the tree is built and evaluated recursively, and a
/// chain of a million vertices would overflow the stack. The built-in catalogue's deepest
/// expression has about five levels.
pub(crate) const MAX_EXPRESSION_DEPTH: usize = 64;

/// Where errors are reported: the document (for positions) and its file name.
struct Locator<'a, 'input> {
    doc: &'a roxmltree::Document<'input>,
    file: &'a str,
}

impl Locator<'_, '_> {
    fn error(&self, node: Node, message: String) -> CatalogueError {
        let position = self.doc.text_pos_at(node.range().start);
        CatalogueError(Box::new(Diagnostic {
            severity: Severity::Error,
            file: self.file.to_owned(),
            line: position.row as usize,
            column: position.col as usize,
            element: node.tag_name().name().to_owned(),
            message,
        }))
    }
}

fn document_error(file: &str, line: usize, column: usize, message: String) -> CatalogueError {
    CatalogueError(Box::new(Diagnostic {
        severity: Severity::Error,
        file: file.to_owned(),
        line,
        column,
        element: "document".into(),
        message,
    }))
}

fn parse_document<'input>(input: &'input [u8], file: &str) -> Result<roxmltree::Document<'input>, CatalogueError> {
    let text = std::str::from_utf8(input).map_err(|e| {
        let (line, column) = crate::xaif::diagnostic::line_column(input, e.valid_up_to());
        document_error(file, line, column, "the input is not valid UTF-8".into())
    })?;
    // roxmltree's time grows with the square of one element's attributes: too many are
    // refused before it runs.
    if let Some(crowded) = crate::xaif::crowded::first_crowded_element(text) {
        let (line, column) = crate::xaif::diagnostic::line_column(input, crowded.offset);
        let mut error = document_error(file, line, column, crowded.message());
        error.0.element = crowded.element.into();
        return Err(error);
    }
    let options = roxmltree::ParsingOptions { allow_dtd: false, ..roxmltree::ParsingOptions::default() };
    roxmltree::Document::parse_with_options(text, options).map_err(|e| {
        let position = e.pos();
        let message = match e {
            roxmltree::Error::DtdDetected => "DOCTYPE declarations are refused (no entity expansion)".to_owned(),
            other => format!("malformed XML: {other}"),
        };
        document_error(file, position.row as usize, position.col as usize, message)
    })
}

fn elements<'a, 'input>(node: Node<'a, 'input>) -> impl Iterator<Item = Node<'a, 'input>> {
    node.children().filter(Node::is_element)
}

fn is(node: Node, namespace: &str, name: &str) -> bool {
    node.tag_name().namespace() == Some(namespace) && node.tag_name().name() == name
}

fn expect(at: &Locator, node: Node, namespace: &str, name: &str, context: &str) -> Result<(), CatalogueError> {
    if is(node, namespace, name) {
        return Ok(());
    }
    Err(at.error(node, format!("unexpected element {context}, expected {name} in namespace {namespace}")))
}

/// Text outside elements is allowed only as whitespace (the formats have no mixed content).
fn no_text(at: &Locator, node: Node) -> Result<(), CatalogueError> {
    match node.children().find(|c| c.is_text() && !c.text().unwrap_or("").trim().is_empty()) {
        Some(_) => Err(at.error(node, "unexpected text content".into())),
        None => Ok(()),
    }
}

fn required<'a>(at: &Locator, node: Node<'a, '_>, name: &str) -> Result<&'a str, CatalogueError> {
    match node.attribute(name) {
        Some(value) if !value.trim().is_empty() => Ok(value),
        Some(_) => Err(at.error(node, format!("attribute '{name}' is empty"))),
        None => Err(at.error(node, format!("missing required attribute '{name}'"))),
    }
}

fn boolean(at: &Locator, node: Node, name: &str) -> Result<bool, CatalogueError> {
    match node.attribute(name).map(str::trim) {
        None | Some("false" | "0") => Ok(false),
        Some("true" | "1") => Ok(true),
        Some(other) => Err(at.error(node, format!("attribute '{name}' has value '{other}', expected a boolean"))),
    }
}

fn number(at: &Locator, node: Node, name: &str, minimum: usize) -> Result<usize, CatalogueError> {
    let value = required(at, node, name)?;
    match value.trim().parse::<usize>() {
        Ok(n) if n >= minimum => Ok(n),
        _ => {
            let expected = if minimum == 0 { "a non-negative integer" } else { "a positive integer" };
            Err(at.error(node, format!("attribute '{name}' has value '{value}', expected {expected}")))
        }
    }
}

/// A [`number`] that names or counts arguments: at most [`MAX_ARGUMENTS`].
fn argument_number(at: &Locator, node: Node, name: &str, minimum: usize) -> Result<usize, CatalogueError> {
    let n = number(at, node, name, minimum)?;
    if n > MAX_ARGUMENTS {
        return Err(at.error(
            node,
            format!("attribute '{name}' has value {n}, more than the {MAX_ARGUMENTS} arguments an intrinsic may take"),
        ));
    }
    Ok(n)
}

fn one_of<'a>(
    at: &Locator,
    node: Node<'a, '_>,
    name: &str,
    allowed: &[&str],
) -> Result<Option<&'a str>, CatalogueError> {
    match node.attribute(name) {
        None => Ok(None),
        Some(value) if allowed.contains(&value) => Ok(Some(value)),
        Some(value) => {
            Err(at
                .error(node, format!("attribute '{name}' has value '{value}', expected one of {}", allowed.join(", "))))
        }
    }
}

/// A reference to another intrinsic inside an expression, checked once the whole file is read.
struct Use<'a, 'input> {
    node: Node<'a, 'input>,
    name: &'a str,
    operands: usize,
}

/// The definitions of an `InlinableIntrinsicDefinitions` document, in file order.
pub(super) fn inlinable(input: &[u8], file: &str) -> Result<Vec<IntrinsicDefinition>, CatalogueError> {
    let doc = parse_document(input, file)?;
    let at = Locator { doc: &doc, file };
    let root = doc.root_element();
    expect(&at, root, INLINABLE_NAMESPACE, "InlinableIntrinsicDefinitions", "as the document root")?;
    required(&at, root, "language")?;
    one_of(&at, root, "language", &LANGUAGES)?;
    no_text(&at, root)?;
    let mut definitions = Vec::new();
    let mut seen = FxHashSet::default();
    let mut uses = Vec::new();
    for node in elements(root) {
        expect(&at, node, INLINABLE_NAMESPACE, "InlinableIntrinsic", "in InlinableIntrinsicDefinitions")?;
        let definition = inlinable_definition(&at, node, &mut uses)?;
        if !seen.insert(definition.name.clone()) {
            return Err(at.error(node, format!("intrinsic '{}' is defined twice", definition.name)));
        }
        definitions.push(definition);
    }
    if definitions.is_empty() {
        return Err(at.error(root, "the catalogue defines no intrinsic".into()));
    }
    let arity: FxHashMap<&str, usize> = definitions.iter().map(|d| (d.name.as_ref(), d.arity)).collect();
    for Use { node, name, operands } in uses {
        match arity.get(name) {
            None => return Err(at.error(node, format!("intrinsic '{name}' is not defined in this catalogue"))),
            Some(&n) if n != operands => {
                return Err(at.error(node, format!("intrinsic '{name}' takes {n} arguments, this one has {operands}")));
            }
            Some(_) => {}
        }
    }
    let nodes: Vec<Node> = elements(root).collect();
    check_function_work(&at, &nodes, &definitions)?;
    Ok(definitions)
}

/// The most intrinsic evaluations one evaluation of a user-defined function may take, the
/// functions it calls unfolded. Each expression is bounded by [`MAX_EXPRESSION_NODES`], but
/// functions calling each other multiply: sixty functions each calling the next twice would
/// take 2^60 evaluations. The built-in catalogue defines no function through another.
pub(crate) const MAX_FUNCTION_WORK: u64 = 1_000_000;

/// Refuses user-defined functions defined through themselves (directly or through others) and
/// those whose evaluation, the functions they call unfolded, exceeds [`MAX_FUNCTION_WORK`],
/// located at the intrinsic. `nodes` are the definitions' elements, in the same order. The
/// walk is iterative: a chain of many functions must not exhaust the stack here either.
fn check_function_work(
    at: &Locator,
    nodes: &[Node],
    definitions: &[IntrinsicDefinition],
) -> Result<(), CatalogueError> {
    fn expression_of(d: &IntrinsicDefinition) -> Option<&PartialExpr> {
        match &d.function {
            FunctionDefinition::UserDefined { expression: Some(expression), .. } => Some(expression),
            _ => None,
        }
    }
    let index: FxHashMap<&str, usize> = definitions
        .iter()
        .enumerate()
        .filter(|(_, d)| expression_of(d).is_some())
        .map(|(i, d)| (d.name.as_ref(), i))
        .collect();
    // Per function: the intrinsics its expression applies, and the user-defined ones among
    // them (once per application).
    let mut own = vec![0u64; definitions.len()];
    let mut callees: Vec<Vec<usize>> = vec![Vec::new(); definitions.len()];
    for (&_, &i) in &index {
        let mut pending = vec![expression_of(&definitions[i]).expect("indexed functions have one")];
        while let Some(expression) = pending.pop() {
            if let PartialExpr::Intrinsic { name, arguments } = expression {
                own[i] += 1;
                callees[i].extend(index.get(name.as_ref()).copied());
                pending.extend(arguments.iter());
            }
        }
    }
    #[derive(Clone, Copy)]
    enum Visit {
        New,
        Open,
        Done(u64),
    }
    let mut visit = vec![Visit::New; definitions.len()];
    let mut starts: Vec<usize> = index.values().copied().collect();
    starts.sort_unstable();
    for start in starts {
        if !matches!(visit[start], Visit::New) {
            continue;
        }
        visit[start] = Visit::Open;
        let mut stack = vec![(start, 0usize)];
        while let Some((function, next)) = stack.last_mut() {
            let function = *function;
            if let Some(&callee) = callees[function].get(*next) {
                *next += 1;
                match visit[callee] {
                    Visit::New => {
                        visit[callee] = Visit::Open;
                        stack.push((callee, 0));
                    }
                    Visit::Open => {
                        let from = stack.iter().position(|(f, _)| *f == callee).unwrap_or(0);
                        let cycle: Vec<&str> = stack[from..]
                            .iter()
                            .map(|(f, _)| definitions[*f].name.as_ref())
                            .chain([definitions[callee].name.as_ref()])
                            .collect();
                        let message = format!(
                            "function '{}' is defined through itself ({})",
                            definitions[callee].name,
                            cycle.join(" -> ")
                        );
                        return Err(at.error(nodes[callee], message));
                    }
                    Visit::Done(_) => {}
                }
                continue;
            }
            let work = callees[function].iter().fold(own[function], |sum, &callee| match visit[callee] {
                Visit::Done(work) => sum.saturating_add(work),
                _ => sum,
            });
            if work > MAX_FUNCTION_WORK {
                let message = format!(
                    "evaluating function '{}' takes {work} intrinsic evaluations, the functions it calls unfolded, \
                     more than {MAX_FUNCTION_WORK}",
                    definitions[function].name
                );
                return Err(at.error(nodes[function], message));
            }
            visit[function] = Visit::Done(work);
            stack.pop();
        }
    }
    Ok(())
}

fn inlinable_definition<'a, 'input>(
    at: &Locator<'_, 'input>,
    node: Node<'a, 'input>,
    uses: &mut Vec<Use<'a, 'input>>,
) -> Result<IntrinsicDefinition, CatalogueError> {
    let name = required(at, node, "name")?.to_owned();
    let arity = argument_number(at, node, "nr_arguments", 1)?;
    let return_type = one_of(at, node, "return_type", &SYMBOL_TYPES)?.map(str::to_owned);
    let shape_change = match one_of(at, node, "shapeChange", &["no_change", "scalar", "rank"])? {
        None | Some("no_change") => ShapeChange::NoChange,
        Some("scalar") => ShapeChange::Scalar,
        Some(_) => ShapeChange::Rank,
    };
    no_text(at, node)?;
    let mut children = elements(node);
    let Some(function_node) = children.next() else {
        return Err(at.error(node, "missing required child Function".into()));
    };
    expect(at, function_node, INLINABLE_NAMESPACE, "Function", "as the first child of InlinableIntrinsic")?;
    let function = function_definition(at, function_node, arity, uses)?;
    let mut partials: Vec<Option<Partial>> = vec![None; arity];
    for child in children {
        expect(at, child, INLINABLE_NAMESPACE, "Partial", "after Function")?;
        let id = argument_number(at, child, "partial_id", 1)?;
        if id > arity {
            return Err(at.error(child, format!("partial_id {id} exceeds nr_arguments {arity}")));
        }
        let kind = match one_of(
            at,
            child,
            "partial_type",
            &["passive", "linear_one", "linear_minus_one", "linear", "nonlinear"],
        )? {
            None | Some("nonlinear") => PartialKind::Nonlinear,
            Some("passive") => PartialKind::Passive,
            Some("linear_one") => PartialKind::LinearOne,
            Some("linear_minus_one") => PartialKind::LinearMinusOne,
            Some(_) => PartialKind::Linear,
        };
        let expression = match expression(at, child, arity, true, uses)? {
            Some(expression) => expression,
            None if kind == PartialKind::Passive => {
                PartialExpr::Constant { value: "0".into(), ty: ConstantKind::Integer }
            }
            None => {
                return Err(at.error(child, format!("a {} partial needs an expression", kind.as_str())));
            }
        };
        let partial = Partial { kind, expression, non_value_inquiry: boolean(at, child, "nonValueInquiry")? };
        if partials[id - 1].replace(partial).is_some() {
            return Err(at.error(child, format!("partial_id {id} appears twice")));
        }
    }
    let partials = partials
        .into_iter()
        .enumerate()
        .map(|(i, p)| p.ok_or_else(|| at.error(node, format!("missing partial for argument {}", i + 1))))
        .collect::<Result<Vec<_>, _>>()?;
    let builtin_name = match &function {
        FunctionDefinition::Builtin { builtin_name } => Some(builtin_name.clone()),
        FunctionDefinition::UserDefined { builtin_name, .. } => builtin_name.clone(),
        FunctionDefinition::DirectAction { .. } | FunctionDefinition::ExplicitJacobian { .. } => None,
    };
    Ok(IntrinsicDefinition {
        name: name.into(),
        arity,
        return_type: return_type.map(Into::into),
        function,
        builtin_name,
        partials: partials.into(),
        inlinable: true,
        non_smooth: boolean(at, node, "nonSmooth")?,
        shape_change,
    })
}

fn function_definition<'a, 'input>(
    at: &Locator<'_, 'input>,
    node: Node<'a, 'input>,
    arity: usize,
    uses: &mut Vec<Use<'a, 'input>>,
) -> Result<FunctionDefinition, CatalogueError> {
    let builtin_name = node.attribute("builtin_name").map(str::to_owned);
    // The value of a function cannot be defined through itself: no argument 0.
    let expression = expression(at, node, arity, false, uses)?;
    match one_of(at, node, "type", &["builtin", "user_defined"])? {
        Some("builtin") => {
            let builtin_name = required(at, node, "builtin_name")?.to_owned();
            if expression.is_some() {
                return Err(
                    at.error(node, "a builtin Function is evaluated by builtin_name and has no expression".into())
                );
            }
            Ok(FunctionDefinition::Builtin { builtin_name: builtin_name.into() })
        }
        _ => Ok(FunctionDefinition::UserDefined { builtin_name: builtin_name.map(Into::into), expression }),
    }
}

/// The expression graph inside a `Partial` or `Function`, as a tree rooted at the only
/// vertex no edge leaves; `None` when the element has no vertices.
fn expression<'a, 'input>(
    at: &Locator<'_, 'input>,
    parent: Node<'a, 'input>,
    arity: usize,
    result_allowed: bool,
    uses: &mut Vec<Use<'a, 'input>>,
) -> Result<Option<PartialExpr>, CatalogueError> {
    no_text(at, parent)?;
    let mut vertices: FxHashMap<&'a str, Node<'a, 'input>> = FxHashMap::default();
    let mut order = Vec::new();
    let mut edges = Vec::new();
    for child in elements(parent) {
        if is(child, XAIF_NAMESPACE, "ExpressionEdge") {
            let source = required(at, child, "source")?;
            let target = required(at, child, "target")?;
            let position = number(at, child, "position", 1)?;
            edges.push((source, target, position, child));
        } else if is(child, XAIF_NAMESPACE, "Constant")
            || is(child, XAIF_NAMESPACE, "Intrinsic")
            || is(child, INLINABLE_NAMESPACE, "ArgumentReference")
        {
            // Single-vertex expressions commonly omit the id.
            let id = child.attribute("vertex_id").unwrap_or("1");
            if vertices.insert(id, child).is_some() {
                return Err(at.error(child, format!("duplicate vertex_id '{id}'")));
            }
            order.push(id);
        } else {
            return Err(at.error(
                child,
                format!(
                    "unexpected element in {}, expected Constant, Intrinsic, ArgumentReference or ExpressionEdge",
                    parent.tag_name().name()
                ),
            ));
        }
    }
    if vertices.is_empty() {
        if let Some(&(_, _, _, edge)) = edges.first() {
            return Err(at.error(edge, "an edge in an expression without vertices".into()));
        }
        return Ok(None);
    }
    let mut operands: FxHashMap<&str, Vec<(usize, &str, Node)>> = FxHashMap::default();
    let mut has_out_edge = FxHashSet::default();
    for &(source, target, position, edge) in &edges {
        for (end, which) in [(source, "source"), (target, "target")] {
            if !vertices.contains_key(end) {
                return Err(at.error(edge, format!("{which} '{end}' names no vertex of this expression")));
            }
        }
        operands.entry(target).or_default().push((position, source, edge));
        has_out_edge.insert(source);
    }
    let roots: Vec<&str> = order.iter().copied().filter(|id| !has_out_edge.contains(id)).collect();
    let root = match roots.as_slice() {
        [root] => *root,
        [] => return Err(at.error(parent, "the expression has no root (every vertex has an outgoing edge)".into())),
        [_, second, ..] => {
            return Err(at.error(vertices[second], "the expression has more than one root vertex".into()));
        }
    };
    let mut builder = Builder { at, vertices: &vertices, operands, arity, result_allowed, state: FxHashMap::default() };
    let (tree, _) = builder.build(root, 1, uses)?;
    if let Some(id) = order.iter().find(|id| !builder.state.contains_key(*id)) {
        return Err(at.error(vertices[id], "vertex not connected to the expression's root (or on a cycle)".into()));
    }
    Ok(Some(tree))
}

/// Turns the graph into a tree, duplicating shared vertices (the files share constants).
struct Builder<'l, 'a, 'input> {
    at: &'l Locator<'l, 'input>,
    vertices: &'l FxHashMap<&'a str, Node<'a, 'input>>,
    operands: FxHashMap<&'a str, Vec<(usize, &'a str, Node<'a, 'input>)>>,
    arity: usize,
    result_allowed: bool,
    /// `None` while a vertex is being built (a second visit is a cycle), then its tree and
    /// the number of its nodes.
    state: FxHashMap<&'a str, Option<(PartialExpr, usize)>>,
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// The tree of vertex `id`, `depth` levels below the root (the root is 1), and its size.
    fn build(
        &mut self,
        id: &'a str,
        depth: usize,
        uses: &mut Vec<Use<'a, 'input>>,
    ) -> Result<(PartialExpr, usize), CatalogueError> {
        let at = self.at;
        let node = self.vertices[id];
        match self.state.get(id) {
            Some(Some(done)) => return Ok(done.clone()),
            Some(None) => return Err(at.error(node, "the expression has a cycle".into())),
            None => {}
        }
        if depth > MAX_EXPRESSION_DEPTH {
            return Err(at.error(node, format!("the expression is deeper than {MAX_EXPRESSION_DEPTH} levels")));
        }
        let mut size = 1;
        self.state.insert(id, None);
        let mut list = self.operands.remove(id).unwrap_or_default();
        list.sort_by_key(|&(position, _, _)| position);
        let tree = match node.tag_name().name() {
            "ArgumentReference" | "Constant" if !list.is_empty() => {
                return Err(at.error(list[0].2, format!("a {} has no operands", node.tag_name().name())));
            }
            "ArgumentReference" => {
                let argument = argument_number(at, node, "argument", 0)?;
                if argument > self.arity {
                    return Err(at.error(node, format!("argument {argument} exceeds nr_arguments {}", self.arity)));
                }
                if argument == 0 && !self.result_allowed {
                    return Err(at.error(node, "argument 0 (the result) cannot define the function itself".into()));
                }
                PartialExpr::Argument(argument)
            }
            "Constant" => {
                let value = node
                    .attribute("value")
                    .ok_or_else(|| at.error(node, "missing required attribute 'value'".into()))?;
                let ty = match required(at, node, "type")? {
                    "integer" => ConstantKind::Integer,
                    "real" => ConstantKind::Real,
                    "double" => ConstantKind::Double,
                    "bool" => ConstantKind::Bool,
                    "char" => ConstantKind::Char,
                    "string" => ConstantKind::String,
                    other => {
                        return Err(at.error(
                            node,
                            format!(
                                "attribute 'type' has value '{other}', expected one of real, double, integer, bool, char, string"
                            ),
                        ));
                    }
                };
                let constant = PartialExpr::Constant { value: value.to_owned().into(), ty };
                let numeric = matches!(ty, ConstantKind::Integer | ConstantKind::Real | ConstantKind::Double);
                if numeric && constant.eval(&[], None).is_none() {
                    return Err(at.error(node, format!("constant '{value}' is not a number")));
                }
                constant
            }
            _ => {
                let name = required(at, node, "name")?;
                for (expected, &(position, _, edge)) in (1..).zip(&list) {
                    if position != expected {
                        let message = if position < expected {
                            format!("operand position {position} appears twice")
                        } else {
                            format!("operand position {expected} is missing (found {position})")
                        };
                        return Err(at.error(edge, message));
                    }
                }
                uses.push(Use { node, name, operands: list.len() });
                let mut arguments = Vec::with_capacity(list.len());
                for &(_, source, _) in &list {
                    let (argument, argument_size) = self.build(source, depth + 1, uses)?;
                    size += argument_size;
                    if size > MAX_EXPRESSION_NODES {
                        return Err(at.error(
                            node,
                            format!(
                                "the expression has more than {MAX_EXPRESSION_NODES} nodes (shared vertices counted at each use)"
                            ),
                        ));
                    }
                    arguments.push(argument);
                }
                PartialExpr::Intrinsic { name: name.to_owned().into(), arguments: arguments.into() }
            }
        };
        self.state.insert(id, Some((tree.clone(), size)));
        Ok((tree, size))
    }
}

/// The definitions of a `NonInlinableIntrinsicDefinitions` document; `is_inlinable` tells
/// which names are already defined inlinable (a conflict).
pub(super) fn noninlinable(
    input: &[u8],
    file: &str,
    is_inlinable: impl Fn(&str) -> bool,
) -> Result<Vec<IntrinsicDefinition>, CatalogueError> {
    let doc = parse_document(input, file)?;
    let at = Locator { doc: &doc, file };
    let root = doc.root_element();
    expect(&at, root, NONINLINABLE_NAMESPACE, "NonInlinableIntrinsicDefinitions", "as the document root")?;
    no_text(&at, root)?;
    let mut definitions = Vec::new();
    let mut seen = FxHashSet::default();
    for node in elements(root) {
        let name = required(&at, node, "name")?.to_owned();
        let function = if is(node, NONINLINABLE_NAMESPACE, "DirectAction") {
            if let Some(child) = elements(node).next() {
                return Err(at.error(child, "unexpected element in DirectAction".into()));
            }
            no_text(&at, node)?;
            FunctionDefinition::DirectAction { deriv_action: required(&at, node, "derivAction")?.to_owned().into() }
        } else if is(node, NONINLINABLE_NAMESPACE, "ExplicitJacobian") {
            let jacobian = required(&at, node, "jacobian")?.to_owned();
            no_text(&at, node)?;
            let mut entries = Vec::new();
            let mut pairs = FxHashSet::default();
            for child in elements(node) {
                expect(&at, child, NONINLINABLE_NAMESPACE, "Partial", "in ExplicitJacobian")?;
                let entry = JacobianEntry {
                    dep: argument_number(&at, child, "dep", 1)?,
                    indep: argument_number(&at, child, "indep", 1)?,
                    partial: number(&at, child, "partial", 1)?,
                };
                if !pairs.insert((entry.dep, entry.indep)) {
                    return Err(at.error(
                        child,
                        format!("the entry for dep {} and indep {} appears twice", entry.dep, entry.indep),
                    ));
                }
                entries.push(entry);
            }
            if entries.is_empty() {
                return Err(at.error(node, "an ExplicitJacobian needs at least one Partial".into()));
            }
            FunctionDefinition::ExplicitJacobian { jacobian: jacobian.into(), entries: entries.into() }
        } else {
            return Err(at.error(
                node,
                "unexpected element in NonInlinableIntrinsicDefinitions, expected DirectAction or ExplicitJacobian"
                    .into(),
            ));
        };
        if !seen.insert(name.clone()) {
            return Err(at.error(node, format!("intrinsic '{name}' is defined twice")));
        }
        if is_inlinable(&name) {
            return Err(at.error(node, format!("intrinsic '{name}' is already defined as inlinable")));
        }
        let builtin_name = match &function {
            FunctionDefinition::DirectAction { deriv_action } => Some(deriv_action.clone()),
            _ => None,
        };
        definitions.push(IntrinsicDefinition {
            name: name.into(),
            arity: 0,
            return_type: one_of(&at, node, "return_type", &SYMBOL_TYPES)?.map(|ty| ty.to_owned().into()),
            function,
            builtin_name,
            partials: super::List::Borrowed(&[]),
            inlinable: false,
            non_smooth: boolean(&at, node, "nonSmooth")?,
            shape_change: ShapeChange::NoChange,
        });
    }
    Ok(definitions)
}
