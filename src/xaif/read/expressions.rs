//! Expressions and variable references, with the checks that run as each expression closes.

use std::borrow::Cow;

use super::{Elem, ExpressionBuffers, IdIndex, Lower, PendingEdge, Result};
use crate::ir::*;
use crate::xaif::check::{ExpressionSite, Extent};

impl<'a> Lower<'a> {
    // ---------------------------------------------------------------- expressions

    /// Any element of `ExpressionType` content: `AssignmentRHS`, `Condition`, `Index`, `A`, …
    pub(super) fn expression(&mut self, elem: Elem<'a>) -> Result<Expression> {
        self.expression_with_depth(elem).map(|(expression, _)| expression)
    }

    /// Of an expression, only its variable references (without their array indices, each
    /// a vertex, no edges), the rest skipped ([`super::read_streaming_for_summaries`]).
    pub(super) fn references_only(&mut self, elem: Elem<'a>) -> Result<Expression> {
        let [] = self.attrs(&elem, [])?;
        let mut expression = Expression::default();
        while let Some(child) = self.children(&elem)? {
            if child.name == "VariableReference" {
                let (reference, _, _) = self.reference_with(child, false)?;
                expression.vertices.alloc(ExprVertex::Variable(reference));
            } else {
                self.skip_content(&child)?;
            }
        }
        Ok(expression)
    }

    /// An expression and how far it reaches (see [`crate::xaif::check::MAX_EXPRESSION_DEPTH`]).
    fn expression_with_depth(&mut self, elem: Elem<'a>) -> Result<(Expression, Extent)> {
        let [] = self.attrs(&elem, [])?;
        let mut buffers = std::mem::take(&mut self.expression_buffers);
        let result = self.expression_into(elem, &mut buffers);
        self.expression_buffers = buffers;
        result
    }

    fn expression_into(&mut self, elem: Elem<'a>, buffers: &mut ExpressionBuffers<'a>) -> Result<(Expression, Extent)> {
        let mut expression = Expression::default();
        let ExpressionBuffers { pending, sites, weights } = buffers;
        pending.clear();
        sites.clear();
        weights.clear();
        let mut vertex_ids = IdIndex::default();
        while let Some(child) = self.children(&elem)? {
            let (offset, element) = (child.offset, child.name);
            let mut weight = Extent::vertex(Extent::default());
            let vertex = match child.name {
                "VariableReference" => {
                    let (reference, _, nested) = self.reference(child)?;
                    weight = Extent::vertex(nested);
                    ExprVertex::Variable(reference)
                }
                "Constant" => ExprVertex::Constant(self.constant(child)?),
                "Intrinsic" => {
                    let [id, annotation, name, ty, r_type, r_shape] =
                        self.attrs(&child, ["vertex_id", "annotation", "name", "type", "rType", "rShape"])?;
                    let intrinsic = Intrinsic {
                        id: self.vertex_id(&id),
                        annotation: self.intern(&annotation),
                        name: self.intern_required(&child, "name", &name)?,
                        call_type: match &ty {
                            Some(t) => self.cg.names.intern(t),
                            None => self.cg.names.intern("inlinable"),
                        },
                        result_type: self.symbol_type(&child, "rType", &r_type)?,
                        result_shape: self.shape(&child, "rShape", &r_shape)?,
                    };
                    self.leaf(&child)?;
                    ExprVertex::Intrinsic(intrinsic)
                }
                "BooleanOperation" => {
                    let [id, annotation, name] = self.attrs(&child, ["vertex_id", "annotation", "name"])?;
                    self.required(&child, "name", &name)?;
                    let op = self.enumerated(
                        &child,
                        "name",
                        &name,
                        BooleanOp::Equal,
                        &[
                            ("less_than", BooleanOp::LessThan),
                            ("less_or_equal", BooleanOp::LessOrEqual),
                            ("greater_than", BooleanOp::GreaterThan),
                            ("greater_or_equal", BooleanOp::GreaterOrEqual),
                            ("equal", BooleanOp::Equal),
                            ("not_equal", BooleanOp::NotEqual),
                            ("and", BooleanOp::And),
                            ("or", BooleanOp::Or),
                            ("not", BooleanOp::Not),
                            ("xor", BooleanOp::Xor),
                        ],
                    )?;
                    let vertex = BooleanOperation { id: self.vertex_id(&id), annotation: self.intern(&annotation), op };
                    self.leaf(&child)?;
                    ExprVertex::BooleanOperation(vertex)
                }
                "FunctionCall" => {
                    let [id, annotation, symbol_id, scope_id] =
                        self.attrs(&child, ["vertex_id", "annotation", "symbol_id", "scope_id"])?;
                    let symbol = if symbol_id.is_some() || scope_id.is_some() {
                        Some(self.symbol_ref(&child, &symbol_id, &scope_id)?)
                    } else {
                        None
                    };
                    let id = self.vertex_id(&id);
                    let annotation = self.intern(&annotation);
                    let mut arguments = Vec::new();
                    let mut nested = Extent::default();
                    while let Some(arg) = self.children(&child)? {
                        if arg.name != "Argument" {
                            return Err(self.unexpected(&arg, "FunctionCall"));
                        }
                        let (reference, _, reach) = self.reference(arg)?;
                        nested = nested.beside(reach);
                        arguments.push(reference);
                    }
                    weight = Extent::vertex(nested);
                    ExprVertex::FunctionCall(FunctionCall { id, annotation, symbol, arguments })
                }
                "ExpressionEdge" => {
                    let [id, annotation, source, target, position] =
                        self.attrs(&child, ["edge_id", "annotation", "source", "target", "position"])?;
                    let id = self.intern_required(&child, "edge_id", &id)?;
                    let annotation = self.intern(&annotation);
                    let source = self.intern_required(&child, "source", &source)?;
                    let target = self.intern_required(&child, "target", &target)?;
                    let position = self
                        .required(&child, "position", &position)
                        .and_then(|v| self.integer(&child, "position", v))?;
                    self.leaf(&child)?;
                    pending.push((
                        id,
                        annotation,
                        position,
                        PendingEdge { offset: child.offset, element: child.name, source, target },
                    ));
                    continue;
                }
                _ => return Err(self.unexpected(&child, elem.name)),
            };
            let id = vertex.id();
            let vertex_id = |i: usize| expression.vertices[expr_vertex(i)].id();
            if vertex_ids.find(id, expression.vertices.len(), vertex_id).is_some() {
                return Err(self.error(
                    offset,
                    element,
                    format!("duplicate vertex_id '{}' in {}", self.cg.names.get(id), elem.name),
                ));
            }
            expression.vertices.alloc(vertex);
            vertex_ids.added(expression.vertices.len(), |i| expression.vertices[expr_vertex(i)].id());
            sites.push((offset, element));
            weights.push(weight);
        }
        let mut edge_ids = IdIndex::default();
        let mut edge_offsets = Vec::with_capacity(pending.len());
        for (id, annotation, position, edge) in pending.drain(..) {
            if edge_ids.find(id, expression.edges.len(), |i| expression.edges[i].id).is_some() {
                self.duplicate_edge(edge.offset, edge.element, id, elem.name)?;
            }
            let lookup = |end: Name, which: &str| {
                let found =
                    vertex_ids.find(end, expression.vertices.len(), |i| expression.vertices[expr_vertex(i)].id());
                found.map(expr_vertex).ok_or_else(|| {
                    self.error(
                        edge.offset,
                        edge.element,
                        format!("{which} '{}' names no vertex of this {}", self.cg.names.get(end), elem.name),
                    )
                })
            };
            let source = lookup(edge.source, "source")?;
            let target = lookup(edge.target, "target")?;
            expression.edges.push(ExprEdge { id, annotation, source, target, position });
            edge_ids.added(expression.edges.len(), |i| expression.edges[i].id);
            edge_offsets.push(edge.offset);
        }
        let site = ExpressionSite {
            container: elem.name,
            offset: elem.offset,
            vertices: sites,
            edges: &edge_offsets,
            weights,
        };
        let reach = self.scratch.expression(&expression, &site, &self.cg.names, self.catalogue, &mut self.problems);
        Ok((expression, reach))
    }

    fn vertex_id(&mut self, value: &Option<Cow<'a, str>>) -> Name {
        match value {
            Some(v) => self.cg.names.intern(v),
            None => self.cg.names.intern("1"),
        }
    }

    pub(super) fn constant(&mut self, elem: Elem<'a>) -> Result<Constant> {
        let [id, annotation, ty, fe_type, value] =
            self.attrs(&elem, ["vertex_id", "annotation", "type", "feType", "value"])?;
        if ty.is_none() {
            return Err(self.error(elem.offset, elem.name, "missing required attribute 'type'"));
        }
        let ty = self.enumerated(
            &elem,
            "type",
            &ty,
            ConstantType::Real,
            &[
                ("real", ConstantType::Real),
                ("double", ConstantType::Double),
                ("integer", ConstantType::Integer),
                ("bool", ConstantType::Bool),
                ("char", ConstantType::Char),
                ("string", ConstantType::String),
            ],
        )?;
        let value = self.intern_required(&elem, "value", &value)?;
        let constant = Constant {
            id: self.vertex_id(&id),
            annotation: self.intern(&annotation),
            ty,
            fe_type: self.intern(&fe_type),
            value,
        };
        self.leaf(&elem)?;
        Ok(constant)
    }

    /// Any element of `VariableReferenceType`: `VariableReference`, `AssignmentLHS`,
    /// `SideEffectReference`, `Tgt`, `Src`, `X`, `Y`, `ZeroDeriv`, `Argument` of a function call.
    pub(super) fn variable_reference(&mut self, elem: Elem<'a>) -> Result<VariableReference> {
        self.variable_reference_with_live(elem).map(|(reference, _)| reference)
    }

    /// A variable reference and its `live` attribute (only an `AssignmentLHS` may have one).
    pub(super) fn variable_reference_with_live(&mut self, elem: Elem<'a>) -> Result<(VariableReference, bool)> {
        self.reference(elem).map(|(reference, live, _)| (reference, live))
    }

    /// A variable reference, its `live` attribute, and how far its subscripts reach (nothing
    /// without subscripts).
    fn reference(&mut self, elem: Elem<'a>) -> Result<(VariableReference, bool, Extent)> {
        self.reference_with(elem, true)
    }

    /// [`Lower::reference`]; without `lower_indices`, array elements' indices are skipped (left
    /// empty), for a read that wants only which variables a reference names.
    fn reference_with(&mut self, elem: Elem<'a>, lower_indices: bool) -> Result<(VariableReference, bool, Extent)> {
        let [id, annotation, active, alias, du_ud, deriv, constant, live] =
            self.attrs(&elem, ["vertex_id", "annotation", "active", "alias", "du_ud", "deriv", "constant", "live"])?;
        if live.is_some() && elem.name != "AssignmentLHS" {
            return Err(self.error(elem.offset, elem.name, "attribute 'live' is not allowed here"));
        }
        let live = self.boolean(&elem, "live", &live, true)?;
        let mut reference = VariableReference {
            id: self.vertex_id(&id),
            annotation: self.intern(&annotation),
            active: self.active_use(&elem, &active)?,
            alias: self.set_ref(&elem, &alias, &self.alias_keys)?,
            du_ud: self.set_ref(&elem, &du_ud, &self.duud_keys)?,
            deriv: self.boolean(&elem, "deriv", &deriv, false)?,
            constant: self.boolean(&elem, "constant", &constant, false)?,
            vertices: RefVertices::new(),
            edges: Vec::new(),
        };
        let mut pending = Vec::new();
        let mut vertex_ids = IdIndex::default();
        let mut reach = Extent::default();
        while let Some(child) = self.children(&elem)? {
            let vertex = match child.name {
                "SymbolReference" if pending.is_empty() => {
                    let [id, annotation, symbol_id, scope_id] =
                        self.attrs(&child, ["vertex_id", "annotation", "symbol_id", "scope_id"])?;
                    let symbol = self.symbol_ref(&child, &symbol_id, &scope_id)?;
                    let mut properties = Vec::new();
                    while let Some(property) = self.children(&child)? {
                        if property.name != "SymbolReferenceProperty" {
                            return Err(self.unexpected(&property, "SymbolReference"));
                        }
                        let [name, value] = self.attrs(&property, ["name", "value"])?;
                        let name = self.intern_required(&property, "name", &name)?;
                        let value = self.intern_required(&property, "value", &value)?;
                        self.leaf(&property)?;
                        properties.push((name, value));
                    }
                    (
                        child.offset,
                        VarRefVertex::Symbol(SymbolReference {
                            id: self.vertex_id(&id),
                            annotation: self.intern(&annotation),
                            symbol,
                            properties,
                        }),
                    )
                }
                "ArrayElementReference" if pending.is_empty() => {
                    let [id, annotation] = self.attrs(&child, ["vertex_id", "annotation"])?;
                    let id = self.vertex_id(&id);
                    let annotation = self.intern(&annotation);
                    let mut indices = Vec::new();
                    if !lower_indices {
                        self.skip_content(&child)?;
                    } else {
                        while let Some(triplet) = self.children(&child)? {
                            if triplet.name == "Index" {
                                // Older front ends wrote plain indices without the triplet.
                                self.lenient(triplet.offset, triplet.name, "Index outside an IndexTriplet".into())?;
                                let (index, index_reach) = self.expression_with_depth(triplet)?;
                                reach = reach.beside(index_reach);
                                indices.push(IndexTriplet { index: Some(index), ..IndexTriplet::default() });
                                continue;
                            }
                            if triplet.name != "IndexTriplet" {
                                return Err(self.unexpected(&triplet, "ArrayElementReference"));
                            }
                            let (triplet, triplet_reach) = self.index_triplet(triplet)?;
                            reach = reach.beside(triplet_reach);
                            indices.push(triplet);
                        }
                        if indices.is_empty() {
                            return Err(self.error(child.offset, child.name, "missing required child IndexTriplet"));
                        }
                    }
                    (child.offset, VarRefVertex::ArrayElement(ArrayElementReference { id, annotation, indices }))
                }
                "VariableReferenceEdge" => {
                    let [id, annotation, source, target] =
                        self.attrs(&child, ["edge_id", "annotation", "source", "target"])?;
                    let id = self.intern_required(&child, "edge_id", &id)?;
                    let annotation = self.intern(&annotation);
                    let source = self.intern_required(&child, "source", &source)?;
                    let target = self.intern_required(&child, "target", &target)?;
                    self.leaf(&child)?;
                    pending.push((
                        id,
                        annotation,
                        PendingEdge { offset: child.offset, element: child.name, source, target },
                    ));
                    continue;
                }
                _ => return Err(self.unexpected(&child, elem.name)),
            };
            let (offset, vertex) = vertex;
            let (id, element) = match &vertex {
                VarRefVertex::Symbol(s) => (s.id, "SymbolReference"),
                VarRefVertex::ArrayElement(a) => (a.id, "ArrayElementReference"),
            };
            let vertices = &reference.vertices;
            if vertex_ids.find(id, vertices.len(), |i| var_ref_vertex_id(&vertices[i])).is_some() {
                return Err(self.error(
                    offset,
                    element,
                    format!("duplicate vertex_id '{}' in {}", self.cg.names.get(id), elem.name),
                ));
            }
            reference.vertices.push(vertex);
            let vertices = &reference.vertices;
            vertex_ids.added(vertices.len(), |i| var_ref_vertex_id(&vertices[i]));
        }
        if reference.vertices.is_empty() {
            return Err(self.error(elem.offset, elem.name, "missing required child SymbolReference"));
        }
        let mut edge_ids = IdIndex::default();
        for (id, annotation, edge) in pending {
            if edge_ids.find(id, reference.edges.len(), |i| reference.edges[i].id).is_some() {
                self.duplicate_edge(edge.offset, edge.element, id, elem.name)?;
            }
            let lookup = |end: Name, which: &str| {
                let vertices = &reference.vertices;
                let index = vertex_ids.find(end, vertices.len(), |i| var_ref_vertex_id(&vertices[i]));
                index.map(|i| i as u32).ok_or_else(|| {
                    self.error(
                        edge.offset,
                        edge.element,
                        format!("{which} '{}' names no vertex of this {}", self.cg.names.get(end), elem.name),
                    )
                })
            };
            let source = lookup(edge.source, "source")?;
            let target = lookup(edge.target, "target")?;
            reference.edges.push(VarRefEdge { id, annotation, source, target });
            edge_ids.added(reference.edges.len(), |i| reference.edges[i].id);
        }
        Ok((reference, live, reach))
    }

    /// An index triplet and how far its parts reach.
    fn index_triplet(&mut self, elem: Elem<'a>) -> Result<(IndexTriplet, Extent)> {
        let [] = self.attrs(&elem, [])?;
        let mut triplet = IndexTriplet::default();
        let mut reach = Extent::default();
        let mut stage = 0;
        while let Some(child) = self.children(&elem)? {
            let next = match child.name {
                "Index" => 1,
                "Bound" => 2,
                "Stride" => 3,
                _ => 0,
            };
            if next <= stage {
                return Err(self.unexpected(&child, "IndexTriplet"));
            }
            stage = next;
            let (expression, part) = self.expression_with_depth(child)?;
            reach = reach.beside(part);
            let expression = Some(expression);
            match next {
                1 => triplet.index = expression,
                2 => triplet.bound = expression,
                _ => triplet.stride = expression,
            }
        }
        Ok((triplet, reach))
    }
}

fn expr_vertex(index: usize) -> ExprVertexId {
    ExprVertexId::from_raw(la_arena::RawIdx::from(index as u32))
}

/// The XML id of a variable reference vertex.
fn var_ref_vertex_id(vertex: &VarRefVertex) -> Name {
    match vertex {
        VarRefVertex::Symbol(s) => s.id,
        VarRefVertex::ArrayElement(a) => a.id,
    }
}
