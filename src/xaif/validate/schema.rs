//! The rules of the XAIF schemas, as tables: each content type's attributes and their value
//! types, which children it takes, and which of them it requires.

/// The value type of an attribute.
#[derive(Copy, Clone)]
pub(super) enum Value {
    Text,
    Boolean,
    Integer,
    NonNegative,
    Positive,
    /// An argument position, kept in 32 bits.
    Position,
    /// A count, kept in 32 bits.
    Count,
    OneOf(&'static [&'static str]),
}

pub(super) const KINDS: &[&str] = &["subroutine", "variable", "pointer"];
pub(super) const TYPES: &[&str] = &["void", "integer", "real", "complex", "bool", "char", "string", "opaque"];
pub(super) const SHAPES: &[&str] =
    &["void", "scalar", "vector", "matrix", "three_tensor", "four_tensor", "five_tensor", "six_tensor", "seven_tensor"];
pub(super) const CONSTANT_TYPES: &[&str] = &["real", "double", "integer", "bool", "char", "string"];
pub(super) const ACTIVE_USE: &[&str] = &["undefined", "true", "false", "1", "0"];
pub(super) const INTENTS: &[&str] = &["in", "out", "inout"];
pub(super) const REVERSALS: &[&str] = &["explicit", "anonymous"];
pub(super) const BOOLEAN_OPERATIONS: &[&str] = &[
    "less_than",
    "less_or_equal",
    "greater_than",
    "greater_or_equal",
    "equal",
    "not_equal",
    "and",
    "or",
    "not",
    "xor",
];

/// How an element's content is checked; several element names share a content type.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum Content {
    CallGraph,
    ScopeHierarchy,
    Scope,
    SymbolTable,
    Symbol,
    DimensionBounds,
    Edge,
    AliasSetMap,
    AliasSet,
    AliasRange,
    StmtIdSetMap,
    StmtIdSet,
    StatementId,
    ControlFlowGraph,
    ReplacementList,
    Replacement,
    ArgumentList,
    ArgumentSymbolReference,
    SideEffectList,
    VariableReference,
    Lhs,
    SymbolReference,
    SymbolReferenceProperty,
    ArrayElementReference,
    IndexTriplet,
    Expression,
    PlainVertex,
    BasicBlock,
    Conditional,
    ForLoop,
    ControlFlowEdge,
    Assignment,
    LoopAssignment,
    Constant,
    Intrinsic,
    BooleanOperation,
    FunctionCall,
    ExpressionEdge,
    SubroutineCall,
    CallArgument,
    Marker,
    InlinableSubroutineCall,
    DerivativePropagator,
    TargetSource,
    Sax,
    Ax,
    PropagatorOperand,
}

/// How many attributes [`super::Validator::check_attributes`] keeps on the stack (more go to the heap).
pub(super) const MOST_ATTRIBUTES: usize = 16;

/// Attributes of each content type: name, value type, required.
pub(super) fn attributes(content: Content) -> &'static [(&'static str, Value, bool)] {
    use Value::*;
    const VERTEX: &[(&str, Value, bool)] = &[("vertex_id", Text, false), ("annotation", Text, false)];
    const VARIABLE_REFERENCE: &[(&str, Value, bool)] = &[
        ("vertex_id", Text, false),
        ("annotation", Text, false),
        ("active", OneOf(ACTIVE_USE), false),
        ("alias", Integer, false),
        ("du_ud", Integer, false),
        ("deriv", Boolean, false),
        ("constant", Boolean, false),
    ];
    match content {
        Content::CallGraph => &[("program_name", Text, false), ("prefix", Text, false)],
        Content::ScopeHierarchy
        | Content::SymbolTable
        | Content::AliasSetMap
        | Content::StmtIdSetMap
        | Content::ArgumentList
        | Content::SideEffectList
        | Content::IndexTriplet
        | Content::Expression
        | Content::DerivativePropagator
        | Content::TargetSource
        | Content::Sax
        | Content::Ax => &[],
        Content::Scope | Content::PlainVertex | Content::ArrayElementReference => VERTEX,
        Content::Symbol => &[
            ("symbol_id", Text, true),
            ("kind", OneOf(KINDS), false),
            ("type", OneOf(TYPES), false),
            ("feType", Text, false),
            ("shape", OneOf(SHAPES), false),
            ("annotation", Text, false),
            ("active", Boolean, false),
            ("temp", Boolean, false),
            ("pointer", Boolean, false),
        ],
        Content::DimensionBounds => &[("lower", Integer, true), ("upper", Integer, true)],
        Content::Edge => {
            &[("edge_id", Text, true), ("source", Text, true), ("target", Text, true), ("annotation", Text, false)]
        }
        Content::AliasSet | Content::StmtIdSet => &[("key", NonNegative, true)],
        Content::AliasRange => &[
            ("from_virtual_address", Positive, true),
            ("to_virtual_address", Positive, true),
            ("partial", Boolean, false),
        ],
        Content::StatementId => &[("idRef", Text, false)],
        Content::ControlFlowGraph => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("symbol_id", Text, true),
            ("scope_id", Positive, true),
            ("controlflowgraph_scope_id", Positive, true),
            ("active", Boolean, false),
            ("structured", Boolean, false),
        ],
        Content::ReplacementList => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("template_name", Text, true),
            ("symbol_id", Text, true),
            ("scope_id", Positive, true),
            ("controlflowgraph_scope_id", Positive, true),
        ],
        Content::Replacement => &[("placeholder", Text, true), ("structured", Boolean, false)],
        Content::ArgumentSymbolReference => &[
            ("position", Position, true),
            ("symbol_id", Text, true),
            ("scope_id", Positive, true),
            ("annotation", Text, false),
            ("deriv", Boolean, false),
            ("intent", OneOf(INTENTS), false),
        ],
        Content::VariableReference | Content::PropagatorOperand => VARIABLE_REFERENCE,
        Content::Lhs => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("active", OneOf(ACTIVE_USE), false),
            ("alias", Integer, false),
            ("du_ud", Integer, false),
            ("deriv", Boolean, false),
            ("constant", Boolean, false),
            ("live", Boolean, false),
        ],
        Content::SymbolReference => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("symbol_id", Text, true),
            ("scope_id", Positive, true),
        ],
        Content::SymbolReferenceProperty => &[("name", Text, true), ("value", Text, true)],
        Content::BasicBlock => &[("vertex_id", Text, false), ("annotation", Text, false), ("scope_id", Positive, true)],
        Content::Conditional => {
            &[("vertex_id", Text, false), ("annotation", Text, false), ("lineNumber", NonNegative, false)]
        }
        Content::ForLoop => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("reversal", OneOf(REVERSALS), false),
            ("lineNumber", NonNegative, false),
        ],
        Content::ControlFlowEdge => &[
            ("edge_id", Text, true),
            ("source", Text, true),
            ("target", Text, true),
            ("annotation", Text, false),
            ("has_condition_value", Boolean, false),
            ("condition_value", Integer, false),
        ],
        Content::Assignment => {
            &[("statement_id", Text, true), ("do_chain", Integer, false), ("lineNumber", NonNegative, false)]
        }
        Content::LoopAssignment => &[("statement_id", Text, true), ("do_chain", Integer, false)],
        Content::Constant => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("type", OneOf(CONSTANT_TYPES), true),
            ("feType", Text, false),
            ("value", Text, true),
        ],
        Content::Intrinsic => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("name", Text, true),
            ("type", Text, false),
            ("rType", OneOf(TYPES), false),
            ("rShape", OneOf(SHAPES), false),
        ],
        Content::BooleanOperation => {
            &[("vertex_id", Text, false), ("annotation", Text, false), ("name", OneOf(BOOLEAN_OPERATIONS), true)]
        }
        Content::FunctionCall => &[
            ("vertex_id", Text, false),
            ("annotation", Text, false),
            ("symbol_id", Text, false),
            ("scope_id", Positive, false),
        ],
        Content::ExpressionEdge => &[
            ("edge_id", Text, true),
            ("source", Text, true),
            ("target", Text, true),
            ("position", Integer, true),
            ("annotation", Text, false),
        ],
        Content::SubroutineCall => &[
            ("statement_id", Text, true),
            ("symbol_id", Text, false),
            ("scope_id", Positive, false),
            ("active", OneOf(ACTIVE_USE), false),
            ("lineNumber", NonNegative, false),
            // Required by the schema; older front ends omit it (checked separately).
            ("formalArgCount", Count, false),
        ],
        Content::CallArgument => &[("position", Position, true), ("annotation", Text, false)],
        Content::Marker => &[("statement_id", Text, true), ("annotation", Text, false)],
        Content::InlinableSubroutineCall => &[("subroutine_name", Text, true), ("statement_id", Text, true)],
    }
}

/// The content type of a child element, or `None` when it may not stand there.
pub(super) fn child_content(parent: Content, child: &str) -> Option<Content> {
    use Content as C;
    let vertex = |c: &str| match c {
        "Entry" | "Exit" | "EndBranch" | "EndLoop" | "Label" | "Goto" => Some(C::PlainVertex),
        "BasicBlock" => Some(C::BasicBlock),
        "If" | "Branch" | "PreLoop" | "PostLoop" => Some(C::Conditional),
        "ForLoop" => Some(C::ForLoop),
        "ControlFlowEdge" => Some(C::ControlFlowEdge),
        _ => None,
    };
    let reference_vertex = |c: &str| match c {
        "SymbolReference" => Some(C::SymbolReference),
        "ArrayElementReference" => Some(C::ArrayElementReference),
        "VariableReferenceEdge" => Some(C::Edge),
        _ => None,
    };
    match parent {
        C::CallGraph => match child {
            "ScopeHierarchy" => Some(C::ScopeHierarchy),
            "AliasSetMap" => Some(C::AliasSetMap),
            "DUUDSetMap" | "DOSetMap" => Some(C::StmtIdSetMap),
            "ControlFlowGraph" => Some(C::ControlFlowGraph),
            "ReplacementList" => Some(C::ReplacementList),
            "CallGraphEdge" => Some(C::Edge),
            _ => None,
        },
        C::ScopeHierarchy => match child {
            "Scope" => Some(C::Scope),
            "ScopeEdge" => Some(C::Edge),
            _ => None,
        },
        C::Scope => (child == "SymbolTable").then_some(C::SymbolTable),
        C::SymbolTable => (child == "Symbol").then_some(C::Symbol),
        C::Symbol => (child == "DimensionBounds").then_some(C::DimensionBounds),
        C::AliasSetMap => (child == "AliasSet").then_some(C::AliasSet),
        C::AliasSet => (child == "AliasRange").then_some(C::AliasRange),
        C::StmtIdSetMap => (child == "StmtIdSet").then_some(C::StmtIdSet),
        C::StmtIdSet => (child == "StatementId").then_some(C::StatementId),
        C::ControlFlowGraph => match child {
            "ArgumentList" => Some(C::ArgumentList),
            "ModLocal" | "Mod" | "ReadLocal" | "Read" | "OnEntry" => Some(C::SideEffectList),
            other => vertex(other),
        },
        C::ReplacementList => match child {
            "ArgumentList" => Some(C::ArgumentList),
            "Replacement" => Some(C::Replacement),
            _ => None,
        },
        C::Replacement => vertex(child),
        C::ArgumentList => (child == "ArgumentSymbolReference").then_some(C::ArgumentSymbolReference),
        C::SideEffectList => (child == "SideEffectReference").then_some(C::VariableReference),
        C::VariableReference | C::Lhs | C::PropagatorOperand => reference_vertex(child),
        C::SymbolReference => (child == "SymbolReferenceProperty").then_some(C::SymbolReferenceProperty),
        C::ArrayElementReference => (child == "IndexTriplet").then_some(C::IndexTriplet),
        C::IndexTriplet => matches!(child, "Index" | "Bound" | "Stride").then_some(C::Expression),
        C::Expression => match child {
            "VariableReference" => Some(C::VariableReference),
            "Constant" => Some(C::Constant),
            "Intrinsic" => Some(C::Intrinsic),
            "BooleanOperation" => Some(C::BooleanOperation),
            "FunctionCall" => Some(C::FunctionCall),
            "ExpressionEdge" => Some(C::ExpressionEdge),
            _ => None,
        },
        C::BasicBlock => match child {
            "Assignment" => Some(C::Assignment),
            "SubroutineCall" => Some(C::SubroutineCall),
            "Marker" => Some(C::Marker),
            "DerivativePropagator" => Some(C::DerivativePropagator),
            "InlinableSubroutineCall" => Some(C::InlinableSubroutineCall),
            _ => None,
        },
        C::Conditional => (child == "Condition").then_some(C::Expression),
        C::ForLoop => match child {
            "Initialization" | "Update" => Some(C::LoopAssignment),
            "Condition" => Some(C::Expression),
            _ => None,
        },
        C::Assignment | C::LoopAssignment => match child {
            "AssignmentLHS" => Some(C::Lhs),
            "AssignmentRHS" => Some(C::Expression),
            _ => None,
        },
        C::FunctionCall => (child == "Argument").then_some(C::VariableReference),
        C::SubroutineCall | C::InlinableSubroutineCall => (child == "Argument").then_some(C::CallArgument),
        C::CallArgument => match child {
            "VariableReference" => Some(C::VariableReference),
            "Constant" => Some(C::Constant),
            _ => None,
        },
        C::DerivativePropagator => match child {
            "SetDeriv" | "SetNegDeriv" | "IncDeriv" | "DecDeriv" => Some(C::TargetSource),
            "Sax" | "Saxpy" => Some(C::Sax),
            "ZeroDeriv" => Some(C::PropagatorOperand),
            _ => None,
        },
        C::TargetSource => matches!(child, "Tgt" | "Src").then_some(C::PropagatorOperand),
        C::Sax => match child {
            "AX" => Some(C::Ax),
            "Y" => Some(C::PropagatorOperand),
            _ => None,
        },
        C::Ax => match child {
            "A" => Some(C::Expression),
            "X" => Some(C::PropagatorOperand),
            _ => None,
        },
        C::DimensionBounds
        | C::Edge
        | C::AliasRange
        | C::StatementId
        | C::ArgumentSymbolReference
        | C::SymbolReferenceProperty
        | C::PlainVertex
        | C::ControlFlowEdge
        | C::Constant
        | C::Intrinsic
        | C::BooleanOperation
        | C::ExpressionEdge
        | C::Marker => None,
    }
}

/// Children an element must have, in the order the schema lists them.
pub(super) fn required_children(content: Content) -> &'static [&'static str] {
    match content {
        Content::CallGraph => &["ScopeHierarchy", "AliasSetMap", "DUUDSetMap", "DOSetMap"],
        Content::Scope => &["SymbolTable"],
        Content::AliasSetMap => &["AliasSet"],
        Content::StmtIdSetMap => &["StmtIdSet"],
        Content::VariableReference | Content::Lhs | Content::PropagatorOperand => &["SymbolReference"],
        Content::ArrayElementReference => &["IndexTriplet"],
        Content::Assignment | Content::LoopAssignment => &["AssignmentLHS", "AssignmentRHS"],
        Content::TargetSource => &["Tgt", "Src"],
        Content::Sax => &["AX", "Y"],
        Content::Ax => &["A", "X"],
        _ => &[],
    }
}

/// What a value should have been, when it is not of its type.
pub(super) fn bad_value(value: Value, text: &str) -> Option<String> {
    let ok = match value {
        Value::Text => true,
        Value::Boolean => matches!(text, "true" | "false" | "1" | "0"),
        Value::Integer => text.trim().parse::<i64>().is_ok(),
        Value::NonNegative => text.trim().parse::<u64>().is_ok(),
        Value::Positive => text.trim().parse::<u64>().is_ok_and(|n| n > 0),
        Value::Position => text.trim().parse::<u32>().is_ok_and(|n| n > 0),
        Value::Count => text.trim().parse::<u32>().is_ok(),
        Value::OneOf(allowed) => allowed.contains(&text),
    };
    if ok {
        return None;
    }
    Some(match value {
        Value::Text => unreachable!("text is always valid"),
        Value::Boolean => "a boolean (true, false, 1, 0)".into(),
        Value::Integer => "an integer".into(),
        Value::NonNegative => "a non-negative integer".into(),
        Value::Positive => "a positive integer".into(),
        // Numbers too large for the IR's 32 bits are told apart from those of the wrong sign.
        Value::Position if text.trim().parse::<u64>().is_ok_and(|n| n > 0) => "a positive integer below 2^32".into(),
        Value::Position => "a positive integer".into(),
        Value::Count if text.trim().parse::<u64>().is_ok() => "a non-negative integer below 2^32".into(),
        Value::Count => "a non-negative integer".into(),
        Value::OneOf(allowed) => format!("one of {}", allowed.join(", ")),
    })
}
