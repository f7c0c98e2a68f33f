//! The activity check. In OpenAD an active real is a different Fortran type from a passive
//! real, so activity must agree wherever a real is handed over, or the unparsed Fortran does not
//! compile:
//!
//! - at a `SubroutineCall` to a routine of the document (a `ControlFlowGraph` or
//!   `ReplacementList`), each real actual argument is as active as the formal at its position;
//! - at a call to a routine without a body in the document (an external routine, compiled
//!   without derivatives), every real actual argument is passive — unless the routine is a
//!   hand-written wrapper the engine renamed the call to (`-w`: a subroutine symbol with
//!   `temp="1"`), which takes active arguments by design;
//! - a derivative reference (`deriv="1"` on a variable reference, a propagator operand, an
//!   assignment's left-hand side) names an active symbol.
//!
//! A constant actual is passive. Only real data (`real` and `complex` symbols, `real` and
//! `double` constants) changes type with activity: derived-type (`opaque`) formals, whose
//! active components are typed inside the structure, and integer, logical or text arguments
//! are skipped. Inlinable runtime calls (`oad_convert`, `push_s0`, …) are generic and never
//! checked.
//!
//! Front-end inputs break the call rules wherever a passive variable meets an active formal;
//! the TypeChange pass converts there. The check therefore runs on outputs only
//! ([`ValidateOptions::activity`](super::ValidateOptions::activity)).

use rustc_hash::{FxHashMap, FxHashSet};

use super::{Node, Validator};
use crate::xaif::read::XAIF_NAMESPACE;

/// What the check needs of a variable symbol, by `(scope_id, symbol_id)`.
#[derive(Copy, Clone)]
struct SymbolFacts {
    active: bool,
    /// A `real` or `complex` symbol: its Fortran type depends on its activity.
    real: bool,
}

/// One formal argument: its position and its symbol's `(scope_id, symbol_id)`.
type Formal<'a> = (u64, (&'a str, &'a str));

/// The symbol table and the routines' argument lists, resolved once per document.
struct ActivityTables<'a> {
    symbols: FxHashMap<(&'a str, &'a str), SymbolFacts>,
    /// `(scope_id, symbol_id)` of each routine in the document → its formals.
    routines: FxHashMap<(&'a str, &'a str), Vec<Formal<'a>>>,
    /// Subroutine symbols the engine made (`temp="1"`) for routines without a body: the
    /// hand-written wrappers of `-w`, which take active arguments by design.
    wrappers: FxHashSet<(&'a str, &'a str)>,
}

/// An actual argument as the check sees it.
enum Actual<'a> {
    Constant {
        value: &'a str,
        real: bool,
    },
    Variable {
        symbol: &'a str,
        facts: SymbolFacts,
    },
    /// Not checkable (unresolved reference, missing content): other checks report it.
    Unknown,
}

impl Actual<'_> {
    fn real(&self) -> bool {
        match self {
            Actual::Constant { value: _, real } => *real,
            Actual::Variable { symbol: _, facts } => facts.real,
            Actual::Unknown => false,
        }
    }

    fn active(&self) -> bool {
        match self {
            Actual::Constant { value: _, real: _ } | Actual::Unknown => false,
            Actual::Variable { symbol: _, facts } => facts.active,
        }
    }

    fn describe(&self) -> String {
        match self {
            Actual::Constant { value, real: _ } => format!("constant {value}"),
            Actual::Variable { symbol, facts: _ } => format!("'{symbol}'"),
            Actual::Unknown => "unknown".to_owned(),
        }
    }
}

fn activity_word(active: bool) -> &'static str {
    if active { "active" } else { "passive" }
}

/// An `xsd:boolean`, or `None` for anything else (the structure check reports it).
fn boolean(text: &str) -> Option<bool> {
    match text {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

impl Validator<'_> {
    /// Reports every activity finding of the document under `root` (a `CallGraph`).
    pub(super) fn activity(&mut self, root: Node) {
        let tables = activity_tables(root);
        for node in root.descendants().filter(|n| n.is_element() && n.tag_name().namespace() == Some(XAIF_NAMESPACE)) {
            if node.tag_name().name() == "SubroutineCall" {
                self.call_activity(node, &tables);
            }
            if node.attribute("deriv").and_then(boolean) == Some(true)
                && node.tag_name().name() != "ArgumentSymbolReference"
                && let Some((scope, symbol)) = base_symbol(node)
                && let Some(facts) = tables.symbols.get(&(scope, symbol))
                && !facts.active
            {
                self.error(node, format!("derivative of passive symbol '{symbol}' (scope {scope})"));
            }
        }
    }

    fn call_activity<'a>(&mut self, call: Node<'a, '_>, tables: &ActivityTables<'a>) {
        let (Some(callee), Some(callee_scope)) = (call.attribute("symbol_id"), call.attribute("scope_id")) else {
            return;
        };
        let statement = call.attribute("statement_id").unwrap_or("?");
        let formals = tables.routines.get(&(callee_scope, callee));
        for argument in call.children().filter(|c| c.has_tag_name((XAIF_NAMESPACE, "Argument"))) {
            let Some(position) = argument.attribute("position").and_then(|p| p.trim().parse::<u64>().ok()) else {
                continue;
            };
            let actual = actual(argument, tables);
            if !actual.real() {
                continue;
            }
            let Some(formals) = formals else {
                if actual.active() && !tables.wrappers.contains(&(callee_scope, callee)) {
                    self.error(
                        argument,
                        format!(
                            "argument {position} of the call to external '{callee}' (statement {statement}): \
                             actual {} is active, external routines (no body in the document) take passive reals",
                            actual.describe()
                        ),
                    );
                }
                continue;
            };
            let Some(&(_, (formal_scope, formal))) = formals.iter().find(|(p, _)| *p == position) else { continue };
            let Some(formal_facts) = tables.symbols.get(&(formal_scope, formal)) else { continue };
            if !formal_facts.real || formal_facts.active == actual.active() {
                continue;
            }
            self.error(
                argument,
                format!(
                    "argument {position} of the call to '{callee}' (statement {statement}): actual {} is {}, \
                     formal '{formal}' is {}",
                    actual.describe(),
                    activity_word(actual.active()),
                    activity_word(formal_facts.active)
                ),
            );
        }
    }
}

fn activity_tables<'a>(root: Node<'a, '_>) -> ActivityTables<'a> {
    let mut symbols = FxHashMap::default();
    let mut routines = FxHashMap::default();
    let mut wrappers = FxHashSet::default();
    for section in root.children().filter(|c| c.is_element()) {
        match section.tag_name().name() {
            "ScopeHierarchy" => {
                for scope in section.children().filter(|c| c.has_tag_name((XAIF_NAMESPACE, "Scope"))) {
                    let scope_id = scope.attribute("vertex_id").unwrap_or("1");
                    for symbol in scope.descendants().filter(|c| c.has_tag_name((XAIF_NAMESPACE, "Symbol"))) {
                        let Some(name) = symbol.attribute("symbol_id") else { continue };
                        if symbol.attribute("kind") == Some("subroutine")
                            && symbol.attribute("temp").and_then(boolean) == Some(true)
                        {
                            wrappers.insert((scope_id, name));
                        }
                        // Schema defaults: type real, active true.
                        let Some(active) = boolean(symbol.attribute("active").unwrap_or("true")) else { continue };
                        let real = matches!(symbol.attribute("type").unwrap_or("real"), "real" | "complex");
                        symbols.entry((scope_id, name)).or_insert(SymbolFacts { active, real });
                    }
                }
            }
            "ControlFlowGraph" | "ReplacementList" => {
                let (Some(name), Some(scope)) = (section.attribute("symbol_id"), section.attribute("scope_id")) else {
                    continue;
                };
                let formals: Vec<Formal> = section
                    .children()
                    .filter(|c| c.has_tag_name((XAIF_NAMESPACE, "ArgumentList")))
                    .flat_map(|list| list.children())
                    .filter(|c| c.has_tag_name((XAIF_NAMESPACE, "ArgumentSymbolReference")))
                    .filter_map(|formal| {
                        let position = formal.attribute("position")?.trim().parse::<u64>().ok()?;
                        Some((position, (formal.attribute("scope_id")?, formal.attribute("symbol_id")?)))
                    })
                    .collect();
                routines.entry((scope, name)).or_insert(formals);
            }
            _ => {}
        }
    }
    ActivityTables { symbols, routines, wrappers }
}

/// The actual argument an `Argument` element holds.
fn actual<'a>(argument: Node<'a, '_>, tables: &ActivityTables<'a>) -> Actual<'a> {
    let Some(content) = argument.children().find(|c| c.is_element()) else { return Actual::Unknown };
    match content.tag_name().name() {
        "Constant" => Actual::Constant {
            value: content.attribute("value").unwrap_or(""),
            real: matches!(content.attribute("type"), Some("real" | "double")),
        },
        "VariableReference" => match base_symbol(content) {
            Some(key) => match tables.symbols.get(&key) {
                Some(facts) => Actual::Variable { symbol: key.1, facts: *facts },
                None => Actual::Unknown,
            },
            None => Actual::Unknown,
        },
        _ => Actual::Unknown,
    }
}

/// `(scope_id, symbol_id)` of the symbol a variable reference graph starts from: its
/// `SymbolReference` vertex that no `VariableReferenceEdge` enters.
fn base_symbol<'a>(reference: Node<'a, '_>) -> Option<(&'a str, &'a str)> {
    let element = |c: &Node, name: &str| c.has_tag_name((XAIF_NAMESPACE, name));
    let entered: Vec<&str> = reference
        .children()
        .filter(|c| element(c, "VariableReferenceEdge"))
        .filter_map(|edge| edge.attribute("target"))
        .collect();
    let base = reference
        .children()
        .filter(|c| element(c, "SymbolReference"))
        .find(|c| !entered.contains(&c.attribute("vertex_id").unwrap_or("1")))?;
    Some((base.attribute("scope_id")?, base.attribute("symbol_id")?))
}
